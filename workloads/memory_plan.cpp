// Memory per GPU. Training: parameters, gradients and optimizer states of one pipeline stage's layers (split
// over tp, sharded over dp per ZeRO stage), activations after Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", section 4) times the micro-batches the schedule keeps in flight,
// and communication buffers. Inference: weights and KV cache over tp x pp, and a decode workspace.
#include "workloads/memory_plan.hpp"

#include <algorithm>
#include <span>
#include <fmt/format.h>

#include "topology/error.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/lora.hpp"
#include "workloads/schedule.hpp"

namespace dtsim::workloads {
namespace {

using detail::last_virtual_stage;
using detail::stage_activations;
using detail::StageActivations;

constexpr double kMasterBytes = 4.0;      // the fp32 copy of the weights mixed precision updates
constexpr double kWorkspaceBytes = 4.0;   // decode workspace tensors, counted as fp32 (an upper bound)
constexpr int kBucketsInFlight = 2;       // DP overlap: one bucket reducing while the next one fills

// ---------------------------------------------------------------------------------------------------------
// Parameters per GPU. Megatron-LM splits every linear weight, the column-parallel biases (QKV, MLP up/gate)
// and the word embedding / output projection over tp; norms, row-parallel biases (attention output, MLP
// down), learned position embeddings and an MoE layer's router (Megatron-Core's TopKRouter weight, a plain
// parameter of experts x hidden) are replicated on every TP rank. Counts are exact, not /tp.

double replicated_layer_parameters(const ModelSpec& m, int layer) {
  const double router = m.moe_layer(layer) ? moe_layer_parameters(m).router : 0.0;
  return 2.0 * final_norm_parameters(m) + (m.bias ? 2.0 * m.hidden : 0.0) + router;   // two norms, two row biases
}

// A layer's parameters on one GPU: the dense part split over tp (but what is replicated), the routed experts over
// ep x etp.
struct GpuParameters {
  double dense = 0;
  double expert = 0;
  GpuParameters& operator+=(const GpuParameters& o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
  [[nodiscard]] double total() const { return dense + expert; }
};

GpuParameters layer_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p, int layer) {
  const double replicated = replicated_layer_parameters(m, layer);
  return {(layer_dense_parameters(m, layer) - replicated) / p.tp + replicated,
          layer_routed_parameters(m, layer) / (p.ep * p.expert_tp())};
}


GpuParameters stage_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p, int stage) {
  const auto layers = stage_layers(p, m.layers);
  const auto first = first_layers(layers);
  GpuParameters n;
  for (int chunk = 0; chunk < p.vpp; ++chunk) {
    const auto v = static_cast<std::size_t>(chunk * p.pp + stage);
    for (int l = first[v]; l < first[v] + layers[v]; ++l) n += layer_parameters_per_gpu(m, p, l);
    if (v == 0) n.dense += embedding_parameters_per_gpu(m, p.tp);
    if (static_cast<int>(v) == last_virtual_stage(p)) n.dense += head_parameters_per_gpu(m, p);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// Training plan of one pipeline stage.

// LoRA's adapters on one GPU of `stage` (every adapter split over tp, lora.cpp): what it trains.
GpuParameters stage_adapters_per_gpu(const ModelSpec& m, const TrainingSpec& t, const ParallelPlan& p, int stage) {
  const auto layers = stage_layers(p, m.layers);
  double on_stage = 0;
  for (int chunk = 0; chunk < p.vpp; ++chunk) on_stage += layers[static_cast<std::size_t>(chunk * p.pp + stage)];
  return {on_stage * lora_layer_parameters(m, t.lora) / p.tp, 0.0};
}

struct StageMemory {
  MemoryParts parts;
  int in_flight = 0;
  GpuParameters parameters;   // per GPU, before ZeRO sharding
  GpuParameters trained;      // of them, what trains (with LoRA: the adapters, held beside the frozen weights)
};

Bytes total(const MemoryParts& p) {
  return p.params + p.grads + p.optimizer + p.activations + p.kv_cache + p.buffers;
}

// Parameters' bytes on one GPU, `per_parameter` each, sharded over their data-parallel group (the experts' over
// the expert data-parallel group) from ZeRO stage `zero_stage` on.
double sharded(const GpuParameters& n, const ParallelPlan& p, int zero_stage, double per_parameter) {
  if (p.zero < zero_stage) return n.total() * per_parameter;
  return (n.dense / p.zero_ranks() + n.expert / p.expert_dp()) * per_parameter;
}

// The larger of a dense and an MoE layer on one GPU (with experts, FSDP gathers the rank's own experts): every
// layer of a kind is alike, so layer 0 and the first MoE layer.
double largest_layer_per_gpu(const ModelSpec& m, const ParallelPlan& p) {
  double most = layer_parameters_per_gpu(m, p, 0).total();
  for (int l = 1; l < m.layers && m.moe(); ++l)
    if (m.moe_layer(l)) return std::max(most, layer_parameters_per_gpu(m, p, l).total());
  return most;
}

// The largest unit ZeRO-3 holds gathered (a layer, the embedding or the output projection), per GPU. The step
// graph gathers a layer's modules together and, with the prefetch, the next layer's too, so this unit and one
// more layer can be live; the finer per-module release DeepSpeed can do is not modelled.
double largest_gathered_unit(const ModelSpec& m, const ParallelPlan& p) {
  return std::max({largest_layer_per_gpu(m, p), embedding_parameters_per_gpu(m, p.tp), head_parameters_per_gpu(m, p)});
}

Bytes training_buffers(const Workload& w, bool prefetch, const GpuParameters& stage) {
  const ParallelPlan& p = w.plan;
  const TrainingSpec& t = *w.training;
  if (p.dp_ranks() == 1) return Bytes(0.0);
  // FSDP under pipeline parallelism: the stage's weights stay gathered, whole, for the step.
  if (p.fsdp_gathers_once()) return Bytes(stage.total() * bytes_per_element(t.weight_dtype));
  Bytes b = t.dp_bucket * kBucketsInFlight;
  // ZeRO-3: the unit being computed and, prefetched, the next layer, each whole, in the weight dtype.
  if (p.zero >= 3) {
    const double gathered =
        largest_gathered_unit(w.model, p) + (prefetch ? largest_layer_per_gpu(w.model, p) : 0.0);
    b += Bytes(gathered * bytes_per_element(t.weight_dtype));
  }
  return b;
}

StageMemory training_stage(const Workload& w, int stage, bool prefetch) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  const GpuParameters n = stage_parameters_per_gpu(w.model, p, stage);
  const double optimizer_bytes = optimizer_bytes_per_param(t);
  const StageActivations act = stage_activations(w, stage);
  StageMemory s;
  s.parameters = n;
  s.trained = t.lora.on() ? stage_adapters_per_gpu(w.model, t, p, stage) : n;
  s.in_flight = act.in_flight;
  const double we = bytes_per_element(t.weight_dtype);
  s.parts.params = Bytes(sharded(n, p, 3, we) + (t.lora.on() ? s.trained.total() * we : 0.0));
  // ZeRO++'s hpZ: beside the primary shard, a secondary partition of the weights over the node's data-parallel
  // ranks, in the weights' dtype (DeepSpeed's ds_secondary_tensor: tensor_size // hpz_partition_size).
  if (t.zero_pp.hpz && p.zero_ranks() > 1) s.parts.params += Bytes(n.total() * we / std::max(1, node_dp_ranks(w)));
  // FSDP under pipeline parallelism accumulates the stage's gradients unsharded until its last backward.
  s.parts.grads = p.fsdp_gathers_once() && p.dp_ranks() > 1
                      ? Bytes(s.trained.total() * bytes_per_element(t.grad_dtype))
                      : Bytes(sharded(s.trained, p, 2, bytes_per_element(t.grad_dtype)));
  s.parts.optimizer = Bytes(sharded(s.trained, p, 1, optimizer_bytes));
  s.parts.activations = act.peak;
  s.parts.buffers = training_buffers(w, prefetch, n);
  // LoRA's buckets hold only the adapters' gradients: no more than all of them.
  if (t.lora.on()) s.parts.buffers = std::min(s.parts.buffers, Bytes(s.trained.total() * bytes_per_element(t.grad_dtype)));
  return s;
}

// "6.738e9" / "108.9e6": parameter counts in notes.
std::string count(double n) { return n >= 1e9 ? fmt::format("{:.4g}e9", n / 1e9) : fmt::format("{:.4g}e6", n / 1e6); }

std::string zero_note(const ParallelPlan& p, int zero_stage) {
  if (p.zero < zero_stage || p.zero_ranks() == 1) return "";
  if (p.fsdp != Fsdp::None && p.shard_ranks > 0)
    return fmt::format(", hybrid FSDP /{} (a node's data-parallel ranks)", p.shard_ranks);
  if (p.fsdp != Fsdp::None)
    return p.ep > 1 || p.expert_tp() != p.tp ? fmt::format(", FSDP /{} (experts /{})", p.zero_ranks(), p.expert_dp())
                                             : fmt::format(", FSDP /{}", p.zero_ranks());
  const std::string group = p.cp > 1 ? fmt::format("dp x cp {}", p.dp_ranks()) : fmt::format("dp {}", p.dp);
  if (p.ep > 1 || p.expert_tp() != p.tp) return fmt::format(", ZeRO-{} /{} (experts /{})", p.zero, group, p.expert_dp());
  return fmt::format(", ZeRO-{} /{}", p.zero, group);
}

std::string gathered_note(const TrainingSpec& t, bool prefetch) {
  if (prefetch) return "; ZeRO-3: the largest gathered unit (layer or embedding) and the next layer, prefetched, weight dtype";
  return fmt::format("; ZeRO-3: the largest gathered unit (layer or embedding), weight dtype: no prefetch ({})",
                     t.zero3_prefetch == Zero3Prefetch::None
                         ? "training.zero3_prefetch: none"
                         : "training.zero3_prefetch: auto, and the prefetched layer does not fit");
}

// "none", "full", or "selective [core_attn, moe_act]".
std::string recompute_text(const TrainingSpec& t) {
  if (t.recompute != Recompute::Selective) return std::string(to_string(t.recompute));
  return fmt::format("selective [{}]", fmt::join(recompute_module_names(t.recompute_modules), ", "));
}

std::vector<std::string> training_notes(const Workload& w, const StageMemory& s, int stage, bool prefetch) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  const std::string master = t.master_weights ? "4 B fp32 master + " : "";
  const std::string sp = t.sequence_parallel ? " + sequence parallel" : "";
  const bool fused_core = fused(t.attention);
  std::string act = fmt::format(
      "activations: Korthikanti et al., recompute {}{}, tp {}, micro-batch {} x {} tokens{}, {} in flight on stage "
      "{}; {}{}; logits {} on the last stage",
      recompute_text(t), sp, p.tp, t.micro_batch, w.model.seq_length,
      p.cp > 1 ? fmt::format(" split over cp {}", p.cp) : "", s.in_flight, stage,
      fused_core ? "fused attention (no scores kept)" : "unfused attention (scores kept)",
      t.fp8 != Fp8::None ? "; the linear layers' inputs kept in fp8 (Transformer Engine)" : "",
      t.cross_entropy_fusion ? to_string(t.precision) : "fp32");
  if (t.recompute == Recompute::Full) act += "; plus one layer recomputed in full during backward";
  if (t.offload_layers > 0)
    act += fmt::format("; the first {} layers' kept tensors offloaded to host memory (Megatron-Core's activation offloading), "
                       "plus one layer in flight to or from it", t.offload_layers);
  if (t.recompute == Recompute::Op)
    act += "; per-op checkpointing keeps the input, Q, V, the attention output, w1's and w2's outputs (and the "
           "reduce-scatters' under sequence parallelism); plus one layer's recomputed tensors during backward";
  return {
      fmt::format("params: {} parameters per GPU (stage {}, split over tp {}; norms, row biases{} "
                  "replicated{}) x {} B {}{}",
                  count(s.parameters.total()), stage, p.tp, w.model.moe() ? " and routers" : "",
                  w.model.moe() ? fmt::format("; of them {} routed experts' over ep {} x etp {}", count(s.parameters.expert), p.ep, p.expert_tp()) : "",
                  bytes_per_element(t.weight_dtype), to_string(t.weight_dtype), zero_note(p, 3)) +
          (t.zero_pp.hpz ? fmt::format("; ZeRO++ hpZ: a secondary partition over the node's {} data-parallel ranks",
                                       std::max(1, node_dp_ranks(w)))
                         : std::string()),
      t.lora.on() ? fmt::format("grads: LoRA's adapters only (rank {} on {}: {} parameters per GPU, beside the frozen "
                                "weights above, counted with them) x {} B {}{}",
                                t.lora.rank, fmt::join(lora_target_names(t.lora.targets), ", "), count(s.trained.total()),
                                bytes_per_element(t.grad_dtype), to_string(t.grad_dtype), zero_note(p, 2))
                  : fmt::format("grads: same parameters x {} B {}{}", bytes_per_element(t.grad_dtype),
                                to_string(t.grad_dtype),
                                p.fsdp_gathers_once() && p.dp_ranks() > 1
                                    ? ", whole: FSDP under pp accumulates them unsharded until the stage's last backward"
                                    : zero_note(p, 2)),
      fmt::format("optimizer: {}{} {} states ({} B) per {}parameter{}", master, to_string(t.optimizer),
                  to_string(t.optimizer_dtype), optimizer_state_bytes_per_param(t), t.lora.on() ? "adapter " : "",
                  zero_note(p, 1)),
      act,
      "kv_cache: none (training)",
      p.dp_ranks() == 1 ? std::string("buffers: none (dp 1: no gradient buckets)")
      : p.fsdp_gathers_once()
          ? fmt::format("buffers: the stage's weights gathered whole for the step, {}: FSDP under pp does not "
                        "reshard after the forward (torchtitan)", to_string(t.weight_dtype))
          : fmt::format("buffers: {} DP gradient buckets of {:.4g} MB{}", kBucketsInFlight, t.dp_bucket.value() / 1e6,
                        p.zero >= 3 ? gathered_note(t, prefetch) : ""),
  };
}

MemoryPlan finish(MemoryPlan plan, const topology::GpuSpec& gpu) {
  plan.per_gpu = total(plan.parts);
  plan.capacity = gpu.memory - gpu.memory_reserve;
  plan.margin = plan.capacity - plan.per_gpu;
  plan.fits = plan.margin >= Bytes(0.0);
  return plan;
}

// `gpus`: one for every stage, or one per stage; the stage reported is the one with the least memory to spare.
MemoryPlan plan_training(const Workload& w, std::span<const topology::GpuSpec> gpus, bool prefetch) {
  const auto gpu_of = [&](int stage) -> const topology::GpuSpec& {
    return gpus.size() == 1 ? gpus.front() : gpus[static_cast<std::size_t>(stage)];
  };
  const auto spare = [&](int stage, const StageMemory& m) {
    return (gpu_of(stage).memory - gpu_of(stage).memory_reserve - total(m.parts)).value();
  };
  int worst = 0;
  StageMemory worst_memory = training_stage(w, 0, prefetch);
  for (int stage = 1; stage < w.plan.pp; ++stage) {
    StageMemory s = training_stage(w, stage, prefetch);
    if (spare(stage, s) < spare(worst, worst_memory)) {
      worst = stage;
      worst_memory = s;
    }
  }
  const topology::GpuSpec& gpu = gpu_of(worst);
  MemoryPlan plan;
  plan.parts = worst_memory.parts;
  plan.stage = worst;
  plan.in_flight_micro_batches = worst_memory.in_flight;
  plan.notes = training_notes(w, worst_memory, worst, prefetch);
  return finish(std::move(plan), gpu);
}

// ---------------------------------------------------------------------------------------------------------
// Inference: the decode step of `batch` sequences holding `context` tokens each.

// One token per sequence through the widest tensors of one layer (hidden state; Q, K, V; the attention scores
// over the whole context; the MLP) and the logits, fp32: batch x 4 B x (h + (h + 2kv + a x context + k f + V)/tp).
// Prefill workspace (a whole prompt at once) is not counted.
// An MoE layer's MLP tensors are its token's k experts' and the shared experts' (each split as tp, ep x etp = tp
// spreading them), the widest of that and a dense layer's where the model has both.
Bytes decode_workspace(const ModelSpec& m, const InferenceSpec& inf, int tp) {
  const double mlp_tensors = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  const double moe_width = static_cast<double>(m.experts_per_token + m.shared_experts) * m.expert_width();
  const bool dense_too = m.dense_layers > 0 || m.moe_layer_freq > 1;
  const double mlp_width = !m.moe()    ? m.ffn_hidden
                           : dense_too ? std::max(static_cast<double>(m.ffn_hidden), moe_width)
                                       : moe_width;
  const double kv_width = m.mla() ? m.kv_lora_rank + m.rope_head_dim : 2.0 * m.kv_dim();   // MLA: the latent
  const double split = m.hidden + kv_width + static_cast<double>(m.heads) * inf.context +
                       mlp_tensors * mlp_width + m.logits_width();
  return Bytes(inf.batch * kWorkspaceBytes * (m.hidden + split / tp));
}

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

}  // namespace


