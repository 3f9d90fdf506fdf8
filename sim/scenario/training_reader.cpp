// The scenario's `training` section -> workloads::TrainingSpec: workloads::training_defaults(precision), the
// framework's defaults (apply_framework), then the explicit keys; what depends on the plan is resolved later
// (workload_reader.cpp's resolve_with_plan).
#include <fmt/format.h>

#include <initializer_list>
#include <optional>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/section_readers.hpp"
#include "sim/scenario/workload_reader.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario::detail {
namespace {

using topology::Precision;
using workloads::TrainingSpec;

constexpr double kMaxBucketMB = 1e6;

constexpr std::initializer_list<Precision> kComputePrecisions = {Precision::Fp32, Precision::Tf32,  Precision::Bf16,
                                                                 Precision::Fp16, Precision::Fp8,   Precision::Mxfp8,
                                                                 Precision::Fp4,  Precision::Mxfp4};
constexpr std::initializer_list<Precision> kWeightPrecisions = {Precision::Fp32, Precision::Bf16, Precision::Fp16,
                                                                Precision::Fp8};
constexpr std::initializer_list<Precision> kGradPrecisions = {Precision::Fp32, Precision::Bf16, Precision::Fp16};
constexpr std::initializer_list<Precision> kStatePrecisions = {Precision::Fp32, Precision::Bf16, Precision::Fp16,
                                                               Precision::Int8};


// training.fp8 names the linear layers' GEMM precision; the rest computes in training.precision, which must be
// the 16-bit format fp8 training keeps.
void check_fp8(const YamlMap& m, const TrainingSpec& t) {
  if (t.fp8 == workloads::Fp8::None || t.precision == Precision::Bf16 || t.precision == Precision::Fp16) return;
  m.fail("fp8", std::string(to_string(t.fp8)),
         fmt::format("needs a 16-bit training.precision for what does not run in fp8 (it is {}), so not", to_string(t.precision)),
         "training.precision bf16 or fp16 with fp8, or fp8: none");
}

// training.recompute_modules: what selective recomputation recomputes (Megatron-Core's --recompute-modules,
// default [core_attn]); with recompute none or full it can only be absent or empty.
void read_recompute_modules(const YamlMap& m, TrainingSpec& t) {
  const auto names = m.names(
      "recompute_modules", [](std::string_view n) { return workloads::parse_recompute_module(n).has_value(); },
      workloads::kRecomputeModuleNames);
  if (!names) return;
  const std::string shown = names->empty() ? "[]" : fmt::format("[{}]", fmt::join(*names, ", "));
  if (t.recompute != workloads::Recompute::Selective) {
    if (names->empty()) return;
    m.fail("recompute_modules", shown,
           fmt::format("chooses what selective recomputation recomputes, but training.recompute is {}:",
                       to_string(t.recompute)),
           "training.recompute: selective with it, or recompute_modules: [] or absent");
  }
  if (names->empty())
    m.fail("recompute_modules", shown, "selects nothing for training.recompute: selective to recompute:",
           fmt::format("at least one of {}, or training.recompute: none", workloads::kRecomputeModuleNames));
  t.recompute_modules = 0;
  for (const std::string& n : *names) t.recompute_modules |= bit(*workloads::parse_recompute_module(n));
}

// A key that is either a switch or a map of settings, given as a switch: its value, or the one-line error that
// names both forms.
std::optional<bool> switch_or_map(const YamlMap& m, const std::string& key, const std::string& allowed) {
  if (m.is_list(key)) m.fail(key, "[...]", "is neither a switch nor a map:", allowed);
  try {
    return m.boolean(key);
  } catch (const InputError&) {
    m.fail(key, m.text(key).value_or(""), "is neither a switch nor a map:", allowed);
  }
}

// training.lora: {rank, targets}, either left out for the framework's defaults (workloads::lora_defaults); `{}` or
// `true` alone is LoRA at those defaults, `false` none.
void read_lora(const YamlMap& m, TrainingSpec& t) {
  if (!m.has("lora")) return;
  if (!m.is_map("lora")) {
    const std::optional<bool> on = switch_or_map(m, "lora", "true, false, or {rank, targets}");
    if (on == std::optional<bool>(true)) t.lora = workloads::lora_defaults(t.framework);
    return;
  }
  const YamlMap l = m.map("lora");
  l.allow_only({"rank", "targets"});
  const workloads::LoraSpec defaults = workloads::lora_defaults(t.framework);
  t.lora.rank = read_int(l, "rank", defaults.rank, 1, 65536);
  t.lora.targets = defaults.targets;
  const auto names = l.names("targets", [](std::string_view n) { return workloads::parse_lora_target(n).has_value(); },
                             workloads::kLoraTargetNames);
  if (!names) return;
  if (names->empty())
    l.fail("targets", "[]", "adapts no layer:", fmt::format("at least one of {}, or no training.lora", workloads::kLoraTargetNames));
  t.lora.targets = 0;
  for (const std::string& n : *names) t.lora.targets |= bit(*workloads::parse_lora_target(n));
}

// training.zero_pp: true (all three), false, or {qwz, hpz, qgz}, each false unless written true.
void read_zero_pp(const YamlMap& m, TrainingSpec& t) {
  if (!m.has("zero_pp")) return;
  if (!m.is_map("zero_pp")) {
    const bool on = switch_or_map(m, "zero_pp", "true, false, or {qwz, hpz, qgz}").value_or(false);
    t.zero_pp = {on, on, on};
    return;
  }
  const YamlMap z = m.map("zero_pp");
  z.allow_only({"qwz", "hpz", "qgz"});
  t.zero_pp.qwz = z.boolean("qwz").value_or(false);
  t.zero_pp.hpz = z.boolean("hpz").value_or(false);
  t.zero_pp.qgz = z.boolean("qgz").value_or(false);
}

}  // namespace

