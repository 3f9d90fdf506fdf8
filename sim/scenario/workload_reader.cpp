// Scenario `model`, `training`, `inference` and `parallelism` sections -> workloads::Workload (the `training`
// section's keys: training_reader.cpp).
//
// model: a preset (optional) whose fields explicit keys override; without one, every size is required.
// training: workloads::training_defaults(precision), then the explicit keys. inference: bf16 weights and KV
// cache, one sequence, the model's seq_length as context. parallelism: tp = pp = vpp = 1, 1f1b, tp-dp-pp,
// ZeRO 0, scatter/gather on, dp = GPUs / (tp x pp).
#include "sim/scenario/workload_reader.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <fmt/format.h>
#include <initializer_list>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/section_readers.hpp"
#include "topology/error.hpp"
#include "topology/user_graph.hpp"
#include "workloads/layer_list.hpp"

namespace dtsim::scenario {
namespace detail {

topology::Precision read_precision(const YamlMap& m, const std::string& key, topology::Precision fallback,
                                   std::initializer_list<topology::Precision> allowed) {
  const auto name = m.text(key);
  if (!name) return fallback;
  const auto p = topology::parse_precision(*name);
  if (p && std::find(allowed.begin(), allowed.end(), *p) != allowed.end()) return *p;
  std::string names;
  for (const topology::Precision a : allowed) names += (names.empty() ? "" : ", ") + std::string(to_string(a));
  if (*name == "auto") m.no_auto(key, names);
  m.fail(key, *name, "unknown or unsupported precision", names);
}

}  // namespace detail

namespace {

using detail::read_inference;
using detail::read_precision;

using topology::Precision;
using workloads::InferenceSpec;
using workloads::ModelSpec;
using workloads::ParallelPlan;
using workloads::TrainingSpec;

using detail::is_auto;
using detail::read_training;



int cluster_gpus(const YamlMap& top, const topology::ClusterSpec& cluster) {
  if (!cluster.graph) return cluster.gpus();
  const YamlMap c = top.map("cluster");
  return located(c, "graph", [&] { return static_cast<int>(topology::read_user_graph(*cluster.graph).gpus().size()); });
}

// dp defaults to the GPUs left over by tp x pp, when they divide the cluster evenly. When they do not, a tp the
// model cannot split by (heads, kv_heads, ffn_hidden) is the constraint to name first: fixing the GPU count alone
// would not make the plan run.
int derive_dp(const YamlMap& top, const topology::ClusterSpec& cluster, const ParallelPlan& p,
              const workloads::ModelSpec& model) {
  const int gpus = cluster_gpus(top, cluster);
  const long long model_parallel = static_cast<long long>(p.tp) * p.pp * p.cp;
  if (gpus % model_parallel == 0 && gpus >= model_parallel) return static_cast<int>(gpus / model_parallel);
  if (model.kind == workloads::ModelKind::Transformer && top.has("parallelism"))
    located(top, "parallelism", [&] { workloads::check_model_split(model, p); });
  const bool cp = p.cp > 1;
  const std::string product = fmt::format("tp x pp{} = {} x {}{} = {}", cp ? " x cp" : "", p.tp, p.pp,
                                          cp ? fmt::format(" x {}", p.cp) : "", model_parallel);
  throw InputError("parallelism.dp", "",
                   gpus < model_parallel
                       ? fmt::format("cannot be derived: {} is more than the cluster's {} GPUs", product, gpus)
                       : fmt::format("cannot be derived: the cluster's {} GPUs are not a multiple of {}", gpus, product),
                   cp ? "give parallelism.dp, or tp, pp and cp whose product divides the GPU count"
                      : "give parallelism.dp, or tp and pp whose product divides the GPU count",
                   top.has("parallelism") ? top.map("parallelism").where("dp") : top.where("model"));
}

ParallelPlan read_plan_keys(const YamlMap& m) {
  m.allow_only({"tp", "pp", "dp", "vpp", "schedule", "layers_per_stage", "replica_micro_batches", "order", "zero", "scatter_gather", "ep",
                "etp", "cp", "fsdp"});
  ParallelPlan p;
  p.tp = read_int(m, "tp", p.tp, 1, kMaxDegree);
  p.pp = read_int(m, "pp", p.pp, 1, kMaxDegree);
  p.dp = read_int(m, "dp", 0, 1, kMaxDegree);
  if (!is_auto(m, "vpp")) p.vpp = read_int(m, "vpp", p.vpp, 1, kMaxLayers);
  p.schedule = read_enum(m, "schedule", p.schedule, workloads::parse_schedule, workloads::kScheduleNames);
  for (const long long n : m.integers("layers_per_stage", 1, kMaxLayers).value_or(std::vector<long long>{}))
    p.layers_per_stage.push_back(static_cast<int>(n));
  for (const long long n : m.integers("replica_micro_batches", 1, 100'000).value_or(std::vector<long long>{}))
    p.replica_micro_batches.push_back(static_cast<int>(n));
  p.order = read_enum(m, "order", p.order, workloads::parse_order, workloads::kOrderNames);
  p.zero = read_int(m, "zero", p.zero, 0, 3);
  p.scatter_gather = m.boolean("scatter_gather").value_or(p.scatter_gather);
  p.ep = read_int(m, "ep", p.ep, 1, kMaxDegree);
  p.etp = read_int(m, "etp", p.etp, 1, kMaxDegree);
  p.cp = read_int(m, "cp", p.cp, 1, kMaxDegree);
  p.fsdp = read_enum(m, "fsdp", p.fsdp, workloads::parse_fsdp, workloads::kFsdpNames);
  if (p.fsdp != workloads::Fsdp::None) {   // FSDP shards as ZeRO-3 does
    if (m.has("zero") && p.zero != 3)
      m.fail("zero", std::to_string(p.zero), "contradicts parallelism.fsdp, which shards parameters, gradients and states:",
             "3, or no zero beside fsdp");
    p.zero = 3;
  }
  return p;
}

ParallelPlan read_plan(const YamlMap& top, const topology::ClusterSpec& cluster, const workloads::ModelSpec& model) {
  ParallelPlan p;
  p.dp = 0;
  if (top.has("parallelism")) p = read_plan_keys(top.map("parallelism"));
  if (p.dp == 0) p.dp = derive_dp(top, cluster, p, model);
  // Hybrid FSDP shards within a node: the data-parallel ranks on the first rank's node.
  if (p.fsdp == workloads::Fsdp::Hybrid) {
    const auto dp_group = workloads::Placement(p).group(0, workloads::Axis::Dp);
    p.shard_ranks = static_cast<int>(
        std::ranges::count_if(dp_group, [&](int r) { return r / cluster.gpus_per_node == 0; }));
  }
  return p;
}

// Megatron-Core's bucket: max(40M, 1M x dp) parameters (megatron/core/distributed/distributed_data_parallel.py,
// "to ensure that chunks used in NCCL ring-reduce implementations are large enough to remain bandwidth-bound");
// DeepSpeed's reduce_bucket_size, 5e8 elements (deepspeed/runtime/zero/constants.py); Megatron-LM 2021's 25 MB
// (PyTorch DDP's default bucket_cap_mb, also torchtitan's under DDP).
Bytes default_bucket(const TrainingSpec& t, const ParallelPlan& p) {
  const double element = workloads::bytes_per_element(t.grad_dtype);
  switch (t.framework) {
    case workloads::Framework::MegatronCore: return Bytes(std::max(4e7, 1e6 * p.dp_ranks()) * element);
    case workloads::Framework::Nemo: return Bytes(128.0 * 1024 * 1024 * element);
    case workloads::Framework::DeepSpeed:
    case workloads::Framework::DeepSpeed2021: return Bytes(5e8 * element);
    case workloads::Framework::Megatron2021:
    case workloads::Framework::Megatron2022:
    case workloads::Framework::Torchtitan: return Bytes(25e6);   // FSDP reduce-scatters per unit instead
  }
  return Bytes(25e6);
}

// The distributed optimizer is ZeRO-1: parallelism.zero and training.distributed_optimizer say the same, the one a
// scenario gives deciding the other (neither: the framework's default).
void resolve_distributed_optimizer(const YamlMap& top, TrainingSpec& t, ParallelPlan& p) {
  const YamlMap m = top.map("training");
  const bool zero_given =
      (top.has("parallelism") && top.map("parallelism").has("zero")) || p.fsdp != workloads::Fsdp::None;
  if (!m.has("distributed_optimizer") && zero_given) t.distributed_optimizer = p.zero == 1;
  if (!zero_given) p.zero = t.distributed_optimizer ? 1 : 0;
  if (t.distributed_optimizer == (p.zero == 1)) return;
  m.fail("distributed_optimizer", t.distributed_optimizer ? "true" : "false",
         fmt::format("is ZeRO-1 (optimizer states sharded over the data-parallel group) and parallelism.zero is {}, so "
                     "not",
                     p.zero),
         "distributed_optimizer: true with zero 1 (or no zero), false with zero 0, 2 or 3");
}

// The framework's defaults that depend on the plan (tp_comm_overlap, sequence parallelism, the bucket), and
// what Megatron-Core's argument checks require of the features.
// A layer-list model trains as PyTorch DDP does, whatever the framework: no distributed optimizer, DDP's 25 MB
// buckets (bucket_cap_mb), overlapped with the backward, fp32 gradients (AMP keeps the parameters, so their
// gradients, in fp32).
void resolve_layer_list(const YamlMap& top, TrainingSpec& t, ParallelPlan& p) {
  const YamlMap m = top.map("training");
  if (!m.has("grad_dtype")) t.grad_dtype = Precision::Fp32;
  if (!m.has("distributed_optimizer")) t.distributed_optimizer = false;
  if (!(top.has("parallelism") && top.map("parallelism").has("zero"))) p.zero = 0;
  t.overlap_param_gather = false;
  if (!m.has("dp_bucket_MB")) t.dp_bucket = Bytes(25e6);
}

void resolve_with_plan(const YamlMap& top, TrainingSpec& t, ParallelPlan& p, workloads::ModelKind kind) {
  const YamlMap m = top.map("training");
  if (kind == workloads::ModelKind::Layers) return resolve_layer_list(top, t, p);
  // FSDP2 prefetches the next layer's gathers whatever the memory (its forward's implicit prefetch, the backward's
  // BACKWARD_PRE), where DeepSpeed's ZeRO-3 prefetches what its bucket allows.
  if (p.fsdp != workloads::Fsdp::None && !m.has("zero3_prefetch")) t.zero3_prefetch = workloads::Zero3Prefetch::Layer;
  const bool core = workloads::megatron_core_based(t.framework);
  // torchtitan's TP plan shards the norms over the sequence (SequenceParallel on attention_norm and ffn_norm).
  const bool torchtitan = t.framework == workloads::Framework::Torchtitan;
  if (!m.has("sequence_parallel") && (core || torchtitan)) t.sequence_parallel = p.tp > 1;
  if (!m.has("tp_comm_overlap")) t.tp_comm_overlap = core && t.sequence_parallel && p.tp > 1;
  if (t.tp_comm_overlap && !t.sequence_parallel)
    m.fail("tp_comm_overlap", "true", "needs training.sequence_parallel (Megatron-Core refuses it without), so not",
           "tp_comm_overlap: false, or sequence_parallel: true");
  // DeepSpeed reduces gradients during the backward only under ZeRO-3: zero_optimization.overlap_comm defaults to
  // stage == 3 (runtime/zero/config.py, overlap_comm_valid, v0.9.0), the engine without ZeRO all-reduces after
  // the backward (runtime/engine.py backward(): allreduce_gradients() once it is done), and the pipeline engine
  // schedules the reduction after the last micro-batch (runtime/pipe/engine.py: "We schedule the all-reduces, so
  // disable it in super().backward()", enable_backward_allreduce = False; ReduceGrads after the last backward).
  if (workloads::deepspeed_based(t.framework) && !m.has("overlap_grad_reduce") && !m.has("dp_overlap"))
    t.dp_overlap = p.zero == 3 && p.pp == 1;
  resolve_distributed_optimizer(top, t, p);
  if (!m.has("overlap_param_gather")) t.overlap_param_gather = t.overlap_param_gather && t.distributed_optimizer && t.dp_overlap;
  if (t.overlap_param_gather && !(t.distributed_optimizer && t.dp_overlap))
    m.fail("overlap_param_gather", "true",
           "needs the distributed optimizer and overlap_grad_reduce (Megatron-Core refuses it without), so not",
           "overlap_param_gather: false, or distributed_optimizer and overlap_grad_reduce true");
  if (!m.has("dp_bucket_MB")) t.dp_bucket = default_bucket(t, p);
}

// fp8 training needs fp8 matrix units.
void check_fp8_gpu(const YamlMap& m, const TrainingSpec& t, const topology::GpuSpec& gpu) {
  const Precision low = workloads::low_gemm_precision(t.fp8);
  if (t.fp8 == workloads::Fp8::Nvfp4 && !gpu.architecture.starts_with("blackwell"))
    m.fail("fp8", "nvfp4", fmt::format("is NVIDIA's FP4 (Blackwell); gpu {} ({}) has none, so not", gpu.name, gpu.architecture),
           "none, hybrid, e4m3 or mxfp8 (AMD's FP4 is MXFP4: training.precision mxfp4 runs every GEMM in it)");
  if (t.fp8 == workloads::Fp8::None || gpu.peak_for(low)) return;
  m.fail("fp8", std::string(to_string(t.fp8)),
         fmt::format("needs {} matrix units, which gpu {} lacks, so not", to_string(low), gpu.name),
         low == Precision::Fp8 ? "fp8: none on this GPU, or a GPU with an fp8 peak (Hopper, Ada, Blackwell, CDNA3)"
                               : low == Precision::Fp4 ? "none, hybrid or e4m3 on this GPU, or a GPU with that peak (Blackwell)"
                                                       : "none, hybrid or e4m3 on this GPU, or a GPU with that peak (Blackwell, CDNA4)");
}

// A model needs exactly one of training and inference; those and parallelism need a model.
void check_sections(const YamlMap& top) {
  if (!top.has("model")) {
    for (const char* key : {"training", "inference", "parallelism"})
      if (top.has(key)) top.fail(key, "", "given without a model section", "a model section (preset or shape) beside it");
    return;
  }
  if (top.has("training") && top.has("inference"))
    top.fail("inference", "", "cannot be combined with training in one scenario", "either training or inference");
  if (!top.has("training") && !top.has("inference"))
    top.fail("model", "", "needs a training or an inference section, and neither is given",
             "training: {global_batch, ...} or inference: {batch, context, ...}");
}

// The knobs a training scenario leaves to `auto` (absent, or written `auto`): its micro-batch, interleaving and
// recomputation, which a practitioner tunes and a source rarely states; `auto` where the plan allows one value only
// takes it (micro-batch 1, vpp 1). `recompute_modules` given fixes the
// recomputation it refines. A model or section the plan search cannot tune (a layer-list model, a serving job)
// keeps the reader's default, and `auto` written there is an error.
std::vector<std::string> auto_knobs(const YamlMap& top, const workloads::Workload& w, bool mixed) {
  const auto written_auto = [&](const char* section, const char* key) {
    return top.has(section) && is_auto(top.map(section), key);
  };
  const auto left = [&](const char* section, const char* key) {
    return !top.has(section) || !top.map(section).has(key) || is_auto(top.map(section), key);
  };
  const bool tunable = w.training && w.model.kind == workloads::ModelKind::Transformer;
  if (!tunable) {
    for (const auto& [section, key] : {std::pair{"training", "micro_batch"}, {"training", "recompute"},
                                       {"training", "offload_layers"}, {"parallelism", "vpp"}})
      if (written_auto(section, key))
        top.map(section).fail(key, std::string(kAuto),
                              w.training ? "is chosen by the plan search, which tunes transformer models only; a "
                                           "layer-list model trains data-parallel, so give"
                                         : "is a training knob; a serving job has nothing to choose, so give",
                              std::string(key) == "recompute"        ? "none, selective or full"
                              : std::string(key) == "offload_layers" ? "an integer >= 0"
                                                                     : "an integer >= 1");
    return {};
  }
  // A knob the plan leaves one value is not a choice: one sequence per replica is micro-batch 1, one stage has
  // nothing to interleave.
  std::vector<std::string> out;
  const bool one_sequence = w.plan.dp > 0 && w.training->global_batch <= w.plan.dp;
  if (left("training", "micro_batch") && !one_sequence) out.emplace_back("training.micro_batch");
  if (left("parallelism", "vpp") && w.plan.pp > 1) out.emplace_back("parallelism.vpp");
  if (left("training", "recompute") && !top.map("training").has("recompute_modules")) out.emplace_back("training.recompute");
  // Activation offloading, the alternative to recomputation where Megatron-Core has it (one stage, one GPU kind):
  // open only with the recomputation, chosen after the search (drivers/auto_knobs.cpp) where it lets the plan fit
  // without recomputing, faster. Fixing the recomputation fixes it (at 0 unless given).
  const bool core = workloads::megatron_core_based(w.training->framework);
  if (left("training", "offload_layers") && left("training", "recompute") && !top.map("training").has("recompute_modules") &&
      core && w.plan.pp == 1 && w.model.layers > 1 && !mixed)
    out.emplace_back("training.offload_layers");
  return out;
}

}  // namespace

std::optional<workloads::Workload> read_workload(const YamlMap& top, const topology::ClusterSpec& cluster,
                                                 const std::string& scenario_name, const std::string& file,
                                                 std::vector<std::string>* auto_keys) {
  check_sections(top);
  if (!top.has("model")) return std::nullopt;
  workloads::Workload w;
  w.gpus_per_node = cluster.gpus_per_node;
  w.model = read_model(top.map("model"), scenario_name, file);
  if (top.has("training")) {
    w.training = read_training(top.map("training"));
    check_fp8_gpu(top.map("training"), *w.training, cluster.gpu);
    // A layer-list preset's activations take the compute precision's width (fp8 GEMMs keep 16-bit activations).
    if (w.model.kind == workloads::ModelKind::Layers && !top.map("model").has("layers_list")) {
      const double element = workloads::activation_element_bytes(w.training->precision);
      w.model.layer_list = workloads::layer_list_preset(w.model.name, element).layer_list;
    }
  } else {
    w.inference = read_inference(top.map("inference"), w.model, cluster.gpu, file);
  }
  w.plan = read_plan(top, cluster, w.model);
  if (w.inference && w.plan.vpp > 1)   // serving runs each stage once per pass: there is nothing to interleave
    top.map("parallelism").fail("vpp", std::to_string(w.plan.vpp),
                                "interleaves a training pipeline's micro-batches; a serving pass has none:", "1");
  if (w.training) located(top, "training", [&] { resolve_with_plan(top, *w.training, w.plan, w.model.kind); });
  // Hybrid FSDP and DeepEP group ranks by node (cluster.gpus_per_node), which a user graph does not say.
  if (cluster.graph && w.plan.fsdp == workloads::Fsdp::Hybrid)
    top.map("parallelism").fail("fsdp", "hybrid", "shards within a node, and a user graph (cluster.graph) gives no node size:",
                                "full on a user graph");
  if (cluster.graph && w.training && w.training->moe_dispatcher == workloads::MoeDispatcher::DeepEp)
    top.map("training").fail("moe_dispatcher", "deepep",
                             "sends once per node, and a user graph (cluster.graph) gives no node size:",
                             "alltoall on a user graph");
  if (auto_keys != nullptr) *auto_keys = auto_knobs(top, w, !cluster.groups.empty());
  return w;
}

}  // namespace dtsim::scenario