int in_flight_micro_batches(const ParallelPlan& plan, int micro_batches, int stage) {
  return peak_in_flight(schedule_order(plan, micro_batches, stage));
}

Bytes kv_cache_bytes(const ModelSpec& m, const InferenceSpec& inf, int tp) {
  DTSIM_ASSERT(tp >= 1, "kv cache of a checked plan");
  return kv_bytes_per_token(m, inf.kv_cache) * (static_cast<double>(inf.context) * inf.batch / kv_split(m, tp));
}

double embedding_parameters_per_gpu(const ModelSpec& m, int tp) {
  const double words = static_cast<double>(m.vocab) * m.hidden;
  return words / tp + (embedding_parameters(m) - words);   // learned positions are replicated
}

double head_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p) {
  const double words = static_cast<double>(m.vocab) * m.hidden;
  const double logits = m.tied_embeddings ? (p.pp > 1 ? words : 0.0) : logits_parameters(m);
  return logits / p.tp + final_norm_parameters(m);
}

int kv_split(const ModelSpec& m, int tp) { return m.mla() ? 1 : tp; }

Bytes kv_bytes_per_token(const ModelSpec& m, Precision kv_cache) {
  // MLA caches the latent kv_c (kv_lora_rank) and the shared rope key k_pe (rope_head_dim) a layer (DeepSeek-V2,
  // arXiv:2405.04434, table 1: (d_c + d_h^R) x l elements a token).
  if (m.mla()) return Bytes(static_cast<double>(m.layers) * (m.kv_lora_rank + m.rope_head_dim) * bytes_per_element(kv_cache));
  return Bytes(2.0 * m.layers * static_cast<double>(m.kv_dim()) * bytes_per_element(kv_cache));
}

