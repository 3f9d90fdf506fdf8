#include "workloads/training.hpp"

#include "topology/name_table.hpp"

namespace dtsim::workloads {
namespace {

using topology::NameTable;
using topology::name_of;
using topology::value_of;

constexpr NameTable<Optimizer, 3> kOptimizers{{{Optimizer::AdamW, "adamw"},
                                               {Optimizer::Adafactor, "adafactor"},
                                               {Optimizer::Sgd, "sgd"}}};
constexpr NameTable<Recompute, 4> kRecomputes{{{Recompute::None, "none"},
                                               {Recompute::Selective, "selective"},
                                               {Recompute::Full, "full"},
                                               {Recompute::Op, "op"}}};
constexpr NameTable<RecomputeModule, 7> kRecomputeModules{{{RecomputeModule::CoreAttn, "core_attn"},
                                                            {RecomputeModule::MoeAct, "moe_act"},
                                                            {RecomputeModule::Layernorm, "layernorm"},
                                                            {RecomputeModule::MlaUpProj, "mla_up_proj"},
                                                            {RecomputeModule::Mlp, "mlp"},
                                                            {RecomputeModule::Moe, "moe"},
                                                            {RecomputeModule::SharedExperts, "shared_experts"}}};
constexpr NameTable<LoraTarget, 4> kLoraTargets{{{LoraTarget::Qkv, "qkv"},
                                                {LoraTarget::Proj, "proj"},
                                                {LoraTarget::Fc1, "fc1"},
                                                {LoraTarget::Fc2, "fc2"}}};
// LoRA's defaults: rank 32 (Megatron-Bridge's LoRA class, src/megatron/bridge/peft/lora.py: dim 32; NeMo 1.x's
// launcher, conf/peft/llama/sft.yaml: adapter_dim 32) on every linear layer of the block (Megatron-Bridge's
// target_modules: linear_qkv, linear_proj, linear_fc1, linear_fc2), or under nemo on Q K V alone: NeMo's own
// default (nemo/collections/nlp/parts/peft_config.py: target_modules ("attention_qkv",)) and what NVIDIA's LoRA
// performance recipes adapt (Megatron-Bridge scripts/performance/configs/llama/llama3_llm_finetune.py: "only
// apply LoRA to QKV"), the adapters of the other three costing more than their weights suggest (an extra pass
// over each layer's input and output, below).
constexpr int kLoraRank = 32;
constexpr NameTable<Framework, 7> kFrameworks{{{Framework::MegatronCore, "megatron-core"},
                                               {Framework::Nemo, "nemo"},
                                               {Framework::Megatron2021, "megatron-2021"},
                                               {Framework::Megatron2022, "megatron-2022"},
                                               {Framework::DeepSpeed, "deepspeed"},
                                               {Framework::DeepSpeed2021, "deepspeed-2021"},
                                               {Framework::Torchtitan, "torchtitan"}}};
constexpr NameTable<AttentionKernel, 3> kAttentionKernels{{{AttentionKernel::Unfused, "unfused"},
                                                           {AttentionKernel::Flash, "flash"},
                                                           {AttentionKernel::Flash2, "flash2"}}};
constexpr NameTable<Fp8, 5> kFp8s{{{Fp8::None, "none"},
                                   {Fp8::Hybrid, "hybrid"},
                                   {Fp8::E4m3, "e4m3"},
                                   {Fp8::Mxfp8, "mxfp8"},
                                   {Fp8::Nvfp4, "nvfp4"}}};
constexpr NameTable<MoeDispatcher, 2> kMoeDispatchers{{{MoeDispatcher::AllToAll, "alltoall"},
                                                        {MoeDispatcher::DeepEp, "deepep"}}};
constexpr NameTable<CpComm, 2> kCpComms{{{CpComm::P2p, "p2p"}, {CpComm::AllGather, "all_gather"}}};
constexpr NameTable<LossFusion, 2> kLossFusions{{{LossFusion::Native, "native"}, {LossFusion::Te, "te"}}};
constexpr NameTable<Zero3Prefetch, 3> kZero3Prefetches{{{Zero3Prefetch::Auto, "auto"},
                                                        {Zero3Prefetch::Layer, "layer"},
                                                        {Zero3Prefetch::None, "none"}}};

// The names of the members of a bit set, in the table's order (an enum whose values are its bits).
template <typename Enum, std::size_t N>
std::vector<std::string_view> names_of_bits(const NameTable<Enum, N>& table, unsigned bits) {
  std::vector<std::string_view> names;
  for (const auto& [value, name] : table)
    if ((bits & static_cast<unsigned>(value)) != 0) names.push_back(name);
  return names;
}

}  // namespace

std::string_view to_string(Optimizer o) { return name_of(kOptimizers, o); }
std::string_view to_string(Recompute r) { return name_of(kRecomputes, r); }
std::optional<Optimizer> parse_optimizer(std::string_view name) { return value_of(kOptimizers, name); }
std::optional<Recompute> parse_recompute(std::string_view name) { return value_of(kRecomputes, name); }
std::string_view to_string(RecomputeModule m) { return name_of(kRecomputeModules, m); }
std::optional<RecomputeModule> parse_recompute_module(std::string_view name) { return value_of(kRecomputeModules, name); }
std::vector<std::string_view> recompute_module_names(unsigned modules) {
  return names_of_bits(kRecomputeModules, modules);
}
std::optional<LoraTarget> parse_lora_target(std::string_view name) { return value_of(kLoraTargets, name); }
std::vector<std::string_view> lora_target_names(unsigned targets) { return names_of_bits(kLoraTargets, targets); }
LoraSpec lora_defaults(Framework f) {
  if (f == Framework::Nemo) return {kLoraRank, bit(LoraTarget::Qkv)};
  return {kLoraRank, bit(LoraTarget::Qkv) | bit(LoraTarget::Proj) | bit(LoraTarget::Fc1) | bit(LoraTarget::Fc2)};
}
std::string_view to_string(Zero3Prefetch p) { return name_of(kZero3Prefetches, p); }
std::optional<Zero3Prefetch> parse_zero3_prefetch(std::string_view name) { return value_of(kZero3Prefetches, name); }

std::string_view to_string(Framework f) { return name_of(kFrameworks, f); }
std::optional<Framework> parse_framework(std::string_view name) { return value_of(kFrameworks, name); }
std::string_view to_string(AttentionKernel a) { return name_of(kAttentionKernels, a); }
std::optional<AttentionKernel> parse_attention_kernel(std::string_view name) { return value_of(kAttentionKernels, name); }
std::string_view to_string(Fp8 f) { return name_of(kFp8s, f); }
std::optional<Fp8> parse_fp8(std::string_view name) { return value_of(kFp8s, name); }

double activation_element_bytes(Precision p) {
  return low_float(p) ? 2.0 : bytes_per_element(p);
}

Precision low_gemm_precision(Fp8 f) {
  if (f == Fp8::Mxfp8) return Precision::Mxfp8;
  if (f == Fp8::Nvfp4) return Precision::Fp4;
  return Precision::Fp8;
}
std::string_view to_string(CpComm c) { return name_of(kCpComms, c); }
std::optional<CpComm> parse_cp_comm(std::string_view name) { return value_of(kCpComms, name); }
std::string_view to_string(LossFusion f) { return name_of(kLossFusions, f); }
std::optional<LossFusion> parse_loss_fusion(std::string_view name) { return value_of(kLossFusions, name); }
bool te_loss(const TrainingSpec& t) { return t.cross_entropy_fusion && t.cross_entropy_fusion_impl == LossFusion::Te; }
std::string_view to_string(MoeDispatcher d) { return name_of(kMoeDispatchers, d); }
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name) { return value_of(kMoeDispatchers, name); }

