// A transformer layer's kernels in forward order (kernel_steps.hpp): attention (unfused or fused), the linear
// layers with their fp8 casts, the MLP or the MoE block, the residual adds; what recomputation repeats.
#include "workloads/kernel_steps.hpp"

#include "topology/error.hpp"

namespace dtsim::workloads::detail {
namespace {

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

// LoRA's adapter beside a linear layer that training.lora targets, after the layer's GEMM as Megatron-Bridge's
// LoRALinear runs it (peft/lora_layers.py: the wrapped layer, then the adapter on the same input, their outputs
// added), in the 16-bit precision (the adapters are Megatron-Core's own parallel linear layers, outside
// Transformer Engine's fp8; peft/utils.py ParallelLinearAdapter). Beside a column-parallel layer: A (h -> rank,
// split over the rank, its output gathered) on the layer's whole input, B (rank -> the layer's columns on this
// GPU). Beside a row-parallel one: A (this GPU's input rows -> rank, its output all-reduced), B (rank -> h / t, its
// output gathered whole). Then the add into the layer's output (read both, write one).
void lora_adapter(std::vector<Step>& steps, KernelClass kind, const GemmShape& g, const Dims& d) {
  if (d.lora_rank <= 0) return;
  LoraTarget target = LoraTarget::Qkv;
  switch (kind) {
    case KernelClass::QkvGemm: target = LoraTarget::Qkv; break;
    case KernelClass::ProjGemm: target = LoraTarget::Proj; break;
    case KernelClass::MlpUpGemm: target = LoraTarget::Fc1; break;
    case KernelClass::MlpDownGemm: target = LoraTarget::Fc2; break;
    default: return;
  }
  if ((d.lora_targets & bit(target)) == 0) return;
  const double r = d.lora_rank;
  const double tp = d.tp;
  const bool column = target == LoraTarget::Qkv || target == LoraTarget::Fc1;
  if (column) {
    steps.push_back(gemm_step(KernelClass::LoraColumnA, {g.m, r / tp, g.k, 1}));
    steps.push_back(gemm_step(KernelClass::LoraColumnB, {g.m, g.n, r, 1}));
    steps.push_back(elementwise_step(KernelClass::Residual, residual_traffic(g.m * g.n, d.e, false)));
    return;
  }
  steps.push_back(gemm_step(KernelClass::LoraRowA, {g.m, r, g.k, 1}));
  steps.push_back(gemm_step(KernelClass::LoraRowB, {g.m, g.n / tp, r, 1}));
  steps.push_back(elementwise_step(KernelClass::Residual, residual_traffic(d.ew_tokens * d.h, d.e, false)));
}

// A linear layer's GEMM, in fp8 when the layer trains in fp8, behind the quantisation of its operands: a cast
// reads e bytes per element and writes 2 (the fp8 tensor and its transpose, Hopper's fp8 GEMMs being TN only; the
// block-scaled recipes write both directions too, each with its scales: MX's blocks run along one axis).
// Transformer Engine fuses the forward cast of Q K V's and MLP up's input into the norm before them
// (LayerNormLinear, LayerNormMLP) and of MLP down's into the activation, which then write fp8 instead of bf16;
// the projection's input (the attention's output) is cast on its own. Backward, each layer's incoming gradient is
// cast and transposed (cast_transpose) before its two GEMMs.
void linear(std::vector<Step>& steps, KernelClass kind, GemmShape g, const Dims& d) {
  if (d.fp8) {
    const bool own_forward_cast = kind == KernelClass::ProjGemm;
    steps.push_back(elementwise_step(KernelClass::Fp8Cast,
                                     {own_forward_cast ? g.m * g.k * (d.e + d.cast_out) : 0.0, g.m * g.n * (d.e + d.cast_out)}));
  }
  Step step = gemm_step(kind, g);
  step.fp8 = d.fp8;
  step.frozen = d.frozen;
  steps.push_back(step);
  lora_adapter(steps, kind, g, d);
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
    Step c = elementwise_step(KernelClass::Fp8Cast, {g.m * g.batch * g.k * (d.e + d.cast_out), g.m * g.batch * g.n * (d.e + d.cast_out)});
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

}  // namespace

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

// What torchtitan's per-op checkpointing (recompute: op) reruns of a Llama block (check_plan refuses other
// blocks). Its policy keeps the output of
// every matmul, SDPA and reduce-scatter but of every second matmul (torchtitan/models/llama/parallelize_llama.py,
// _apply_ac_to_transformer_block at 9dec370a: "Saves output of all compute ops, except every second mm"), counted
// per block in a Llama block's order: wq, wk, wv, wo, w1, w3, w2. The backward reruns what it needs of the rest,
// in forward order (torch.utils.checkpoint's early stop): the attention norm and K's projection (SDPA's backward
// reads K), the output projection and the residual add (the MLP norm's backward reads its input), the MLP norm,
// the up projection's second half (w3: its output enters the gate's product) and the activation.
std::vector<Step> op_recompute_steps(const Dims& d) {
  const double x = d.ew_tokens * d.h;
  std::vector<Step> steps;
  steps.push_back(elementwise_step(KernelClass::LayerNorm, norm_traffic(x, d.e)));
  linear(steps, KernelClass::QkvGemm, {d.tokens, d.kv_heads * d.qk_head, d.h, 1}, d);
  linear(steps, KernelClass::ProjGemm, {d.tokens, d.h, d.heads * d.v_head, 1}, d);
  add_dropout_residual(steps, x, d);
  steps.push_back(elementwise_step(KernelClass::LayerNorm, norm_traffic(x, d.e)));
  DTSIM_ASSERT(d.swiglu, "per-op checkpointing of a gated MLP (check_plan)");
  linear(steps, KernelClass::MlpUpGemm, {d.tokens, d.ffn, d.h, 1}, d);
  steps.push_back(elementwise_step(KernelClass::Activation, activation_traffic(d.tokens * d.ffn, d.e, true)));
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

}  // namespace dtsim::workloads::detail
