// The flags and configuration files of the frameworks `dtsim plan --emit` writes for (plan_emit_flags.hpp).
//
// torchtitan: its train.py under torchrun, the llama3 config file of the model's flavour with the plan's options
// over it, as torchtitan/config_manager.py names them (pytorch/torchtitan 9dec370a, the version the validation
// table cites; tests/data/frameworks/torchtitan-arguments.txt).
// megatron: Megatron-LM's pretrain_gpt.py under torchrun, one task per node, flags as megatron/training/arguments.py
// names them (NVIDIA/Megatron-LM core_r0.11.0; tests/data/frameworks/megatron-lm-arguments.txt lists them and the
// test checks every flag written against it). Data and tokenizer are left to the user: the script trains on
// Megatron's mock data with a null tokenizer of the model's vocabulary, which runs as written.
// deepspeed: Megatron-DeepSpeed's pretrain_gpt.py (microsoft/Megatron-DeepSpeed f4157bea) under torchrun with a
// DeepSpeed configuration file the script writes (keys of microsoft/DeepSpeed 38327e07f), as the repository's
// examples_deepspeed/pretrain_llama2_distributed.sh runs it; the flags and keys are checked against
// tests/data/frameworks/megatron-deepspeed-arguments.txt and deepspeed-config-keys.txt. It has no mock data: the
// script asks for a dataset in Megatron's format (DATA).
// nemo: Megatron-Bridge's scripts/training/run_recipe.py (NVIDIA-NeMo/Megatron-Bridge 067f987d, NeMo's LLM training
// since 2025), one task a GPU as its own Slurm launcher runs it, the Llama 3 recipe of the model with the plan's
// overrides (Hydra's dotted keys, strict: tests/data/frameworks/megatron-bridge-keys.txt lists them), on mock data.
#include "sim/drivers/plan_emit_flags.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "topology/error.hpp"
#include "workloads/training.hpp"