namespace {

// The training plan with ZeRO-3's prefetch resolved (training.zero3_prefetch; auto: the prefetch if it fits),
// and whether it prefetches: what plan_memory reports and what the step graph runs.
struct PrefetchPlan {
  bool prefetch = false;
  MemoryPlan plan;
};
PrefetchPlan plan_prefetch(const Workload& w, std::span<const topology::GpuSpec> gpu) {
  const bool gathers = w.plan.zero >= 3 && w.plan.zero_ranks() > 1;   // otherwise nothing is gathered: no prefetch
  const Zero3Prefetch mode = w.training->zero3_prefetch;
  if (gathers && mode == Zero3Prefetch::Auto) {
    MemoryPlan with = plan_training(w, gpu, true);
    if (with.fits) return {true, std::move(with)};
    return {false, plan_training(w, gpu, false)};
  }
  const bool prefetch = gathers && mode == Zero3Prefetch::Layer;
  return {prefetch, plan_training(w, gpu, prefetch)};
}

}  // namespace

bool zero3_prefetches(const Workload& w, const topology::GpuSpec& gpu) {
  return w.training && w.model.kind == ModelKind::Transformer && plan_prefetch(w, {&gpu, 1}).prefetch;
}

namespace {

// A layer-list model under DDP: every GPU holds the whole model, its gradients and optimizer states; the
// activations each layer keeps for the micro-batch; two gradient buckets.
MemoryPlan plan_layer_list(const Workload& w, const topology::GpuSpec& gpu) {
  const TrainingSpec& t = *w.training;
  const double n = parameter_count(w.model);
  double kept = 0;
  for (const LayerSpec& l : w.model.layer_list) kept += l.activation;
  const double optimizer_bytes = optimizer_bytes_per_param(t);
  MemoryPlan plan;
  plan.parts.params = Bytes(n * bytes_per_element(t.weight_dtype));
  plan.parts.grads = Bytes(n * bytes_per_element(t.grad_dtype));
  plan.parts.optimizer = Bytes(n * optimizer_bytes);
  plan.parts.activations = Bytes(kept * t.micro_batch);
  plan.parts.buffers = w.plan.dp > 1 ? t.dp_bucket * kBucketsInFlight : Bytes(0);
  plan.in_flight_micro_batches = 1;
  plan.notes = {
      fmt::format("params: {} parameters (every GPU the whole model, DDP) x {} B {}", count(n),
                  bytes_per_element(t.weight_dtype), to_string(t.weight_dtype)),
      fmt::format("grads: same parameters x {} B {}", bytes_per_element(t.grad_dtype), to_string(t.grad_dtype)),
      fmt::format("optimizer: {}{} {} states ({} B) per parameter", t.master_weights ? "4 B fp32 master + " : "",
                  to_string(t.optimizer), to_string(t.optimizer_dtype), optimizer_state_bytes_per_param(t)),
      fmt::format("activations: what each of the {} layers keeps for its backward, {:.4g} MB a sample x micro-batch {}",
                  w.model.layer_list.size(), kept / 1e6, t.micro_batch),
      "kv_cache: none (training)",
      w.plan.dp > 1 ? fmt::format("buffers: {} DDP gradient buckets of {:.4g} MB", kBucketsInFlight, t.dp_bucket.value() / 1e6)
                    : std::string("buffers: none (dp 1: no gradient buckets)"),
  };
  return finish(std::move(plan), gpu);
}

}  // namespace

double optimizer_bytes_per_param(const TrainingSpec& t) {
  return (t.master_weights ? kMasterBytes : 0.0) + optimizer_state_bytes_per_param(t);
}

MemoryPlan plan_memory(const Workload& w, const topology::GpuSpec& gpu) {
  DTSIM_ASSERT(w.training.has_value() != w.inference.has_value(), "a workload is training or inference");
  if (w.model.kind == ModelKind::Layers && w.training) return plan_layer_list(w, gpu);
  return w.training ? plan_prefetch(w, {&gpu, 1}).plan : plan_inference(w, gpu);
}

MemoryPlan plan_memory(const Workload& w, std::span<const topology::GpuSpec> stage_gpus) {
  DTSIM_ASSERT(w.training && w.model.kind == ModelKind::Transformer &&
                   stage_gpus.size() == static_cast<std::size_t>(w.plan.pp),
               "a transformer's training plan with a GPU per stage");
  return plan_prefetch(w, stage_gpus).plan;
}

}  // namespace dtsim::workloads
