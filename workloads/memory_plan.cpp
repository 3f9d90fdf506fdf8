// Memory per GPU. Training: parameters, gradients and optimizer states of one pipeline stage's layers (split
// over tp, sharded over dp per ZeRO stage), activations after Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", section 4) times the micro-batches the schedule keeps in flight,
// and communication buffers. Inference (memory_plan_inference.cpp): weights and KV cache over tp x pp, and a
// decode workspace.
#include "workloads/memory_plan.hpp"

#include <algorithm>
#include <span>
#include <fmt/format.h>

#include "topology/error.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/lora.hpp"
#include "workloads/memory_plan_detail.hpp"
#include "workloads/schedule.hpp"

namespace dtsim::workloads {
namespace detail {

Bytes total(const MemoryParts& p) {
  return p.params + p.grads + p.optimizer + p.activations + p.kv_cache + p.buffers;
}

std::string count(double n) { return n >= 1e9 ? fmt::format("{:.4g}e9", n / 1e9) : fmt::format("{:.4g}e6", n / 1e6); }

MemoryPlan finish(MemoryPlan plan, const topology::GpuSpec& gpu) {
  plan.per_gpu = total(plan.parts);
  plan.capacity = gpu.memory - gpu.memory_reserve;
  plan.margin = plan.capacity - plan.per_gpu;
  plan.fits = plan.margin >= Bytes(0.0);
  return plan;
}

}  // namespace detail

namespace {

using detail::count;
using detail::total;
using detail::finish;
using detail::last_virtual_stage;
using detail::stage_activations;
using detail::StageActivations;

constexpr double kMasterBytes = 4.0;      // the fp32 copy of the weights mixed precision updates
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
      te_loss(t) ? to_string(t.precision) : "fp32");
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

}  // namespace


int in_flight_micro_batches(const ParallelPlan& plan, int micro_batches, int stage) {
  return peak_in_flight(schedule_order(plan, micro_batches, stage));
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
  return w.training ? plan_prefetch(w, {&gpu, 1}).plan : detail::plan_inference(w, gpu);
}

MemoryPlan plan_memory(const Workload& w, std::span<const topology::GpuSpec> stage_gpus) {
  DTSIM_ASSERT(w.training && w.model.kind == ModelKind::Transformer &&
                   stage_gpus.size() == static_cast<std::size_t>(w.plan.pp),
               "a transformer's training plan with a GPU per stage");
  return plan_prefetch(w, stage_gpus).plan;
}

}  // namespace dtsim::workloads
