// The kernels of a transformer layer, the embedding, the logits and the optimizer on one GPU.
//
// Each kernel is described once, in forward order, as a GEMM shape or as an element-wise traffic pair
// (forward bytes, backward bytes); the three passes are materialised from that one description: forward as is,
// backward reversed with backward costs, recompute as the forward kernels that `training.recompute` repeats.
//
// Element-wise traffic follows what Megatron-LM runs (Korthikanti et al.'s implementation, the calibration
// source): fused layer norm, fused scale-mask-softmax, torch dropout on the attention probabilities, fused
// bias-gelu, fused bias-dropout-add after the projection and the MLP, fp32 gradient accumulation in the weight
// GEMMs (gradient_accumulation_fusion), and an unfused vocab-parallel cross-entropy in fp32.
#include "workloads/kernels.hpp"

#include <algorithm>
#include <numeric>

#include "topology/error.hpp"
#include "topology/name_table.hpp"
#include "workloads/kernel_steps.hpp"

namespace dtsim::workloads {
namespace {

using topology::NameTable;
using topology::name_of;
using topology::value_of;
using namespace detail;

constexpr NameTable<KernelClass, 35> kKernelNames{{
    {KernelClass::Embedding, "embedding"},
    {KernelClass::LayerNorm, "layer-norm"},
    {KernelClass::QkvGemm, "qkv-gemm"},
    {KernelClass::MlaUpGemm, "mla-up-gemm"},
    {KernelClass::AttnScores, "attn-scores"},
    {KernelClass::Softmax, "softmax"},
    {KernelClass::AttnDropout, "attn-dropout"},
    {KernelClass::AttnContext, "attn-context"},
    {KernelClass::FlashAttention, "flash-attention"},
    {KernelClass::ProjGemm, "proj-gemm"},
    {KernelClass::MlpUpGemm, "mlp-up-gemm"},
    {KernelClass::Activation, "activation"},
    {KernelClass::MlpDownGemm, "mlp-down-gemm"},
    {KernelClass::Router, "router"},
    {KernelClass::RouterTopk, "router-topk"},
    {KernelClass::TokenPermute, "token-permute"},
    {KernelClass::ExpertUpGemm, "expert-up-gemm"},
    {KernelClass::ExpertDownGemm, "expert-down-gemm"},
    {KernelClass::TokenUnpermute, "token-unpermute"},
    {KernelClass::Dropout, "dropout"},
    {KernelClass::Residual, "residual"},
    {KernelClass::Fp8Cast, "fp8-cast"},
    {KernelClass::LoraColumnA, "lora-column-a"},
    {KernelClass::LoraColumnB, "lora-column-b"},
    {KernelClass::LoraRowA, "lora-row-a"},
    {KernelClass::LoraRowB, "lora-row-b"},
    {KernelClass::Quantize, "quantize"},
    {KernelClass::Logits, "logits"},
    {KernelClass::CrossEntropy, "cross-entropy"},
    {KernelClass::Conv, "conv"},
    {KernelClass::BatchNorm, "batch-norm"},
    {KernelClass::Pool, "pool"},
    {KernelClass::Matmul, "matmul"},
    {KernelClass::Elementwise, "elementwise"},
    {KernelClass::OptimizerUpdate, "optimizer-update"},
}};
constexpr NameTable<Pass, 3> kPassNames{{{Pass::Forward, "forward"},
                                         {Pass::Backward, "backward"},
                                         {Pass::Recompute, "recompute"}}};

// ---- embedding and logits ----

// Vocab-parallel lookup: each GPU reads the rows of the tokens in its vocab shard (tokens / t on average) and
// writes the whole output (zeros elsewhere) for the all-reduce or reduce-scatter that follows. Learned positions
// add a read of one position row per token and an add (read two, write one). Backward scatters dy into the
// gradient rows (read dy, read and write the rows in the gradient dtype); learned positions do the same again.
Traffic embedding_traffic(const Dims& d, double tp) {
  const double out = d.tokens * d.h;
  Traffic t{(out / tp) * d.we + out * d.e, out * d.e + 2.0 * (out / tp) * d.ge};
  if (!d.learned_positions) return t;
  t.forward += out * (d.we + 3.0 * d.e);
  t.backward += out * (d.e + 2.0 * d.ge);
  return t;
}

// Megatron's vocab-parallel cross-entropy over this GPU's tokens x vocab/t logits, unfused: forward casts the
// logits to fp32 (read e, write 4), then max (read 4), subtract (read 4, write 4), exp (read 4, write 4), sum
// (read 4), normalise (read 4, write 4), keeping the probabilities for the backward, which scales them by the
// loss gradient in place (read 4, write 4) and casts the result back (read 4, write e).
// Fused (Megatron-Core's --cross-entropy-loss-fusion), by its implementation:
// - native (megatron/core/fusions/fused_cross_entropy.py, each step compiled by torch.compile, jit.py): the cast
//   and max in one pass (read e, write 4), the in-place subtract, exp and sum in one (read 4, write 4), the
//   normalisation in one (read 4, write 4), keeping the fp32 probabilities; backward scales them in place and
//   casts (read 4, write 4 and e);
// - te (Transformer Engine's triton/cross_entropy.py) over the 16-bit logits: online_softmax_kernel reads them,
//   cross_entropy_kernel reads them again and writes the softmax's gradient in their place; backward's
//   element_mul_kernel scales it in place (read e, write e).
Traffic cross_entropy_traffic(const Dims& d) {
  const double n = d.tokens * d.vocab;
  if (d.te_loss) return {3.0 * n * d.e, 2.0 * n * d.e};
  if (d.fused_loss) return {n * (d.e + 5.0 * d.fp32), n * (d.e + 2.0 * d.fp32)};
  return {n * (d.e + 9.0 * d.fp32), n * (d.e + 3.0 * d.fp32)};
}

std::vector<Step> logits_steps(const Dims& d) {
  Step logits = gemm_step(KernelClass::Logits, {d.tokens, d.vocab, d.h, 1});
  logits.frozen = d.frozen;
  return {
      elementwise_step(KernelClass::LayerNorm, norm_traffic(d.ew_tokens * d.h, d.e)),   // the final norm
      logits,
      elementwise_step(KernelClass::CrossEntropy, cross_entropy_traffic(d)),
  };
}

}  // namespace



std::string_view to_string(KernelClass k) { return name_of(kKernelNames, k); }
std::string_view to_string(Pass p) { return name_of(kPassNames, p); }
std::optional<KernelClass> parse_kernel_class(std::string_view name) { return value_of(kKernelNames, name); }

bool is_gemm(KernelClass k) {   // the fused attention counts FLOPs too, but is not one GEMM
  switch (k) {
    case KernelClass::QkvGemm:
    case KernelClass::MlaUpGemm:
    case KernelClass::AttnScores:
    case KernelClass::AttnContext:
    case KernelClass::ProjGemm:
    case KernelClass::MlpUpGemm:
    case KernelClass::MlpDownGemm:
    case KernelClass::LoraColumnA:
    case KernelClass::LoraColumnB:
    case KernelClass::LoraRowA:
    case KernelClass::LoraRowB:
    case KernelClass::Router:
    case KernelClass::ExpertUpGemm:
    case KernelClass::ExpertDownGemm:
    case KernelClass::Conv:
    case KernelClass::Matmul:
    case KernelClass::Logits: return true;
    default: return false;
  }
}

std::vector<Kernel> layer_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch,
                                  Pass pass, bool moe) {
  DTSIM_ASSERT(!moe || m.moe(), "an MoE layer of a model with experts");
  const Dims d = dims_of(m, t, s, micro_batch);
  const bool mla_up = pass == Pass::Recompute && d.mla && t.recompute == Recompute::Selective &&
                      (t.recompute_modules & bit(RecomputeModule::MlaUpProj)) != 0;
  if (pass == Pass::Recompute && t.recompute == Recompute::Op) {
    DTSIM_ASSERT(!moe && !d.mla, "per-op checkpointing of a dense layer without MLA (check_plan)");
    return materialise(op_recompute_steps(d), pass, d);
  }
  std::vector<Step> steps = layer_steps(d, moe, mla_up);
  if (pass == Pass::Recompute) std::erase_if(steps, [&](const Step& step) { return !recomputed(step, t); });
  return materialise(steps, pass, d);
}

