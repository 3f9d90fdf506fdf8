// `dtsim plan --emit`: the best plan as a framework's launch (plan_emit.hpp).
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
#include "sim/cli/plan_emit.hpp"

#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <utility>
#include <vector>

#include "topology/error.hpp"
#include "workloads/training.hpp"

namespace dtsim::cli {
namespace {

using workloads::Recompute;

[[noreturn]] void cannot(std::string_view framework, const std::string& what) {
  throw InputError("--emit", std::string(framework), "cannot run the best plan: " + what, "a plan it has flags for");
}

// A Slurm job name: letters, digits, '.', '_' and '-' only (the scenario's name may hold anything).
std::string job_name(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-') ? c : '_';
  return out.empty() ? "dtsim" : out.substr(0, 64);
}

std::vector<std::string> megatron_flags(const workloads::Workload& w) {
  constexpr std::string_view kName = "megatron";
  const auto& m = w.model;
  const auto& t = *w.training;
  const auto& p = w.plan;
  if (m.kind != workloads::ModelKind::Transformer) cannot(kName, "a model given as a list of layers");
  if (m.mla()) cannot(kName, "multi-latent attention (its flags came after core_r0.11.0)");
  if (p.zero >= 2) cannot(kName, fmt::format("ZeRO stage {} (Megatron-LM shards optimizer states only)", p.zero));
  if (t.recompute == Recompute::Op) cannot(kName, "per-op recomputation (torchtitan's)");
  if (!p.layers_per_stage.empty()) cannot(kName, "uneven pipeline stages");
  std::vector<std::string> f;
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  // The plan.
  add("--tensor-model-parallel-size", p.tp);
  add("--pipeline-model-parallel-size", p.pp);
  if (p.vpp > 1) {
    if (m.layers % (p.pp * p.vpp) != 0)
      cannot(kName, fmt::format("{} layers in {} x {} virtual stages (Megatron-LM needs equal ones)", m.layers, p.pp, p.vpp));
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
  // Precision.
  if (t.precision == topology::Precision::Bf16) f.emplace_back("--bf16");
  else if (t.precision == topology::Precision::Fp16) f.emplace_back("--fp16");
  else cannot(kName, "training in a precision other than bf16 or fp16");
  if (t.fp8 == workloads::Fp8::Hybrid) add("--fp8-format", "hybrid");
  if (t.fp8 == workloads::Fp8::E4m3) add("--fp8-format", "e4m3");
  // The model.
  add("--num-layers", m.layers);
  add("--hidden-size", m.hidden);
  add("--num-attention-heads", m.heads);
  add("--ffn-hidden-size", m.ffn_hidden);
  if (m.kv_heads > 0 && m.kv_heads < m.heads) {
    f.emplace_back("--group-query-attention");
    add("--num-query-groups", m.kv_heads);
  }
  if (m.head_size > 0 && m.head_size * m.heads != m.hidden) add("--kv-channels", m.head_size);
  add("--seq-length", m.seq_length);
  add("--max-position-embeddings", m.seq_length);
  if (m.positions == workloads::Positions::Rotary) add("--position-embedding-type", "rope");
  if (m.norm == workloads::Norm::RmsNorm) add("--normalization", "RMSNorm");
  if (m.activation == workloads::Activation::Swiglu) f.emplace_back("--swiglu");
  if (!m.bias) f.emplace_back("--disable-bias-linear");
  if (!m.tied_embeddings) f.emplace_back("--untie-embeddings-and-output-weights");
  add("--hidden-dropout", m.hidden_dropout);
  add("--attention-dropout", m.attention_dropout);
  if (m.moe()) {
    add("--num-experts", m.experts);
    add("--moe-router-topk", m.experts_per_token);
    if (m.expert_ffn_hidden > 0) add("--moe-ffn-hidden-size", m.expert_ffn_hidden);
    if (m.shared_experts > 0)
      add("--moe-shared-expert-intermediate-size", m.shared_experts * (m.expert_ffn_hidden > 0 ? m.expert_ffn_hidden : m.ffn_hidden));
    f.emplace_back("--moe-grouped-gemm");
  }
  // What runs it as written: mock data, a null tokenizer of the model's vocabulary, a short run.
  f.emplace_back("--mock-data");
  add("--tokenizer-type", "NullTokenizer");
  add("--vocab-size", m.vocab);
  add("--train-iters", 100);
  add("--lr", "1.0e-4");
  add("--log-interval", 1);
  add("--eval-iters", 0);
  return f;
}

// The model's shape as Megatron-DeepSpeed's flags (megatron/arguments.py).
void megatron_deepspeed_model(const workloads::ModelSpec& m, std::vector<std::string>& f) {
  const auto add = [&f](std::string flag, const auto& value) { f.push_back(fmt::format("{} {}", flag, value)); };
  add("--num-layers", m.layers);
  add("--hidden-size", m.hidden);
  add("--num-attention-heads", m.heads);
  add("--ffn-hidden-size", m.ffn_hidden);
  if (m.kv_heads > 0 && m.kv_heads < m.heads) add("--num-key-value-heads", m.kv_heads);
  if (m.head_size > 0 && m.head_size * m.heads != m.hidden) add("--kv-channels", m.head_size);
  add("--seq-length", m.seq_length);
  add("--max-position-embeddings", m.seq_length);
  if (m.positions == workloads::Positions::Rotary) f.emplace_back("--use-rotary-position-embeddings");
  if (m.norm == workloads::Norm::RmsNorm) add("--normalization", "rmsnorm");
  if (m.activation == workloads::Activation::Swiglu) f.emplace_back("--swiglu");
  if (!m.bias) f.emplace_back("--disable-bias-linear");
  if (!m.tied_embeddings) f.emplace_back("--untie-embeddings-and-output-weights");
  add("--hidden-dropout", m.hidden_dropout);
  add("--attention-dropout", m.attention_dropout);
}

std::vector<std::string> deepspeed_flags(const workloads::Workload& w) {
  constexpr std::string_view kName = "deepspeed";
  const auto& m = w.model;
  const auto& t = *w.training;
  const auto& p = w.plan;
  if (m.kind != workloads::ModelKind::Transformer) cannot(kName, "a model given as a list of layers");
  if (m.mla()) cannot(kName, "multi-latent attention");
  if (m.moe() || p.ep > 1) cannot(kName, "experts (Megatron-DeepSpeed's are DeepSpeed-MoE's, not modelled)");
  if (p.cp > 1) cannot(kName, "context parallelism (its sequence parallelism is Ulysses')");
  if (p.vpp > 1) cannot(kName, "interleaved virtual stages (DeepSpeed's pipeline engine has none)");
  if (p.fsdp != workloads::Fsdp::None) cannot(kName, "PyTorch FSDP (DeepSpeed shards with ZeRO stages)");
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
  megatron_deepspeed_model(m, f);
  add("--data-path", "\"$DATA\"");
  add("--tokenizer-type", "NullTokenizer");
  add("--vocab-size", m.vocab);
  add("--train-iters", 100);
  add("--lr", "1.0e-4");
  add("--log-interval", 1);
  add("--eval-iters", 0);
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
  return fmt::format("{{\n"
                     "  \"train_batch_size\": {},\n"
                     "  \"train_micro_batch_size_per_gpu\": {},\n"
                     "  \"steps_per_print\": 1,\n"
                     "  \"gradient_clipping\": 1.0,\n"
                     "  \"zero_optimization\": {{\n"
                     "    \"stage\": {},\n"
                     "    \"overlap_comm\": {},\n"
                     "    \"reduce_bucket_size\": {:.0f}\n"
                     "  }},\n"
                     "  \"{}\": {{\"enabled\": true}}\n"
                     "}}\n",
                     t.global_batch, t.micro_batch, w.plan.zero, t.dp_overlap ? "true" : "false", bucket,
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
  constexpr std::string_view kName = "torchtitan";
  const auto& m = w.model;
  const auto& t = *w.training;
  const auto& p = w.plan;
  const auto flavour = torchtitan_flavour(m.name);
  if (!flavour) cannot(kName, fmt::format("model '{}' (torchtitan's flavours: llama3-8b, llama3-70b, llama3-405b)", m.name));
  if (p.vpp > 1) cannot(kName, "interleaved virtual stages (its split points are given by hand)");
  if (p.ep > 1 || m.moe()) cannot(kName, "experts");
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
  if (t.fp8 != workloads::Fp8::None) f.emplace_back("--float8.enable_float8_linear");
  f.emplace_back("--training.compile");
  add("--training.steps", 100);
  return f;
}

}  // namespace

void check_emit_framework(std::string_view framework) {
  if (framework != "megatron" && framework != "torchtitan" && framework != "deepspeed")
    throw InputError("--emit", std::string(framework), "unknown framework", std::string(kEmitFrameworks));
}

std::string emit_plan(std::string_view framework, const Scenario& s, const workloads::Workload& w, double step_s) {
  check_emit_framework(framework);
  if (!w.training) cannot(framework, "a serving scenario (the serving engines' launches are not written yet)");
  // Each framework: what the script's comment says it runs, its checkout's variable and default, the environment
  // it wants, its entry point and the flags.
  struct Launch {
    std::string_view about, home, checkout, environment, entry;
    std::vector<std::string> flags;
    std::string setup;   // lines run before the launch
  };
  const Launch l = [&]() -> Launch {
    if (framework == "torchtitan") {
      const auto flavour = torchtitan_flavour(w.model.name);
      return {"torchtitan's train.py (options of pytorch/torchtitan 9dec370a) under torchrun, one task a node, its\n"
              "# llama3 config file with the plan's options over it.",
              "TORCHTITAN", "torchtitan", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "train.py",
              torchtitan_flags(w, flavour ? flavour->second : ""), ""};
    }
    if (framework == "deepspeed")
      return {"Megatron-DeepSpeed's pretrain_gpt.py (flags of microsoft/Megatron-DeepSpeed f4157bea) under torchrun,\n"
              "# one task a node, with the DeepSpeed configuration written below (keys of microsoft/DeepSpeed 38327e07f).\n"
              "# Give DATA, the prefix of a dataset in Megatron's format (.bin and .idx).",
              "MEGATRON_DEEPSPEED", "Megatron-DeepSpeed", "CUDA_DEVICE_MAX_CONNECTIONS=1", "pretrain_gpt.py",
              deepspeed_flags(w),
              "DATA=${DATA:?set DATA to the prefix of a dataset in the Megatron format}\n"
              "config=\"ds_config.${SLURM_JOB_ID:-0}.json\"\n"
              "cat > \"$config\" <<'JSON'\n" + deepspeed_config(w) + "JSON\n"};
    return {"Megatron-LM's pretrain_gpt.py (flags of NVIDIA/Megatron-LM core_r0.11.0) under torchrun, one task a node.\n"
            "# It trains on mock data as written: give --data-path and a tokenizer in place of the last lines to train.",
            "MEGATRON", "Megatron-LM", "CUDA_DEVICE_MAX_CONNECTIONS=1", "pretrain_gpt.py", megatron_flags(w), ""};
  }();
  std::string out = fmt::format(
      "#!/bin/bash\n"
      "# dtsim plan --emit {0}: the best plan dtsim found for {1}, {2:.4g} s a step on {3} x {4} GPUs.\n# {5}\n"
      "#SBATCH --job-name={1}\n#SBATCH --nodes={3}\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node={4}\n"
      "#SBATCH --exclusive\nset -euo pipefail\n"
      "{6}=${{{6}:-$PWD/{7}}}\n"
      "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
      "{10}"
      "export {8}\n"
      "srun torchrun --nnodes {3} --nproc-per-node {4} --rdzv-backend c10d --rdzv-endpoint \"$head:29500\" \\\n"
      "  \"${6}/{9}\"",
      framework, job_name(s.name), step_s, s.cluster.nodes, s.cluster.gpus_per_node, l.about, l.home, l.checkout,
      l.environment, l.entry, l.setup);
  for (const std::string& f : l.flags) out += " \\\n  " + f;
  return out + "\n";
}

std::string emit_file_name(std::string_view framework, const std::string& scenario_name) {
  return fmt::format("{}.{}.sbatch", job_name(scenario_name), framework);
}

}  // namespace dtsim::cli
