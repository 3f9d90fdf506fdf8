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

namespace dtsim::workloads {
namespace {

using topology::NameTable;
using topology::name_of;
using topology::value_of;

constexpr NameTable<KernelClass, 30> kKernelNames{{
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

// One GPU's share of the work, in elements (not bytes), and the element sizes in bytes.
struct Dims {
  double b = 0;            // sequences in the micro-batch
  double s = 0;            // sequence length
  double cp = 1;           // context-parallel size: this GPU holds s / cp of each sequence
  double h = 0;            // hidden size
  double tokens = 0;       // b * s / cp: the rows of every linear layer (gathered when sequence-parallel)
  double ew_tokens = 0;    // tokens of the norms, dropouts and residuals: tokens / t with SP, else tokens
  double heads = 0;        // attention heads on this GPU: a / t
  double kv_heads = 0;     // key and value heads on this GPU (MLA: a / t, each up-projected from the latent)
  double qk_head = 0;      // a head's width in Q K^T (MLA: the head_dim and the rope part)
  double v_head = 0;       // a head's width in probabilities x V
  double qkv_out = 0;      // Q, K and V columns on this GPU: (heads x head_dim + 2 kv_dim) / t; MLA: its
                           // projections' parameters over h, / t (one GEMM of their FLOPs)
  bool mla = false;        // MLA: its up projections, which mla_up_proj recomputes: Q's from its rank q_lora
  double q_lora = 0;       // latent (0: none, from the hidden state) to q_up columns / t, and K's and V's from
  double q_up = 0;         // the kv_lora latent to kv_up / t
  double kv_lora = 0;
  double kv_up = 0;
  double ffn = 0;          // ffn_hidden / t
  double up_out = 0;       // ffn (gelu) or 2 ffn (swiglu: gate and up)
  double vocab = 0;        // vocab / t (vocab-parallel embedding and logits)
  double e = 0;            // bytes per activation element (training.precision)
  double we = 0;           // bytes per weight element (training.weight_dtype)
  double ge = 0;           // bytes per gradient element (training.grad_dtype)
  double fp32 = 0;         // bytes per fp32 element (losses and statistics kept in fp32)
  bool swiglu = false;
  bool learned_positions = false;
  bool flash = false;      // the attention core as one fused kernel
  bool flash2 = false;     // that kernel FlashAttention-2
  bool causal = true;
  bool fp8 = false;        // the linear layers' GEMMs in fp8 (Transformer Engine)
  bool fused_loss = false;
  bool hidden_dropout = true;      // dropout after the projection and the MLP (model.hidden_dropout > 0)
  bool attention_dropout = true;   // over the attention probabilities (model.attention_dropout > 0)
  // MoE layers
  double experts = 0;         // routed experts
  double top_k = 0;
  double local_experts = 0;   // experts / ep
  double routed = 0;          // tokens this GPU routes: its sequence-parallel share
  double expert_rows = 0;     // token copies its experts compute on: routed x top_k x etp (balanced)
  double expert_ffn = 0;      // an expert's width on this GPU: expert_ffn_hidden / etp
  double expert_up = 0;       // expert_ffn, or 2 expert_ffn (swiglu)
  double shared_ffn = 0;      // the shared experts' width on this GPU: shared x expert_ffn_hidden / t
  double imbalance = 1;       // model.expert_imbalance
};

Dims dims_of(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch) {
  DTSIM_ASSERT(s.tp >= 1, "tensor-parallel size must be at least 1");
  DTSIM_ASSERT(micro_batch >= 1, "micro-batch must hold at least one sequence");
  const double tp = s.tp;
  Dims d;
  d.b = micro_batch;
  d.s = m.seq_length;
  d.cp = s.cp;
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
  d.e = bytes_per_element(t.precision);
  d.we = bytes_per_element(t.weight_dtype);
  d.ge = bytes_per_element(t.grad_dtype);
  d.fp32 = bytes_per_element(Precision::Fp32);
  d.learned_positions = m.positions == Positions::Learned;
  d.flash = fused(t.attention);
  d.flash2 = t.attention == AttentionKernel::Flash2;
  d.causal = m.causal;
  d.fp8 = t.fp8 != Fp8::None;
  d.fused_loss = t.cross_entropy_fusion;
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

// Bytes an element-wise kernel moves in each pass.
struct Traffic {
  double forward = 0;
  double backward = 0;
};

// A kernel as described once: a GEMM (with or without a weight operand), a fused attention kernel, or an
// element-wise kernel.
struct Step {
  KernelClass kind = KernelClass::Residual;
  std::optional<GemmShape> gemm;
  bool weighted = true;   // GEMMs: B is a weight matrix (false: both operands are activations)
  Traffic traffic;        // element-wise and fused attention kernels
  std::optional<AttentionShape> attention;   // fused attention, with its forward FLOPs as the model counts them
  double attention_flops = 0;
  bool fp8 = false;       // a GEMM in fp8
  int launches = 1;
  double load = 1;        // Kernel::load
  unsigned modules = 0;   // the training.recompute_modules that recompute it (RecomputeModule bits)
};

Step gemm_step(KernelClass kind, GemmShape g, bool weighted = true) { return {kind, g, weighted, {}, {}, 0, false, 1, 1}; }
Step elementwise_step(KernelClass kind, Traffic t) { return {kind, std::nullopt, true, t, {}, 0, false, 1, 1}; }

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

Kernel kernel_of(const Step& step, Pass pass, const Dims& d) {
  Kernel k;
  k.kind = step.kind;
  k.pass = pass;
  k.launches = step.launches;
  k.load = step.load;
  const bool backward = pass == Pass::Backward;
  if (!step.gemm) {
    k.bytes = Bytes(backward ? step.traffic.backward : step.traffic.forward);
    k.attention = step.attention;
    k.flops = FlopCount(step.attention_flops * (backward ? 2.0 : 1.0));
    return k;
  }
  const GemmShape& g = *step.gemm;
  k.flops = FlopCount(gemm_flops(g) * (backward ? 2.0 : 1.0));
  k.bytes = Bytes(backward ? gemm_backward_bytes(g, step.weighted, d) : gemm_forward_bytes(g, step.weighted, d));
  k.gemm = backward ? backward_shape(g) : g;
  if (backward && step.weighted) k.weight_gemm = weight_shape(g);
  if (step.fp8) k.precision = Precision::Fp8;
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

// ---- element-wise traffic, in bytes; `n` elements of `e` bytes, masks 1 byte per element ----

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

// ---- the layer ----

// The unfused attention core (Megatron's): the scores written to memory, softmax and dropout over them.
void unfused_attention(std::vector<Step>& steps, const Dims& d) {
  DTSIM_ASSERT(d.cp == 1, "context parallelism runs the fused attention core (check_plan)");
  const double probs = d.b * d.heads * d.s * d.s;   // attention probabilities on this GPU
  const double bh = d.b * d.heads;                  // attention GEMMs are batched over sequences x heads
  steps.push_back(gemm_step(KernelClass::AttnScores, {d.s, d.s, d.qk_head, bh}, false));
  steps.push_back(elementwise_step(KernelClass::Softmax, softmax_traffic(probs, d.e)));
  if (d.attention_dropout) steps.push_back(elementwise_step(KernelClass::AttnDropout, dropout_traffic(probs, d.e)));
  steps.push_back(gemm_step(KernelClass::AttnContext, {d.s, d.v_head, d.s, bh}, false));
}

// The fused core (FlashAttention, cuDNN): Q K V in, the output and the softmax statistics (fp32 per row) out;
// the backward reads them with the output's gradient and writes Q K V's, the scores recomputed on chip. It counts
// the FLOPs of the two unfused GEMMs. With MLA's unequal head widths its shape takes their mean.
// Under context parallelism its s / cp queries meet every one of the s keys, a block of s / cp at a time (ring
// attention): it reads the whole sequence's K and V, computes 1 / cp of the FLOPs, each block of s / cp.
Step fused_attention(const Dims& d) {
  const double queries = d.s / d.cp;
  const double io = d.tokens * d.heads * (d.qk_head + d.v_head);                 // Q and the output on this GPU
  const double kv = d.tokens * d.cp * d.kv_heads * (d.qk_head + d.v_head);      // K and V, every block
  const double stats = d.b * d.heads * queries * d.fp32;
  Step step = elementwise_step(KernelClass::FlashAttention, {(io + kv) * d.e + stats, 2.0 * (io + kv) * d.e + 2.0 * stats});
  step.attention = AttentionShape{d.b * d.heads, queries, (d.qk_head + d.v_head) / 2.0, d.causal, d.flash2};
  step.attention_flops = 2.0 * d.b * d.heads * queries * d.s * (d.qk_head + d.v_head);
  return step;
}

// A linear layer's GEMM, in fp8 when the layer trains in fp8, behind the quantisation of its operands: a cast
// reads e bytes per element and writes 2 (the fp8 tensor and its transpose, Hopper's fp8 GEMMs being TN only).
// Transformer Engine fuses the forward cast of Q K V's and MLP up's input into the norm before them
// (LayerNormLinear, LayerNormMLP) and of MLP down's into the activation, which then write fp8 instead of bf16;
// the projection's input (the attention's output) is cast on its own. Backward, each layer's incoming gradient is
// cast and transposed (cast_transpose) before its two GEMMs.
void linear(std::vector<Step>& steps, KernelClass kind, GemmShape g, const Dims& d) {
  if (d.fp8) {
    const bool own_forward_cast = kind == KernelClass::ProjGemm;
    steps.push_back(elementwise_step(KernelClass::Fp8Cast,
                                     {own_forward_cast ? g.m * g.k * (d.e + 2.0) : 0.0, g.m * g.n * (d.e + 2.0)}));
  }
  Step step = gemm_step(kind, g);
  step.fp8 = d.fp8;
  steps.push_back(step);
}

// The bias-dropout-add closing the attention and MLP blocks.
void add_dropout_residual(std::vector<Step>& steps, double x, const Dims& d) {
  if (d.hidden_dropout) steps.push_back(elementwise_step(KernelClass::Dropout, dropout_traffic(x, d.e)));
  steps.push_back(elementwise_step(KernelClass::Residual, residual_traffic(x, d.e, d.hidden_dropout)));
}

// An MLP of `ffn` columns on this GPU (the dense layer's, or the shared experts').
void mlp(std::vector<Step>& steps, double ffn, const Dims& d) {
  linear(steps, KernelClass::MlpUpGemm, {d.tokens, d.swiglu ? 2.0 * ffn : ffn, d.h, 1}, d);
  steps.push_back(elementwise_step(KernelClass::Activation, activation_traffic(d.tokens * ffn, d.e, d.swiglu)));
  linear(steps, KernelClass::MlpDownGemm, {d.tokens, d.h, ffn, 1}, d);
}

// Megatron-Core's MoE layer with the all-to-all token dispatcher, dropless, on this GPU's `routed` tokens: the
// router's GEMM (replicated weights) and its softmax/top-k with the auxiliary loss (fp32 scores: read the
// logits, write and read the probabilities); the tokens permuted (each read once per chosen expert and written
// grouped by destination) and, after the exchange, sorted by local expert (read and write); the local experts'
// up and down projections as grouped GEMMs (one weight matrix each, TE's GroupedLinear: one launch per expert)
// with the activation between; the outputs sorted back and each token's top_k copies summed with the router's
// weights; then the shared experts, if any, as an MLP on every token. The experts' kernels carry the busiest
// GPU's load (model.expert_imbalance). Backward mirrors each.
void moe_block(std::vector<Step>& steps, const Dims& d) {
  const double scores = d.routed * d.experts;
  const double copies = d.routed * d.top_k * d.h;   // elements this GPU sends
  const double rows = d.expert_rows * d.h;          // elements its experts read and write
  steps.push_back(gemm_step(KernelClass::Router, {d.routed, d.experts, d.h, 1}));
  steps.push_back(elementwise_step(KernelClass::RouterTopk,
                                   {scores * (d.e + 3.0 * d.fp32), scores * (d.e + 2.0 * d.fp32)}));
  steps.push_back(elementwise_step(KernelClass::TokenPermute, {(2.0 * copies + 2.0 * rows) * d.e,
                                                               (2.0 * copies + 2.0 * rows) * d.e}));
  const double per_expert = d.expert_rows / d.local_experts;
  Step up = gemm_step(KernelClass::ExpertUpGemm, {per_expert, d.expert_up, d.h, d.local_experts});
  Step act = elementwise_step(KernelClass::Activation, activation_traffic(d.expert_rows * d.expert_ffn, d.e, d.swiglu));
  act.modules = bit(RecomputeModule::MoeAct);
  Step down = gemm_step(KernelClass::ExpertDownGemm, {per_expert, d.h, d.expert_ffn, d.local_experts});
  up.fp8 = down.fp8 = d.fp8;
  up.launches = down.launches = static_cast<int>(d.local_experts);
  up.load = act.load = down.load = d.imbalance;
  // In fp8, Transformer Engine's GroupedLinear quantises each GEMM's input (and its transpose) itself, forward,
  // and the incoming gradient backward: nothing fuses them into the permute or the activation.
  const auto cast = [&](const GemmShape& g) {
    Step c = elementwise_step(KernelClass::Fp8Cast, {g.m * g.batch * g.k * (d.e + 2.0), g.m * g.batch * g.n * (d.e + 2.0)});
    c.load = d.imbalance;
    return c;
  };
  if (d.fp8) steps.push_back(cast(*up.gemm));
  steps.push_back(up);
  steps.push_back(act);
  if (d.fp8) steps.push_back(cast(*down.gemm));
  steps.push_back(down);
  const double x = d.routed * d.h;
  steps.push_back(elementwise_step(KernelClass::TokenUnpermute, {(2.0 * rows + copies + x) * d.e + scores * d.fp32,
                                                                 (2.0 * rows + 2.0 * copies + x) * d.e}));
  const std::size_t shared = steps.size();
  if (d.shared_ffn > 0) mlp(steps, d.shared_ffn, d);
  for (std::size_t i = shared; i < steps.size(); ++i) steps[i].modules |= bit(RecomputeModule::SharedExperts);
}

// A layer's steps in forward order, each tagged with the recompute modules that recompute it. `mla_up`: with
// MLA's up projections after the QKV GEMM, as mla_up_proj recomputes them (the recompute pass only: elsewhere the
// QKV GEMM counts their FLOPs).
std::vector<Step> layer_steps(const Dims& d, bool moe, bool mla_up) {
  const double x = d.ew_tokens * d.h;               // residual-stream elements on this GPU
  std::vector<Step> steps;
  // Tags the steps added since `from` with the recompute modules that recompute them.
  const auto tag = [&](std::size_t from, unsigned modules) {
    for (std::size_t i = from; i < steps.size(); ++i) steps[i].modules |= modules;
  };
  using M = RecomputeModule;
  // layernorm recomputes the norms that are modules of their own in Megatron-Core's Transformer Engine layers:
  // the input norm of MLA (elsewhere fused into the QKV projection) and an MoE layer's pre-MLP norm (a dense
  // layer's is fused into its first MLP projection).
  steps.push_back(elementwise_step(KernelClass::LayerNorm, norm_traffic(x, d.e)));
  if (d.mla) tag(0, bit(M::Layernorm));
  linear(steps, KernelClass::QkvGemm, {d.tokens, d.qkv_out, d.h, 1}, d);
  if (mla_up) {   // what mla_up_proj recomputes of the QKV GEMM above: the up projections (Q's from the hidden
    const std::size_t from = steps.size();   // state when it has no latent), K's and V's from their latent
    linear(steps, KernelClass::MlaUpGemm, {d.tokens, d.q_up, d.q_lora > 0 ? d.q_lora : d.h, 1}, d);
    linear(steps, KernelClass::MlaUpGemm, {d.tokens, d.kv_up, d.kv_lora, 1}, d);
    tag(from, bit(M::MlaUpProj));
  }
  std::size_t from = steps.size();
  if (d.flash) steps.push_back(fused_attention(d));
  else unfused_attention(steps, d);
  tag(from, bit(M::CoreAttn));
  linear(steps, KernelClass::ProjGemm, {d.tokens, d.h, d.heads * d.v_head, 1}, d);
  add_dropout_residual(steps, x, d);
  from = steps.size();
  steps.push_back(elementwise_step(KernelClass::LayerNorm, norm_traffic(x, d.e)));
  if (moe) tag(from, bit(M::Layernorm));
  from = steps.size();
  if (moe) {
    moe_block(steps, d);   // tags its shared experts and its activation itself
    tag(from, bit(M::Moe));
  } else {
    mlp(steps, d.ffn, d);
    tag(from, bit(M::Mlp));
  }
  add_dropout_residual(steps, x, d);
  return steps;
}

// What torchtitan's per-op checkpointing (recompute: op) reruns of a dense layer. Its policy keeps the output of
// every matmul, SDPA and collective but of every second matmul (torchtitan/models/llama/parallelize_llama.py,
// _apply_ac_to_transformer_block at 9dec370a: "Saves output of all compute ops, except every second mm"), counted
// per block in a Llama block's order: wq, wk, wv, wo, w1, w3, w2. The backward reruns what it needs of the rest,
// in forward order (torch.utils.checkpoint's early stop): the attention norm and K's projection (SDPA's backward
// reads K), the output projection and the residual add (the MLP norm's backward reads its input), the MLP norm,
// and with a gated MLP the up projection's second half (w3: its output enters the gate's product) and the
// activation; with a plain MLP, the activation (the down projection's input), w2 being the one not needed.
std::vector<Step> op_recompute_steps(const Dims& d) {
  const double x = d.ew_tokens * d.h;
  std::vector<Step> steps;
  steps.push_back(elementwise_step(KernelClass::LayerNorm, norm_traffic(x, d.e)));
  linear(steps, KernelClass::QkvGemm, {d.tokens, d.kv_heads * d.qk_head, d.h, 1}, d);
  linear(steps, KernelClass::ProjGemm, {d.tokens, d.h, d.heads * d.v_head, 1}, d);
  add_dropout_residual(steps, x, d);
  steps.push_back(elementwise_step(KernelClass::LayerNorm, norm_traffic(x, d.e)));
  if (d.swiglu) linear(steps, KernelClass::MlpUpGemm, {d.tokens, d.ffn, d.h, 1}, d);
  steps.push_back(elementwise_step(KernelClass::Activation, activation_traffic(d.tokens * d.ffn, d.e, d.swiglu)));
  return steps;
}

// What the recompute pass repeats: everything (full), or the modules training.recompute_modules names
// (selective; by default the attention core, whose activations are large and cheap to recompute: Korthikanti et
// al. section 5, with a fused core that kernel).
bool recomputed(const Step& step, const TrainingSpec& t) {
  switch (t.recompute) {
    case Recompute::None: return false;
    case Recompute::Full: return true;
    case Recompute::Selective: return (step.modules & t.recompute_modules) != 0;
    case Recompute::Op: break;   // op_recompute_steps builds its own
  }
  DTSIM_ASSERT(false, "recompute granularity missing from recomputed()");
}

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
// Fused (Megatron-Core's --cross-entropy-loss-fusion), in one kernel each way over the 16-bit logits: forward
// reads them and writes the softmax's gradient in their place, backward scales it by the loss gradient.
Traffic cross_entropy_traffic(const Dims& d) {
  const double n = d.tokens * d.vocab;
  if (d.fused_loss) return {2.0 * n * d.e, 2.0 * n * d.e};
  return {n * (d.e + 9.0 * d.fp32), n * (d.e + 3.0 * d.fp32)};
}

std::vector<Step> logits_steps(const Dims& d) {
  return {
      elementwise_step(KernelClass::LayerNorm, norm_traffic(d.ew_tokens * d.h, d.e)),   // the final norm
      gemm_step(KernelClass::Logits, {d.tokens, d.vocab, d.h, 1}),
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
  return Bytes(d.b * d.s * d.kv_heads * (d.qk_head + d.v_head) * d.e);
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
  out.node = out.all_to_all;
  return out;
}

std::vector<Kernel> embedding_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch,
                                      Pass pass) {
  if (pass == Pass::Recompute) return {};
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
  const double fp8_cast = t.fp8 != Fp8::None ? we + 2.0 : 0.0;
  const double per_param =
      bytes_per_element(t.grad_dtype) + master + 2.0 * optimizer_state_bytes_per_param(t) + we + fp8_cast;
  Kernel k;
  k.kind = KernelClass::OptimizerUpdate;
  k.pass = Pass::Backward;
  k.bytes = Bytes(params * per_param);
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