bool megatron_core_based(Framework f) { return f == Framework::MegatronCore || f == Framework::Nemo; }
bool deepspeed_based(Framework f) { return f == Framework::DeepSpeed || f == Framework::DeepSpeed2021; }

bool framework_interleaves(Framework f, int layers, int pp, int vpp, int most_unequal) {
  if (vpp == 1) return true;
  if (pp <= 1 || pp * vpp > layers) return false;
  // DeepSpeed's pipeline engine has one schedule, 1F1B (runtime/pipe/schedule.py TrainSchedule): no interleaving.
  if (deepspeed_based(f)) return false;
  // Megatron-LM 2021 and 2022 interleave only past two stages (arguments.py: "pipeline-model-parallel size should
  // be greater than 2 with interleaved schedule"), and their virtual stages hold equal whole numbers of layers (the
  // layers of a stage divisible by --num-layers-per-virtual-pipeline-stage).
  const bool old = f == Framework::Megatron2021 || f == Framework::Megatron2022;
  if (old) return pp > 2 && layers % (pp * vpp) == 0;
  // Megatron-Core places any number of layers in each virtual stage (--pipeline-model-parallel-layout,
  // "Et*2|(tt|)*22t|(tt|)*7mL" in NVIDIA's Megatron-MoE-ModelZoo DeepSeek-V3 scripts), as Meta's Llama 3 405B run
  // did (126 layers over 16 stages, one fewer on the first and last); torchtitan's schedules take any split.
  // Unequal splits are spread as the plan spreads them (the remainder to the central stages: plan.cpp
  // stage_layers), up to `most_unequal` virtual stages a rank.
  return layers % (pp * vpp) == 0 || vpp <= most_unequal;
}

