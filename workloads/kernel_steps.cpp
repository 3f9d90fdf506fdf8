// The kernel description of kernel_steps.hpp: a GPU's share of the work, GEMM FLOPs and bytes per pass, and the
// element-wise traffic rules (Megatron-LM's kernels, as kernels.cpp says).
#include "workloads/kernel_steps.hpp"

#include <algorithm>

#include "topology/error.hpp"

namespace dtsim::workloads::detail {
namespace {

// FLOPs of the forward GEMM: 2 per multiply-add.
double gemm_flops(const GemmShape& g) { return 2.0 * g.m * g.n * g.k * g.batch; }

// Forward: read A (m x k) and B (k x n), write C (m x n), `batch` times (a grouped GEMM's batch: one weight
// matrix per expert).
double gemm_forward_bytes(const GemmShape& g, bool weighted, const Dims& d) {
  const double activations = (g.m * g.k + g.m * g.n) * g.batch * d.e;
  return activations + g.k * g.n * g.batch * (weighted ? d.we : d.e);
}

// Backward: two GEMMs. Data gradient dA = dC B^T reads dC and B, writes dA; weight gradient dB = A^T dC reads A
// and dC and accumulates into dB in the gradient dtype (read and write). Without weights both are activation
// GEMMs of the forward's size.
double gemm_backward_bytes(const GemmShape& g, bool weighted, const Dims& d) {
  if (!weighted) return 2.0 * gemm_forward_bytes(g, false, d);
  const double activations = 2.0 * (g.m * g.n + g.m * g.k) * g.batch * d.e;
  return activations + g.k * g.n * g.batch * (d.we + 2.0 * d.ge);
}

// The data-gradient GEMM's shape: output m x k, inner dimension n.
GemmShape backward_shape(const GemmShape& g) { return {g.m, g.k, g.n, g.batch}; }
// The weight-gradient GEMM's: output k x n, inner dimension m (the tokens).
GemmShape weight_shape(const GemmShape& g) { return {g.k, g.n, g.m, g.batch}; }

}  // namespace

Dims dims_of(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch) {
  DTSIM_ASSERT(s.tp >= 1, "tensor-parallel size must be at least 1");
  DTSIM_ASSERT(micro_batch >= 1, "micro-batch must hold at least one sequence");
  const double tp = s.tp;
  Dims d;
  d.b = micro_batch;
  d.s = m.seq_length;
  d.cp = s.cp;
  d.tp = tp;
  d.h = m.hidden;
  d.tokens = d.b * d.s / d.cp;
  d.ew_tokens = s.sequence_parallel ? d.tokens / tp : d.tokens;
  d.heads = m.heads / tp;
  d.qk_head = m.head_dim() + m.rope_head_dim;
  d.v_head = m.mla() ? m.v_head_dim : m.head_dim();
  d.kv_heads = (m.mla() ? m.heads : m.kv_heads) / tp;
  const double projection = static_cast<double>(m.value_dim()) * m.hidden + (m.bias ? m.hidden : 0.0);
  d.qkv_out = m.mla() ? (attention_parameters(m) - projection) / m.hidden / tp
                      : (static_cast<double>(m.q_dim()) + 2.0 * m.kv_dim()) / tp;
  d.mla = m.mla();
  if (d.mla) {
    d.q_lora = m.q_lora_rank;
    d.q_up = m.q_dim() / tp;
    d.kv_lora = m.kv_lora_rank;
    d.kv_up = static_cast<double>(m.heads) * (m.head_dim() + m.v_head_dim) / tp;
  }
  d.ffn = m.ffn_hidden / tp;
  d.swiglu = m.activation == Activation::Swiglu;
  d.up_out = d.swiglu ? 2.0 * d.ffn : d.ffn;
  d.vocab = m.logits_width() / tp;
  d.e = activation_element_bytes(t.precision);   // 8- and 4-bit GEMMs keep 16-bit activations (the memory plan's)
  d.we = bytes_per_element(t.weight_dtype);
  d.ge = bytes_per_element(t.grad_dtype);
  d.fp32 = bytes_per_element(Precision::Fp32);
  d.learned_positions = m.positions == Positions::Learned;
  d.flash = fused(t.attention);
  d.flash2 = t.attention == AttentionKernel::Flash2;
  d.causal = m.causal;
  d.fp8 = t.fp8 != Fp8::None;
  d.frozen = t.lora.on();
  d.lora_rank = t.lora.rank;
  d.lora_targets = t.lora.on() ? t.lora.targets : 0U;
  d.low = low_gemm_precision(t.fp8);
  d.cast_out = 2.0 * bytes_per_element(d.low);
  d.fused_loss = t.cross_entropy_fusion;
  d.te_loss = te_loss(t);
  d.hidden_dropout = m.hidden_dropout > 0.0;
  d.attention_dropout = m.attention_dropout > 0.0;
  if (m.moe()) {
    d.experts = m.experts;
    d.top_k = m.experts_per_token;
    d.local_experts = static_cast<double>(m.experts) / s.ep;
    d.routed = d.ew_tokens;
    d.expert_rows = d.routed * d.top_k * s.etp;
    d.expert_ffn = static_cast<double>(m.expert_width()) / s.etp;
    d.expert_up = d.swiglu ? 2.0 * d.expert_ffn : d.expert_ffn;
    d.shared_ffn = static_cast<double>(m.shared_experts) * m.expert_width() / tp;
    d.imbalance = s.ep > 1 ? m.expert_imbalance : 1.0;   // one expert-parallel rank has no busier peer
  }
  return d;
}

Step gemm_step(KernelClass kind, GemmShape g, bool weighted) { return {kind, g, weighted, {}, {}, 0, false, 1, 1, 0, false}; }
Step elementwise_step(KernelClass kind, Traffic t) { return {kind, std::nullopt, true, t, {}, 0, false, 1, 1, 0, false}; }

Kernel kernel_of(const Step& step, Pass pass, const Dims& d) {
  Kernel k;
  k.kind = step.kind;
  k.pass = pass;
  k.launches = step.launches;
  k.load = step.load;
  const bool backward = pass == Pass::Backward;
  if (!step.gemm) {
    k.bytes = Bytes(backward ? step.traffic.backward : step.traffic.forward);
    // A cast reads e and writes cast_out per element, of which one low-precision element is the transpose when
    // the recipe scales per tensor (a block-scaled recipe's second copy has scales of its own: always written).
    if (step.kind == KernelClass::Fp8Cast && d.low == Precision::Fp8)
      k.transposed = k.bytes * (bytes_per_element(d.low) / (d.e + d.cast_out));
    k.attention = step.attention;
    k.flops = FlopCount(step.attention_flops * (backward ? 2.0 : 1.0));
    return k;
  }
  const GemmShape& g = *step.gemm;
  // A frozen weight's backward is its data gradient alone: the forward's FLOPs, reading dC and B, writing dA.
  const bool weight_grad = step.weighted && !step.frozen;
  k.flops = FlopCount(gemm_flops(g) * (backward && (weight_grad || !step.weighted) ? 2.0 : 1.0));
  k.bytes = Bytes(!backward      ? gemm_forward_bytes(g, step.weighted, d)
                  : step.frozen ? gemm_forward_bytes(g, true, d)
                                : gemm_backward_bytes(g, step.weighted, d));
  k.gemm = backward ? backward_shape(g) : g;
  if (backward && weight_grad) k.weight_gemm = weight_shape(g);
  if (step.fp8) k.precision = d.low;
  return k;
}

std::vector<Kernel> materialise(const std::vector<Step>& steps, Pass pass, const Dims& d) {
  std::vector<Kernel> out;
  out.reserve(steps.size());
  for (const Step& step : steps) out.push_back(kernel_of(step, pass, d));
  if (pass != Pass::Backward) return out;
  std::ranges::reverse(out);
  // A backward cast quantises the gradient its GEMM then reads: it runs first.
  for (std::size_t i = 0; i + 1 < out.size(); ++i)
    if (out[i + 1].kind == KernelClass::Fp8Cast) std::swap(out[i], out[i + 1]);
  return out;
}

// Norm: forward reads x, writes y (mean and rstd per row are negligible); backward reads x and dy, writes dx.
Traffic norm_traffic(double n, double e) { return {2.0 * n * e, 3.0 * n * e}; }
// Dropout: forward reads x, writes y and a 1-byte mask; backward reads dy and the mask, writes dx.
Traffic dropout_traffic(double n, double e) { return {n * (2.0 * e + 1.0), n * (2.0 * e + 1.0)}; }
// Residual add, fused into the preceding bias-dropout kernel (bias_dropout_add): forward it only adds the read
// of the residual stream; backward the two branches' gradients join (read two, write one). Without dropout the
// add is the kernel: it reads the branch and the residual and writes their sum (the dropout's backward, the
// identity, runs nothing).
Traffic residual_traffic(double n, double e, bool after_dropout) {
  return {(after_dropout ? 1.0 : 3.0) * n * e, 3.0 * n * e};
}
// Softmax (fused scale + mask + softmax): forward reads and writes the scores; backward reads y and dy.
Traffic softmax_traffic(double n, double e) { return {2.0 * n * e, 3.0 * n * e}; }
// Activation on the MLP's ffn/t columns: gelu (fused with its bias) reads x, writes y; backward reads x and dy,
// writes dx. swiglu reads gate and up, writes silu(gate) * up; backward reads gate, up, dy, writes both grads.
Traffic activation_traffic(double n, double e, bool swiglu) {
  if (swiglu) return {3.0 * n * e, 5.0 * n * e};
  return {2.0 * n * e, 3.0 * n * e};
}

}  // namespace dtsim::workloads::detail
