// Memory per GPU serving a model (memory_plan.hpp): its weights and KV cache over tp x pp (the routed experts over
// ep x etp), a draft model's beside them, and a decode workspace.
#include <algorithm>
#include <fmt/format.h>

#include "workloads/memory_plan_detail.hpp"

namespace dtsim::workloads {
namespace detail {
namespace {

constexpr double kWorkspaceBytes = 4.0;   // decode workspace tensors, counted as fp32 (an upper bound)

// ---------------------------------------------------------------------------------------------------------
// Inference: the decode step of `batch` sequences holding `context` tokens each.

// A token's tensors in one layer that tp splits, scores and logits aside: h + 2kv + k f (MLA: its latent for 2kv).
// An MoE layer's MLP tensors are its token's k experts' and the shared experts' (each split as tp, ep x etp = tp
// spreading them), the widest of that and a dense layer's where the model has both.
double split_row_width(const ModelSpec& m) {
  const double mlp_tensors = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  const double moe_width = static_cast<double>(m.experts_per_token + m.shared_experts) * m.expert_width();
  const bool dense_too = m.dense_layers > 0 || m.moe_layer_freq > 1;
  const double mlp_width = !m.moe()    ? m.ffn_hidden
                           : dense_too ? std::max(static_cast<double>(m.ffn_hidden), moe_width)
                                       : moe_width;
  const double kv_width = m.mla() ? m.kv_lora_rank + m.rope_head_dim : 2.0 * m.kv_dim();   // MLA: the latent
  return m.hidden + kv_width + mlp_tensors * mlp_width;
}

// One token per sequence through the widest tensors of one layer (hidden state; Q, K, V; the attention scores
// over the whole context; the MLP) and the logits, fp32: batch x 4 B x (h + (h + 2kv + a x context + k f + V)/tp).
// Prefill workspace (a whole prompt at once) is not counted.
// Not counted under attention data parallelism: the busiest GPU's rows beyond its own tokens' and the exchanges'
// receive buffers (DeepEP's low-latency buffers grow with the tokens a rank may send times the ranks).
Bytes decode_workspace(const ModelSpec& m, const InferenceSpec& inf, int tp) {
  const double split = split_row_width(m) + static_cast<double>(m.heads) * inf.context + m.logits_width();
  return Bytes(inf.batch * kWorkspaceBytes * (m.hidden + split / tp));
}

}  // namespace
}  // namespace detail

Bytes stream_workspace(const ModelSpec& m, int tokens, int sequences, int tp) {
  using detail::kWorkspaceBytes;
  return Bytes(kWorkspaceBytes * (tokens * (m.hidden + detail::split_row_width(m) / tp) +
                                  static_cast<double>(sequences) * m.logits_width() / tp));
}

namespace detail {

MemoryPlan plan_inference(const Workload& w, const topology::GpuSpec& gpu) {
  const InferenceSpec& inf = *w.inference;
  const ParallelPlan& p = w.plan;
  const double n = parameter_count(w.model);
  // The routed experts spread over ep x etp GPUs: the tp GPUs of a replica, or under attention data parallelism
  // the tp x dp of all the replicas (the rest of the model then whole on each replica's tp).
  const double routed = w.model.moe() ? moe_layer_count(w.model) * moe_layer_parameters(w.model).routed() : 0.0;
  const int expert_gpus = w.model.moe() ? p.ep * serving_expert_tp(p) : p.tp;
  MemoryPlan plan;
  plan.parts.params = Bytes(((n - routed) / p.tp + routed / expert_gpus) * bytes_per_element(inf.weights) / p.pp);
  // MLA's down projections (q_a, kv_a with the rope key) are replicated on every GPU of the TP group (vLLM's
  // DeepseekV2MLAAttention: ReplicatedLinear), not split.
  const double replicated = w.model.mla() ? static_cast<double>(w.model.layers) * w.model.hidden *
                                                (w.model.q_lora_rank + w.model.kv_lora_rank + w.model.rope_head_dim)
                                          : 0.0;
  plan.parts.params += Bytes(replicated * bytes_per_element(inf.weights) * (1.0 - 1.0 / p.tp) / p.pp);
  // and its decode keeps 16-bit copies of W_UK and W_UV (kv_b's two halves) beside them, split by heads.
  const double absorbed = w.model.mla() ? static_cast<double>(w.model.layers) * w.model.heads * w.model.kv_lora_rank *
                                              (w.model.head_dim() + w.model.v_head_dim)
                                        : 0.0;
  plan.parts.params += Bytes(absorbed * 2.0 / (p.tp * p.pp));
  plan.parts.kv_cache = kv_cache_bytes(w.model, inf, p.tp) / p.pp;
  plan.parts.activations = decode_workspace(w.model, inf, p.tp);
  // A draft model (speculative decoding) beside the target: its weights and its own KV cache, split as the
  // target's; the two run one after the other, so the larger workspace counts.
  const ModelSpec* draft = inf.speculative ? &inf.speculative->draft : nullptr;
  const double draft_n = draft ? parameter_count(*draft) : 0.0;
  const int dtp = draft ? draft_tp(*inf.speculative, p.tp) : 1;
  if (draft) {   // on a one-GPU draft, the first GPU of each TP group holds it whole: that GPU is the plan's
    plan.parts.params += Bytes(draft_n * bytes_per_element(inf.weights) / (dtp * p.pp));
    plan.parts.kv_cache += kv_cache_bytes(*draft, inf, dtp) / p.pp;
    plan.parts.activations = std::max(plan.parts.activations, decode_workspace(*draft, inf, dtp));
  }
  plan.in_flight_micro_batches = 1;
  plan.inference = true;
  plan.notes = {
      fmt::format("params: {} parameters x {} B {} / (tp {} x pp {}){}{}{}", count(n), bytes_per_element(inf.weights),
                  to_string(inf.weights), p.tp, p.pp,
                  expert_gpus != p.tp ? fmt::format("; the {} routed over ep {} x etp {} (attention data parallelism)",
                                                    count(routed), p.ep, serving_expert_tp(p))
                                      : "",
                  w.model.mla() ? "; MLA's down projections whole on every GPU, 16-bit copies of W_UK and W_UV beside"
                                : "",
                  inf.weights == Precision::Int8 || inf.weights == Precision::Int4 ? "; quantisation scales not counted"
                  : low_float(inf.weights) && inf.weights != Precision::Fp8        ? "; block scales counted"
                                                                                   : ""),
      "grads: none (inference)",
      "optimizer: none (inference)",
      fmt::format("activations: decode workspace, one token per sequence, batch {}, fp32 (prefill not counted)",
                  inf.batch),
      w.model.mla()
          ? fmt::format("kv_cache: {} layers x ({} latent + {} rope) dims x {} tokens x batch {} x {} B {}, whole on "
                        "each GPU of the TP group / pp {} (multi-head latent attention)",
                        w.model.layers, w.model.kv_lora_rank, w.model.rope_head_dim, inf.context, inf.batch,
                        bytes_per_element(inf.kv_cache), to_string(inf.kv_cache), p.pp)
          : fmt::format("kv_cache: {} layers x {} kv heads x {} dims x {} tokens x batch {} x {} B {} x 2 (K, V) / "
                        "(tp {} x pp {})",
                        w.model.layers, w.model.kv_heads, w.model.head_dim(), inf.context, inf.batch,
                        bytes_per_element(inf.kv_cache), to_string(inf.kv_cache), p.tp, p.pp),
      "buffers: none counted (inference)",
  };
  if (draft)
    plan.notes.push_back(fmt::format("draft (speculative decoding): {} parameters and its KV cache ({} layers x {} kv "
                                     "heads) in params and kv_cache, over tp {} x pp {}",
                                     count(draft_n), draft->layers, draft->kv_heads, dtp, p.pp));
  return finish(std::move(plan), gpu);
}


}  // namespace detail

Bytes kv_cache_bytes(const ModelSpec& m, const InferenceSpec& inf, int tp) {
  DTSIM_ASSERT(tp >= 1, "kv cache of a checked plan");
  return kv_bytes_per_token(m, inf.kv_cache) * (static_cast<double>(inf.context) * inf.batch / kv_split(m, tp));
}

int kv_split(const ModelSpec& m, int tp) { return m.mla() ? 1 : tp; }

Bytes kv_bytes_per_token(const ModelSpec& m, Precision kv_cache) {
  // MLA caches the latent kv_c (kv_lora_rank) and the shared rope key k_pe (rope_head_dim) a layer (DeepSeek-V2,
  // arXiv:2405.04434, table 1: (d_c + d_h^R) x l elements a token).
  if (m.mla()) return Bytes(static_cast<double>(m.layers) * (m.kv_lora_rank + m.rope_head_dim) * bytes_per_element(kv_cache));
  return Bytes(2.0 * m.layers * static_cast<double>(m.kv_dim()) * bytes_per_element(kv_cache));
}

}  // namespace dtsim::workloads