namespace dtsim::drivers::emit {

using workloads::Recompute;

[[noreturn]] void cannot(std::string_view framework, const std::string& what) {
  throw InputError("--emit", std::string(framework), "cannot run the best plan: " + what, "a plan it has flags for");
}

// What no Megatron-style launcher here takes: a model given as layers, and multi-latent attention (`mla_why`).
void check_transformer(std::string_view framework, const workloads::ModelSpec& m, const char* mla_why) {
  if (m.kind != workloads::ModelKind::Transformer) cannot(framework, "a model given as a list of layers");
  if (m.mla()) cannot(framework, mla_why);
}

namespace {

// What one framework's flags are written from: its name (for the refusals) and the job's model, training and plan.
struct Job {
  std::string_view name;
  const workloads::ModelSpec& m;
  const workloads::TrainingSpec& t;
  const workloads::ParallelPlan& p;
};

// The model's shape as the flags of Megatron-LM (megatron/training/arguments.py) or of its fork Megatron-DeepSpeed
// (megatron/arguments.py), which spells grouped-query attention, rotary positions and RMSNorm its own way.
enum class Dialect { Megatron, MegatronDeepSpeed };

void model_flags(const workloads::ModelSpec& m, Dialect d, std::vector<std::string>& f) {
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  const bool lm = d == Dialect::Megatron;
  add("--num-layers", m.layers);
  add("--hidden-size", m.hidden);
  add("--num-attention-heads", m.heads);
  add("--ffn-hidden-size", m.ffn_hidden);
  if (m.kv_heads > 0 && m.kv_heads < m.heads) {
    if (lm) f.emplace_back("--group-query-attention");
    add(lm ? "--num-query-groups" : "--num-key-value-heads", m.kv_heads);
  }
  if (m.head_size > 0 && m.head_size * m.heads != m.hidden) add("--kv-channels", m.head_size);
  add("--seq-length", m.seq_length);
  add("--max-position-embeddings", m.seq_length);
  if (m.positions == workloads::Positions::Rotary) {
    if (lm) add("--position-embedding-type", "rope");
    else f.emplace_back("--use-rotary-position-embeddings");
  }
  if (m.norm == workloads::Norm::RmsNorm) add("--normalization", lm ? "RMSNorm" : "rmsnorm");
  if (m.activation == workloads::Activation::Swiglu) f.emplace_back("--swiglu");
  if (!m.bias) f.emplace_back("--disable-bias-linear");
  if (!m.tied_embeddings) f.emplace_back("--untie-embeddings-and-output-weights");
  add("--hidden-dropout", m.hidden_dropout);
  add("--attention-dropout", m.attention_dropout);
}

// What both Megatron launchers end with, so that the script runs as written: a null tokenizer of the model's
// vocabulary and a short run, logged at each step.
void short_run_flags(const workloads::ModelSpec& m, std::vector<std::string>& f) {
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  add("--tokenizer-type", "NullTokenizer");
  add("--vocab-size", m.vocab);
  add("--train-iters", 100);
  add("--lr", "1.0e-4");
  add("--log-interval", 1);
  add("--eval-iters", 0);
}

}  // namespace

std::vector<std::string> megatron_flags(const workloads::Workload& w) {
  const auto& [kName, m, t, p] = Job{"megatron", w.model, *w.training, w.plan};
  check_transformer(kName, m, "multi-latent attention (its flags came after core_r0.11.0)");
  if (p.zero >= 2) cannot(kName, fmt::format("ZeRO stage {} (Megatron-LM shards optimizer states only)", p.zero));
  if (t.recompute == Recompute::Op) cannot(kName, "per-op recomputation (torchtitan's)");
  if (t.offload_layers > 0) cannot(kName, "activation offloading (core_r0.11.0's arguments.py has no flag for it)");
  if (t.lora.on()) cannot(kName, "LoRA (Megatron-LM has no adapters)");
  if (t.zero_pp.any()) cannot(kName, "ZeRO++ (DeepSpeed's)");
  if (!p.layers_per_stage.empty()) cannot(kName, "uneven pipeline stages");
  std::vector<std::string> f;
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  // The plan.
  add("--tensor-model-parallel-size", p.tp);
  add("--pipeline-model-parallel-size", p.pp);
  if (p.vpp > 1) {
    if (m.layers % (p.pp * p.vpp) != 0)
      cannot(kName, fmt::format("{} layers in {} x {} unequal virtual stages (core_r0.11.0 splits equally: "
                                "--num-layers-per-virtual-pipeline-stage; no --pipeline-model-parallel-layout)",
                                m.layers, p.pp, p.vpp));
    add("--num-layers-per-virtual-pipeline-stage", m.layers / (p.pp * p.vpp));
  }
  if (p.cp > 1) add("--context-parallel-size", p.cp);
  if (p.ep > 1) add("--expert-model-parallel-size", p.ep);
  if (p.etp > 0 && p.etp != p.tp) add("--expert-tensor-parallel-size", p.etp);
  if (t.sequence_parallel) f.emplace_back("--sequence-parallel");
  add("--micro-batch-size", t.micro_batch);
  add("--global-batch-size", t.global_batch);
  const bool distributed_optimizer = p.zero == 1 || t.distributed_optimizer;
  if (distributed_optimizer) f.emplace_back("--use-distributed-optimizer");
  if (t.dp_overlap) f.emplace_back("--overlap-grad-reduce");
  if (t.overlap_param_gather && distributed_optimizer) f.emplace_back("--overlap-param-gather");
  if (t.tp_comm_overlap) f.emplace_back("--tp-comm-overlap");
  if (t.recompute == Recompute::Selective) add("--recompute-granularity", "selective");
  if (t.recompute == Recompute::Full) {
    add("--recompute-granularity", "full");
    add("--recompute-method", "uniform");
    add("--recompute-num-layers", 1);
  }
  // The loss: core_r0.11.0 fuses it its native way only (--cross-entropy-fusion-impl came with Megatron-LM
  // 0f60adbd, 2025-03).
  if (workloads::te_loss(t))
    cannot(kName, "Transformer Engine's fused loss (cross_entropy_fusion_impl te; core_r0.11.0 has no "
                  "--cross-entropy-fusion-impl)");
  if (t.cross_entropy_fusion) f.emplace_back("--cross-entropy-loss-fusion");
  // Precision.
  if (t.precision == topology::Precision::Bf16) f.emplace_back("--bf16");
  else if (t.precision == topology::Precision::Fp16) f.emplace_back("--fp16");
  else cannot(kName, "training in a precision other than bf16 or fp16");
  if (t.fp8 == workloads::Fp8::Hybrid) add("--fp8-format", "hybrid");
  if (t.fp8 == workloads::Fp8::E4m3) add("--fp8-format", "e4m3");
  if (t.fp8 == workloads::Fp8::Mxfp8 || t.fp8 == workloads::Fp8::Nvfp4)
    cannot(kName, "block-scaled (MXFP8, NVFP4) training (core_r0.11.0, whose flags these are, has no such recipe)");
  model_flags(m, Dialect::Megatron, f);
  if (m.moe()) {
    add("--num-experts", m.experts);
    add("--moe-router-topk", m.experts_per_token);
    if (m.expert_ffn_hidden > 0) add("--moe-ffn-hidden-size", m.expert_ffn_hidden);
    if (m.shared_experts > 0)
      add("--moe-shared-expert-intermediate-size", m.shared_experts * (m.expert_ffn_hidden > 0 ? m.expert_ffn_hidden : m.ffn_hidden));
    f.emplace_back("--moe-grouped-gemm");
  }
  // What runs it as written: mock data.
  f.emplace_back("--mock-data");
  short_run_flags(m, f);
  return f;
}


std::vector<std::string> deepspeed_flags(const workloads::Workload& w) {
  const auto& [kName, m, t, p] = Job{"deepspeed", w.model, *w.training, w.plan};
  check_transformer(kName, m, "multi-latent attention");
  if (m.moe() || p.ep > 1) cannot(kName, "experts (Megatron-DeepSpeed's are DeepSpeed-MoE's, not modelled)");
  if (p.cp > 1) cannot(kName, "context parallelism (its sequence parallelism is Ulysses')");
  if (p.vpp > 1) cannot(kName, "interleaved virtual stages (DeepSpeed's pipeline engine has none)");
  if (p.fsdp != workloads::Fsdp::None) cannot(kName, "PyTorch FSDP (DeepSpeed shards with ZeRO stages)");
  if (t.lora.on()) cannot(kName, "LoRA (Megatron-DeepSpeed has no adapters)");
  if (t.offload_layers > 0) cannot(kName, "Megatron-Core's activation offloading");
  if (t.recompute == Recompute::Op) cannot(kName, "per-op recomputation (torchtitan's)");
  if (!p.layers_per_stage.empty()) cannot(kName, "uneven pipeline stages");
  if (t.fp8 != workloads::Fp8::None) cannot(kName, "fp8 training");
  const bool bf16 = t.precision == topology::Precision::Bf16;
  if (!bf16 && t.precision != topology::Precision::Fp16) cannot(kName, "training in a precision other than bf16 or fp16");
  std::vector<std::string> f;
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  add("--tensor-model-parallel-size", p.tp);
  add("--pipeline-model-parallel-size", p.pp);
  // Without a pipeline, the GPT model itself rather than DeepSpeed's pipeline module (pretrain_gpt.py), which ZeRO
  // stages 2 and 3 need.
  if (p.pp == 1) f.emplace_back("--no-pipeline-parallel");
  if (t.sequence_parallel) f.emplace_back("--sequence-parallel");
  add("--micro-batch-size", t.micro_batch);
  add("--global-batch-size", t.global_batch);
  if (t.recompute == Recompute::Selective) add("--recompute-granularity", "selective");
  if (t.recompute == Recompute::Full) {
    f.emplace_back("--deepspeed-activation-checkpointing");
    add("--recompute-granularity", "full");
    add("--recompute-method", "uniform");
    add("--recompute-num-layers", 1);
  }
  f.emplace_back(bf16 ? "--bf16" : "--fp16");
  if (t.attention == workloads::AttentionKernel::Flash || t.attention == workloads::AttentionKernel::Flash2)
    f.emplace_back("--use-flash-attn-v2");
  model_flags(m, Dialect::MegatronDeepSpeed, f);
  add("--data-path", "\"$DATA\"");
  short_run_flags(m, f);
  f.emplace_back("--deepspeed");
  add("--deepspeed_config", "\"$config\"");
  add("--zero-stage", p.zero);
  return f;
}

// The DeepSpeed configuration: the batch, the ZeRO stage with the plan's overlap and bucket (in elements of the
// gradients' type), the precision.
std::string deepspeed_config(const workloads::Workload& w) {
  const auto& t = *w.training;
  const double bucket = t.dp_bucket.value() / workloads::bytes_per_element(t.grad_dtype);
  // ZeRO++ (DeepSpeed's docs/_tutorials/zeropp.md): its three switches, hpZ's partition the node's ranks.
  const std::string zero_pp =
      t.zero_pp.any()
          ? fmt::format(",\n    \"zero_quantized_weights\": {},\n    \"zero_hpz_partition_size\": {},\n"
                        "    \"zero_quantized_gradients\": {}",
                        t.zero_pp.qwz ? "true" : "false", t.zero_pp.hpz ? workloads::node_dp_ranks(w) : 1,
                        t.zero_pp.qgz ? "true" : "false")
          : std::string();
  return fmt::format("{{\n"
                     "  \"train_batch_size\": {},\n"
                     "  \"train_micro_batch_size_per_gpu\": {},\n"
                     "  \"steps_per_print\": 1,\n"
                     "  \"gradient_clipping\": 1.0,\n"
                     "  \"zero_optimization\": {{\n"
                     "    \"stage\": {},\n"
                     "    \"overlap_comm\": {},\n"
                     "    \"reduce_bucket_size\": {:.0f}{}\n"
                     "  }},\n"
                     "  \"{}\": {{\"enabled\": true}}\n"
                     "}}\n",
                     t.global_batch, t.micro_batch, w.plan.zero, t.dp_overlap ? "true" : "false", bucket, zero_pp,
                     t.precision == topology::Precision::Bf16 ? "bf16" : "fp16");
}

// torchtitan's llama3 flavours (torchtitan/models/llama/__init__.py at 9dec370a): dtsim's presets of the same shape.
std::optional<std::pair<std::string, std::string>> torchtitan_flavour(const std::string& preset) {
  if (preset == "llama3-8b") return std::pair{"8B", "llama3_8b"};
  if (preset == "llama3-70b") return std::pair{"70B", "llama3_70b"};
  if (preset == "llama3-405b") return std::pair{"405B", "llama3_405b"};
  return std::nullopt;
}

std::vector<std::string> torchtitan_flags(const workloads::Workload& w, const std::string& config) {
  const auto& [kName, m, t, p] = Job{"torchtitan", w.model, *w.training, w.plan};
  const auto flavour = torchtitan_flavour(m.name);
  if (!flavour) cannot(kName, fmt::format("model '{}' (torchtitan's flavours: llama3-8b, llama3-70b, llama3-405b)", m.name));
  if (t.lora.on()) cannot(kName, "LoRA (torchtitan has no adapters)");
  if (t.zero_pp.any()) cannot(kName, "ZeRO++ (DeepSpeed's)");
  if (p.vpp > 1) cannot(kName, "interleaved virtual stages (its split points are given by hand)");
  if (p.ep > 1 || m.moe()) cannot(kName, "experts");
  if (t.offload_layers > 0) cannot(kName, "Megatron-Core's activation offloading");
  if (p.zero == 1 || p.zero == 2) cannot(kName, fmt::format("ZeRO stage {} (torchtitan shards with FSDP or replicates)", p.zero));
  if (p.tp > 1 && !t.sequence_parallel) cannot(kName, "tensor parallelism without sequence parallelism");
  if (t.recompute == Recompute::Selective) cannot(kName, "Megatron's selective recomputation (torchtitan's is per op or per layer)");
  if (t.precision != topology::Precision::Bf16) cannot(kName, "training in a precision other than bf16");
  const int local = t.global_batch / p.dp;
  if (p.pp == 1 && t.micro_batch != local)
    cannot(kName, "gradient accumulation (without a pipeline it runs a replica's batch in one pass)");
  std::vector<std::string> f;
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  add("--job.config_file", "\"$TORCHTITAN/train_configs/" + config + ".toml\"");
  add("--model.name", "llama3");
  add("--model.flavor", flavour->first);
  add("--training.data_parallel_shard_degree", p.zero == 3 ? p.dp : 1);
  add("--training.data_parallel_replicate_degree", p.zero == 3 ? 1 : p.dp);
  add("--training.tensor_parallel_degree", p.tp);
  if (t.tp_comm_overlap) f.emplace_back("--experimental.enable_async_tensor_parallel");
  if (p.pp > 1) {
    add("--experimental.pipeline_parallel_degree", p.pp);
    add("--experimental.pipeline_parallel_microbatches", local / t.micro_batch);
  }
  if (p.cp > 1) add("--experimental.context_parallel_degree", p.cp);
  add("--training.batch_size", local);
  add("--training.seq_len", m.seq_length);
  if (t.recompute == Recompute::None) add("--activation_checkpoint.mode", "none");
  if (t.recompute == Recompute::Full) add("--activation_checkpoint.mode", "full");
  if (t.recompute == Recompute::Op) {
    add("--activation_checkpoint.mode", "selective");
    add("--activation_checkpoint.selective_ac_option", "op");
  }
  if (t.fp8 == workloads::Fp8::Mxfp8 || t.fp8 == workloads::Fp8::Nvfp4)
    cannot(kName, "block-scaled (MXFP8, NVFP4) training (torchtitan's MX flags are not written here yet)");
  if (t.fp8 != workloads::Fp8::None) f.emplace_back("--float8.enable_float8_linear");
  f.emplace_back("--training.compile");
  add("--training.steps", 100);
  return f;
}
namespace {

// Megatron-Bridge's Llama 3 pretraining recipes (src/megatron/bridge/recipes/llama/llama3.py's names): dtsim's
// presets of the same shape, and whether the recipe holds comm_overlap and mixed_precision sections (the 70B and
// 405B ones; the 8B recipe has neither, and Hydra's strict overrides cannot reach into what is not there).
struct BridgeRecipe {
  std::string name;
  bool sections;
};

std::optional<BridgeRecipe> bridge_recipe(const std::string& preset) {
  if (preset == "llama3-8b") return BridgeRecipe{"llama3_8b_pretrain_config", false};
  if (preset == "llama3-70b") return BridgeRecipe{"llama3_70b_pretrain_config", true};
  if (preset == "llama3-405b") return BridgeRecipe{"llama31_405b_pretrain_config", true};
  return std::nullopt;
}

}  // namespace

std::optional<std::string> bridge_recipe_name(const std::string& preset) {
  const auto r = bridge_recipe(preset);
  return r ? std::optional<std::string>(r->name) : std::nullopt;
}

std::vector<std::string> bridge_overrides(const workloads::Workload& w) {
  const auto& [kName, m, t, p] = Job{"nemo", w.model, *w.training, w.plan};
  if (t.lora.on()) cannot(kName, "LoRA (the emitted script is a pre-training recipe; Megatron-Bridge's fine-tuning ones are not written)");
  if (t.zero_pp.any()) cannot(kName, "ZeRO++ (DeepSpeed's)");
  const auto recipe = bridge_recipe(m.name);
  if (!recipe)
    cannot(kName, fmt::format("model '{}' (Megatron-Bridge's Llama 3 recipes: llama3-8b, llama3-70b, llama3-405b)", m.name));
  if (p.zero >= 2 || p.fsdp != workloads::Fsdp::None) cannot(kName, "ZeRO stages 2 and 3 (Megatron-FSDP is not written)");
  if (t.recompute == Recompute::Op) cannot(kName, "per-op recomputation (torchtitan's)");
  if (!p.layers_per_stage.empty()) cannot(kName, "uneven pipeline stages");
  if (p.vpp > 1 && m.layers % (p.pp * p.vpp) != 0)
    cannot(kName, fmt::format("{} layers in {} x {} unequal virtual stages (Megatron-Core's "
                              "pipeline_model_parallel_layout is not written)", m.layers, p.pp, p.vpp));
  if (t.precision != topology::Precision::Bf16) cannot(kName, "training in a precision other than bf16");
  if (!recipe->sections && t.fp8 != workloads::Fp8::None) cannot(kName, "fp8 on the 8B recipe (its precision is a name)");
  if (!recipe->sections && t.tp_comm_overlap) cannot(kName, "TP communication overlap on the 8B recipe (no comm_overlap)");
  std::vector<std::string> f;
  const auto set = [&f](std::string_view key, const auto& value) { f.push_back(fmt::format("{}={}", key, value)); };
  const auto flag = [](bool b) { return b ? "true" : "false"; };
  set("model.transformer.tensor_model_parallel_size", p.tp);
  set("model.transformer.pipeline_model_parallel_size", p.pp);
  if (p.vpp > 1) set("model.transformer.virtual_pipeline_model_parallel_size", p.vpp);
  else set("model.transformer.virtual_pipeline_model_parallel_size", "null");
  set("model.transformer.context_parallel_size", p.cp);
  set("model.transformer.sequence_parallel", flag(t.sequence_parallel));
  set("train.micro_batch_size", t.micro_batch);
  set("train.global_batch_size", t.global_batch);
  set("dataset.seq_length", m.seq_length);
  // Recomputation: TransformerConfig wants a method and a layer count with full, none with selective.
  if (t.recompute == Recompute::None) set("model.transformer.recompute_granularity", "null");
  if (t.recompute == Recompute::Selective) {
    set("model.transformer.recompute_granularity", "selective");
    set("model.transformer.recompute_num_layers", "null");
  }
  if (t.recompute == Recompute::Full) {
    set("model.transformer.recompute_granularity", "full");
    set("model.transformer.recompute_method", "uniform");
    set("model.transformer.recompute_num_layers", 1);
  }
  // Activation offloading, as NVIDIA's GB200 recipes write it (perf_recipes/llama/gb200/llama3.py): the layers'
  // activations, not their weights.
  if (t.offload_layers > 0) {
    set("model.transformer.cpu_offloading", "true");
    set("model.transformer.cpu_offloading_weights", "false");
    set("model.transformer.cpu_offloading_num_layers", t.offload_layers);
  }
  // The distributed optimizer, in both places the container reads it (config.py makes them agree).
  const bool distributed = p.zero == 1 || t.distributed_optimizer;
  set("ddp.use_distributed_optimizer", flag(distributed));
  set("optimizer.use_distributed_optimizer", flag(distributed));
  // Overlaps: the comm_overlap section, where the recipe has one, decides over the ddp keys.
  const std::string_view where = recipe->sections ? "comm_overlap" : "ddp";
  set(fmt::format("{}.overlap_grad_reduce", where), flag(t.dp_overlap));
  set(fmt::format("{}.overlap_param_gather", where), flag(t.overlap_param_gather && distributed));
  if (recipe->sections) set("comm_overlap.tp_comm_overlap", flag(t.tp_comm_overlap));
  set("model.transformer.cross_entropy_loss_fusion", flag(t.cross_entropy_fusion));
  set("model.transformer.cross_entropy_fusion_impl", workloads::to_string(t.cross_entropy_fusion_impl));
  if (recipe->sections && t.fp8 == workloads::Fp8::Nvfp4) cannot(kName, "NVFP4 training (its NeMo keys are not written here yet)");
  if (recipe->sections && t.fp8 != workloads::Fp8::None) {
    const bool mx = t.fp8 == workloads::Fp8::Mxfp8;
    set("mixed_precision.fp8", t.fp8 == workloads::Fp8::Hybrid ? "hybrid" : "e4m3");
    // Transformer Engine's delayed scaling, as dtsim's fp8 models it; MXFP8's block scaling.
    set("mixed_precision.fp8_recipe", mx ? "mxfp8" : "delayed");
  }
  // A short run that neither loads nor writes checkpoints.
  set("train.train_iters", 100);
  set("checkpoint.save", "null");
  set("checkpoint.load", "null");
  set("logger.log_interval", 1);
  return f;
}

}  // namespace dtsim::drivers::emit