Bytes context_kv_bytes(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch) {
  const Dims d = dims_of(m, t, s, micro_batch);
  // torchtitan's attention repeats the key-value heads to every query head before SDPA (models/llama/model.py
  // repeat_kv at 9dec370a), so PyTorch's context parallelism gathers and rotates all of them.
  const double heads = t.framework == Framework::Torchtitan ? d.heads : d.kv_heads;
  return Bytes(d.b * d.s * heads * (d.qk_head + d.v_head) * d.e);
}

double distinct_nodes(int experts, int top_k, int nodes) {
  DTSIM_ASSERT(nodes >= 1 && experts % nodes == 0 && top_k <= experts, "experts spread evenly over the nodes");
  double missed = 1;   // the chance that a node holds none of a token's experts
  for (int i = 0; i < top_k; ++i)
    missed *= std::max(0.0, static_cast<double>(experts - experts / nodes - i)) / (experts - i);
  return nodes * (1.0 - missed);
}

MoeTraffic moe_traffic(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch, int nodes) {
  DTSIM_ASSERT(m.moe(), "MoE traffic of a model with experts");
  const Dims d = dims_of(m, t, s, micro_batch);
  MoeTraffic out{d.routed, d.expert_rows, Bytes(d.routed * d.top_k * d.h * d.e * d.imbalance),
                 Bytes(d.expert_rows * d.h * d.e * d.imbalance), 1, Bytes(0), Bytes(0)};
  out.distinct_nodes = nodes > 1 ? distinct_nodes(m.experts, m.experts_per_token, nodes) : 1.0;
  out.rail = Bytes(d.routed * out.distinct_nodes * d.h * d.e * d.imbalance);
  // DeepEP sends a token to each GPU at most once, whatever number of its experts that GPU holds
  // (deepseek-ai/DeepEP get_dispatch_layout: is_token_in_rank, one bool per token and rank), where Megatron's
  // all-to-all dispatcher sends a copy per chosen expert: the expected number of distinct GPUs a token's experts
  // sit on, over the expert-parallel group.
  out.node = Bytes(d.routed * distinct_nodes(m.experts, m.experts_per_token, s.ep) * d.h * d.e * d.imbalance);
  return out;
}