void apply_framework(TrainingSpec& t, Framework f) {
  t.framework = f;
  const bool core = megatron_core_based(f);
  t.attention = core ? AttentionKernel::Flash
                     : f == Framework::Torchtitan ? AttentionKernel::Flash2 : AttentionKernel::Unfused;
  t.cross_entropy_fusion = f == Framework::Nemo;
  // NeMo's benchmark recipes take Transformer Engine's loss (Megatron-Bridge scripts/performance/utils/overrides.py:
  // cross_entropy_fusion_impl "te"); Megatron-Core's own default is native.
  t.cross_entropy_fusion_impl = f == Framework::Nemo ? LossFusion::Te : LossFusion::Native;
  t.tp_backward_overlap = core || f == Framework::Megatron2022;
  t.distributed_optimizer = core;
  t.overlap_param_gather = core;
  t.zero3_prefetch_ahead = f != Framework::DeepSpeed2021;
  // Gradients reduced in the 16-bit precision: NeMo's recipes (grad_reduce_in_fp32 False), and DeepSpeed, whose
  // communication_data_type is the model's 16-bit type unless configured (deepspeed/runtime/engine.py) and whose
  // ZeRO-3 reduce-scatters the 16-bit gradients into partitions of that type (zero/stage3.py: grad partitions in
  // gradient_accumulation_dtype, the model's).
  const bool sixteen = t.precision == Precision::Bf16 || t.precision == Precision::Fp16;
  const bool deepspeed = deepspeed_based(f);
  if ((f == Framework::Nemo || deepspeed) && sixteen) t.grad_dtype = t.precision;
  // Megatron-LM reduces gradients in the parameters' type unless --accumulate-allreduce-grads-in-fp32 (default
  // off), which it forces on for bf16 (megatron/training/arguments.py, since 2021: "bfloat16 requires gradient
  // accumulation and all-reduce to be done in fp32"): fp16 training reduces fp16 gradients, bf16 fp32 ones.
  const bool megatron = f == Framework::Megatron2021 || f == Framework::Megatron2022 || f == Framework::MegatronCore;
  if (megatron && t.precision == Precision::Fp16) t.grad_dtype = Precision::Fp16;
  t.cp_comm = f == Framework::Torchtitan ? CpComm::AllGather : CpComm::P2p;
}

double bytes_per_element(Precision p) {
  switch (p) {
    case Precision::Fp64: return 8.0;
    case Precision::Fp32:
    case Precision::Tf32: return 4.0;
    case Precision::Bf16:
    case Precision::Fp16: return 2.0;
    case Precision::Fp8:
    case Precision::Int8: return 1.0;
    case Precision::Int4: return 0.5;
    case Precision::Mxfp8: return 1.0 + 1.0 / 32;   // one 1-byte E8M0 scale per 32 elements (OCP MX v1.0)
    case Precision::Fp4: return 0.5 + 1.0 / 16;     // one 1-byte E4M3 scale per 16 elements (NVFP4)
    case Precision::Mxfp4: return 0.5 + 1.0 / 32;   // one 1-byte E8M0 scale per 32 elements (OCP MX v1.0)
  }
  DTSIM_ASSERT(false, "precision missing from bytes_per_element");
}

double optimizer_state_bytes_per_param(const TrainingSpec& t) {
  const double b = bytes_per_element(t.optimizer_dtype);
  switch (t.optimizer) {
    case Optimizer::AdamW: return 2.0 * b;      // first and second moments
    case Optimizer::Adafactor: return b;        // first moment; the factored second moment is rows + columns
    case Optimizer::Sgd: return b;              // momentum
  }
  DTSIM_ASSERT(false, "optimizer missing from optimizer_state_bytes_per_param");
}

TrainingSpec training_defaults(Precision compute) {
  TrainingSpec t;
  t.precision = compute;
  const bool low = compute == Precision::Bf16 || compute == Precision::Fp16 || low_float(compute);
  // fp8 training (Transformer Engine) keeps bf16 weights and casts per GEMM.
  t.weight_dtype = compute == Precision::Fp16 ? Precision::Fp16 : (low ? Precision::Bf16 : Precision::Fp32);
  t.master_weights = low;
  return t;
}

}  // namespace dtsim::workloads