TrainingSpec read_training(const YamlMap& m) {
  m.allow_only({"framework", "global_batch", "micro_batch", "precision", "weight_dtype", "grad_dtype",
                "master_weights", "optimizer", "optimizer_dtype", "recompute", "sequence_parallel", "dp_bucket_MB",
                "overlap_grad_reduce", "dp_overlap", "zero3_prefetch", "attention", "cross_entropy_fusion",
                "cross_entropy_fusion_impl", "fp8", "tp_backward_overlap", "tp_comm_overlap", "distributed_optimizer",
                "overlap_param_gather", "tokens", "steps", "moe_dispatcher", "cp_comm", "recompute_modules",
                "overlap_moe_expert_parallel_comm", "overlap_p2p_comm", "offload_layers", "lora", "zero_pp"});
  if (m.has("tokens") && m.has("steps"))
    m.fail("steps", m.text("steps").value_or(""), "gives the run's length a second time beside training.tokens:",
           "training.tokens or training.steps, not both");
  if (m.has("overlap_grad_reduce") && m.has("dp_overlap"))
    m.fail("dp_overlap", "dp_overlap: " + m.text("dp_overlap").value_or(""),
           "is training.overlap_grad_reduce's old name and cannot be given beside it: remove",
           "overlap_grad_reduce: true | false, alone");
  if (!m.has("global_batch")) m.fail("global_batch", "", "missing required key", "sequences per step, an integer >= 1");
  TrainingSpec t = workloads::training_defaults(read_precision(m, "precision", Precision::Bf16, kComputePrecisions));
  workloads::apply_framework(t, read_enum(m, "framework", workloads::Framework::MegatronCore,
                                          workloads::parse_framework, workloads::kFrameworkNames));
  t.global_batch = read_int(m, "global_batch", t.global_batch, 1, kMaxSequences);
  if (!is_auto(m, "micro_batch")) t.micro_batch = read_int(m, "micro_batch", t.micro_batch, 1, kMaxSequences);
  t.weight_dtype = read_precision(m, "weight_dtype", t.weight_dtype, kWeightPrecisions);
  t.grad_dtype = read_precision(m, "grad_dtype", t.grad_dtype, kGradPrecisions);
  t.master_weights = m.boolean("master_weights").value_or(t.master_weights);
  t.optimizer = read_enum(m, "optimizer", t.optimizer, workloads::parse_optimizer, workloads::kOptimizerNames);
  t.optimizer_dtype = read_precision(m, "optimizer_dtype", t.optimizer_dtype, kStatePrecisions);
  if (is_auto(m, "recompute") && m.has("recompute_modules"))
    m.fail("recompute_modules", "[...]",
           "chooses what selective recomputation recomputes, and training.recompute is auto, which may choose none:",
           "training.recompute: selective with it, or no recompute_modules");
  if (!is_auto(m, "recompute"))
    t.recompute = read_enum(m, "recompute", t.recompute, workloads::parse_recompute, workloads::kRecomputeNames);
  read_recompute_modules(m, t);
  if (!is_auto(m, "offload_layers")) t.offload_layers = read_int(m, "offload_layers", 0, 0, kMaxLayers);
  t.sequence_parallel = m.boolean("sequence_parallel").value_or(t.sequence_parallel);
  if (const auto mb = m.number("dp_bucket_MB", 0.0, false, kMaxBucketMB)) t.dp_bucket = Bytes(*mb * 1e6);
  t.dp_overlap = m.boolean("dp_overlap").value_or(m.boolean("overlap_grad_reduce").value_or(t.dp_overlap));
  t.zero3_prefetch = read_enum(m, "zero3_prefetch", t.zero3_prefetch, workloads::parse_zero3_prefetch,
                               workloads::kZero3PrefetchNames);
  t.attention = read_enum(m, "attention", t.attention, workloads::parse_attention_kernel, workloads::kAttentionKernelNames);
  t.cross_entropy_fusion = m.boolean("cross_entropy_fusion").value_or(t.cross_entropy_fusion);
  t.cross_entropy_fusion_impl = read_enum(m, "cross_entropy_fusion_impl", t.cross_entropy_fusion_impl,
                                          workloads::parse_loss_fusion, workloads::kLossFusionNames);
  t.fp8 = read_enum(m, "fp8", t.fp8, workloads::parse_fp8, workloads::kFp8Names);
  check_fp8(m, t);
  t.moe_dispatcher = read_enum(m, "moe_dispatcher", t.moe_dispatcher, workloads::parse_moe_dispatcher,
                               workloads::kMoeDispatcherNames);
  t.cp_comm = read_enum(m, "cp_comm", t.cp_comm, workloads::parse_cp_comm, workloads::kCpCommNames);
  t.overlap_moe_expert_parallel_comm =
      m.boolean("overlap_moe_expert_parallel_comm").value_or(t.overlap_moe_expert_parallel_comm);
  t.overlap_p2p_comm = m.boolean("overlap_p2p_comm");
  if (t.overlap_p2p_comm == std::optional<bool>(false) && t.overlap_moe_expert_parallel_comm)
    m.fail("overlap_p2p_comm", "false",
           "would block each pipeline exchange, and overlap_moe_expert_parallel_comm's combined 1F1B exchanges "
           "asynchronously, so not",
           "overlap_p2p_comm: true or absent beside overlap_moe_expert_parallel_comm");
  t.tp_backward_overlap = m.boolean("tp_backward_overlap").value_or(t.tp_backward_overlap);
  t.tp_comm_overlap = m.boolean("tp_comm_overlap").value_or(t.tp_comm_overlap);
  t.distributed_optimizer = m.boolean("distributed_optimizer").value_or(t.distributed_optimizer);
  t.overlap_param_gather = m.boolean("overlap_param_gather").value_or(t.overlap_param_gather);
  t.tokens = m.number("tokens", 0.0, false, 1e18);
  if (const auto steps = m.integer("steps", 1, 1'000'000'000'000)) t.steps = *steps;
  read_lora(m, t);
  read_zero_pp(m, t);
  return t;
}

}  // namespace dtsim::scenario::detail