std::vector<Kernel> embedding_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch,
                                      Pass pass) {
  if (pass == Pass::Recompute) return {};
  if (pass == Pass::Backward && t.lora.on()) return {};   // a frozen embedding: no gradient to scatter
  const Dims d = dims_of(m, t, s, micro_batch);
  return {kernel_of(elementwise_step(KernelClass::Embedding, embedding_traffic(d, s.tp)), pass, d)};
}

std::vector<Kernel> logits_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch,
                                   Pass pass) {
  if (pass == Pass::Recompute) return {};
  const Dims d = dims_of(m, t, s, micro_batch);
  return materialise(logits_steps(d), pass, d);
}

// Per parameter: read the gradient; read and write the fp32 master copy when there is one (else read the
// weight itself); read and write the optimizer states; write the weight in the dtype the forward reads.
// Tagged Pass::Backward: the update closes the step's backward half and is never recomputed.
Kernel optimizer_kernel(const TrainingSpec& t, double params) {
  DTSIM_ASSERT(params >= 0.0, "a GPU cannot hold a negative number of parameters");
  const double we = bytes_per_element(t.weight_dtype);
  const double master = t.master_weights ? 2.0 * bytes_per_element(Precision::Fp32) : we;
  // fp8 training also quantises each weight (and its transpose) once per step, for the first micro-batch's GEMMs.
  const double fp8_cast = t.fp8 != Fp8::None ? we + 2.0 * bytes_per_element(low_gemm_precision(t.fp8)) : 0.0;
  const double per_param =
      bytes_per_element(t.grad_dtype) + master + 2.0 * optimizer_state_bytes_per_param(t) + we + fp8_cast;
  Kernel k;
  k.kind = KernelClass::OptimizerUpdate;
  k.pass = Pass::Backward;
  k.bytes = Bytes(params * per_param);
  if (t.fp8 != Fp8::None && low_gemm_precision(t.fp8) == Precision::Fp8)   // per-tensor: the transpose
    k.transposed = Bytes(params * bytes_per_element(Precision::Fp8));
  return k;
}

std::vector<Kernel> step_overhead_kernels(const TrainingSpec& t, double params) {
  DTSIM_ASSERT(params >= 0.0, "a GPU cannot hold a negative number of parameters");
  const Bytes grads(params * bytes_per_element(t.grad_dtype));
  const auto pass_over = [](Bytes bytes) {
    Kernel k;
    k.kind = KernelClass::OptimizerUpdate;
    k.pass = Pass::Backward;
    k.bytes = bytes;
    return k;
  };
  std::vector<Kernel> out{pass_over(grads)};                                      // the norm
  if (t.precision == Precision::Fp16) out.push_back(pass_over(grads * 2.0));      // unscale, check for inf/NaN
  out.push_back(pass_over(grads));                                                // zero the buffer
  return out;
}

FlopCount total_flops(const std::vector<Kernel>& kernels) {
  return std::accumulate(kernels.begin(), kernels.end(), FlopCount(0),
                         [](FlopCount sum, const Kernel& k) { return sum + k.flops; });
}

Bytes total_bytes(const std::vector<Kernel>& kernels) {
  return std::accumulate(kernels.begin(), kernels.end(), Bytes(0),
                         [](Bytes sum, const Kernel& k) { return sum + k.bytes; });
}

}  // namespace dtsim::workloads
