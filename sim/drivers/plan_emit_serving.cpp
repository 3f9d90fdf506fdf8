// `dtsim plan --emit vllm | trtllm | sglang`: the best serving plan as the serving engine's own launch in a Slurm
// script (plan_emit.hpp). Each engine's flags are checked by tests/cli/plan_emit_cli_test.cpp against the lists
// drawn from its source in tests/data/frameworks (the files name the commits):
// - vllm: `vllm serve` (vllm-project/vllm), its engine and frontend arguments;
// - trtllm: `trtllm-serve serve` (NVIDIA/TensorRT-LLM) on its PyTorch backend, with the LLM API options it reads
//   from --extra_llm_api_options (a YAML file the script writes beside it);
// - sglang: `python -m sglang.launch_server` (sgl-project/sglang).
// What the scenario models is what the launch sets: the split (tp, pp, dp), the scheduler's token budget and
// sequence limit, the KV cache's block size, dtype and (when given) size, chunked prefill, the context and the
// weights' format. A replica that spans servers is launched across them the engine's way; the replicas inside a
// server are one server of them (the engine's own data parallelism, which balances them itself) or, for
// TensorRT-LLM, a server each; dtsim deals requests round-robin over the replicas.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/drivers/plan_emit.hpp"
#include "sim/drivers/plan_emit_flags.hpp"
#include "topology/error.hpp"
#include "workloads/training.hpp"

namespace dtsim::drivers {
namespace {

using workloads::Precision;

// The Hugging Face checkpoints of dtsim's presets (the model cards name the same shapes).
std::optional<std::string> hf_model(const std::string& preset) {
  static const std::pair<const char*, const char*> kModels[] = {
      {"llama2-7b", "meta-llama/Llama-2-7b-hf"},
      {"llama2-13b", "meta-llama/Llama-2-13b-hf"},
      {"llama2-70b", "meta-llama/Llama-2-70b-hf"},
      {"llama3-8b", "meta-llama/Meta-Llama-3-8B"},
      {"llama3-70b", "meta-llama/Meta-Llama-3-70B"},
      {"llama3-405b", "meta-llama/Llama-3.1-405B"},
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"},
      {"mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1"},
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"},
      {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"},
  };
  for (const auto& [name, id] : kModels)
    if (preset == name) return std::string(id);
  return std::nullopt;
}

// What a replica's launch needs to know of the split and the cluster.
struct Layout {
  int tp = 1, pp = 1, dp = 1;
  int servers = 1;             // Slurm nodes
  int gpus_per_server = 1;
  int replica_servers = 1;     // servers one replica spans (1: it fits in one)
  int replicas_per_server = 1; // replicas a server holds (1 when a replica spans servers)
};

Layout layout(std::string_view framework, const scenario::Scenario& s) {
  const auto& p = s.workload->plan;
  Layout l{p.tp, p.pp, p.dp, s.cluster.servers(), s.cluster.gpus_per_server(), 1, 1};
  const int replica = p.tp * p.pp;
  if (replica <= l.gpus_per_server) {
    if (l.gpus_per_server % replica != 0)
      emit::cannot(framework, fmt::format("replicas of {} GPUs on servers of {}: a replica would straddle two servers",
                                          replica, l.gpus_per_server));
    l.replicas_per_server = l.gpus_per_server / replica;
  } else {
    if (replica % l.gpus_per_server != 0)
      emit::cannot(framework, fmt::format("a replica of {} GPUs is not whole servers of {}", replica, l.gpus_per_server));
    l.replica_servers = replica / l.gpus_per_server;
    if (l.dp > 1)
      emit::cannot(framework, fmt::format("{} replicas each over {} servers (the script launches one replica that spans "
                                          "servers)", l.dp, l.replica_servers));
  }
  return l;
}

// The weights' format: a dtype the engine casts a 16-bit checkpoint to, a quantization it applies online, or a
// checkpoint quantized beforehand (whose method the engine reads from it).
struct Weights {
  std::string dtype;        // bfloat16, float16, float32
  bool online_fp8 = false;  // FP8 weights quantized at load time from a 16-bit checkpoint
  std::string checkpoint;   // non-empty: the format a pre-quantized checkpoint must hold
};

Weights weights(const workloads::InferenceSpec& inf) {
  switch (inf.weights) {
    case Precision::Bf16: return {"bfloat16", false, ""};
    case Precision::Fp16: return {"float16", false, ""};
    case Precision::Fp32: return {"float32", false, ""};
    case Precision::Fp8: return {"bfloat16", true, ""};
    case Precision::Int8: return {"auto", false, "INT8 (W8A8)"};
    case Precision::Int4: return {"auto", false, "INT4 weight-only (AWQ or GPTQ)"};
    case Precision::Mxfp8: return {"auto", false, "MXFP8"};
    case Precision::Fp4: return {"auto", false, "NVFP4 (ModelOpt)"};
    case Precision::Mxfp4: return {"auto", false, "MXFP4"};
    default: return {"", false, ""};
  }
}

struct Launch {
  std::string about;       // what the script runs (a comment)
  std::string setup;       // lines before the launch (files it writes)
  std::string program;     // the launch up to its arguments, e.g. `vllm serve "$MODEL"`
  std::vector<std::string> arguments;   // every server's
  int tasks_per_node = 1;
  std::string srun_options;   // after srun's task count
  std::string wrapper;     // non-empty: each task runs the launch through this script (its own rank, GPUs, port)
};

// The caches every engine here stores: 16-bit or FP8.
void require_kv(std::string_view framework, Precision kv) {
  if (kv == Precision::Bf16 || kv == Precision::Fp16 || kv == Precision::Fp8) return;
  emit::cannot(framework, fmt::format("a KV cache in {} (it stores 16-bit or FP8 caches)", to_string(kv)));
}

}  // namespace

std::string emit_serving_plan(std::string_view framework, const scenario::Scenario& s, const nlohmann::json& run, int rank) {
  check_emit_framework(framework);
  check_emit_kind(framework, true);
  const auto& w = *s.workload;
  const auto& inf = *w.inference;
  const auto& m = w.model;
  if (m.kind != workloads::ModelKind::Transformer) emit::cannot(framework, "a model given as a list of layers");
  // The engines take a draft by its checkpoint and their own spelling of the method: not written here.
  if (inf.speculative) emit::cannot(framework, "speculative decoding (inference.speculative)");
  // Attention data parallelism: the engines' own spellings (vLLM's --data-parallel-size across servers, SGLang's
  // --enable-dp-attention, TensorRT-LLM's enable_attention_dp) are not written yet.
  if (workloads::attention_data_parallel(w))
    emit::cannot(framework, "attention data parallelism (ep x etp = tp x dp): its launch flags are not written");
  const Layout l = layout(framework, s);
  const int ep = m.moe() ? w.plan.ep : 1;
  // vLLM's --data-parallel-size on a mixture of experts spreads the experts over the replicas (attention data
  // parallelism), which dtsim does not model: its replicas are independent.
  if (m.moe() && l.replicas_per_server > 1 && framework == "vllm")
    emit::cannot(framework, "a mixture of experts in several replicas a server (its --data-parallel-size spreads the "
                            "experts over them; dtsim's replicas are independent)");
  // Its expert parallelism is all or nothing: whole experts over TP x DP (etp 1), or each expert split over tp.
  if (framework == "vllm" && ep > 1 && ep != l.tp)
    emit::cannot(framework, fmt::format("ep {} on tp {} (its --enable-expert-parallel spreads whole experts over all "
                                        "of tp: ep = tp, or ep 1)", ep, l.tp));
  require_kv(framework, inf.kv_cache);
  Weights wt = weights(inf);
  if (wt.dtype.empty()) emit::cannot(framework, fmt::format("weights in {}", to_string(inf.weights)));
  if (framework == "trtllm" && wt.online_fp8) {   // its PyTorch backend reads FP8 from a quantized checkpoint
    wt.online_fp8 = false;
    wt.checkpoint = "FP8 (ModelOpt)";
  }
  if (framework == "trtllm" && wt.dtype == "float32") emit::cannot(framework, "32-bit weights");
  // The name as the script's text: a model given by its shape is named by the scenario, which may hold anything.
  const std::string name = emit::job_name(m.name);
  const auto preset = hf_model(m.name);
  // The checkpoint: the preset's on Hugging Face, or one the user gives (a model dtsim has no checkpoint name for,
  // or weights quantized beforehand).
  std::string model_line;
  if (!wt.checkpoint.empty())
    model_line = fmt::format("MODEL=${{MODEL:?set MODEL to a checkpoint of {} quantized to {}}}\n", name, wt.checkpoint);
  else if (preset)
    model_line = fmt::format("MODEL=${{MODEL:-{}}}\n", *preset);
  else
    model_line = fmt::format("MODEL=${{MODEL:?set MODEL to a Hugging Face checkpoint of {}}}\n", name);
  const auto& sch = inf.scheduler;
  const int context = inf.requests ? inf.requests->max_context : inf.context;
  // A stream's sequence limit as it was served: SGLang's rule (sequences_from_cache) sizes it from the cache, which
  // the run reports.
  const auto served = run.find("stream");
  const int sequences = !inf.requests ? inf.batch
                        : sch.sequences_from_cache && served != run.end() && served->contains("max_sequences")
                            ? served->at("max_sequences").get<int>()
                            : sch.max_sequences;
  // The tokens an iteration may take: the stream's budget, or a static batch's whole prefill in one pass (as dtsim
  // plays it), at least the context.
  const long long budget =
      inf.requests ? sch.max_tokens_per_iteration
                   : std::max<long long>(static_cast<long long>(inf.batch) * inf.prompt_tokens, context);
  const bool chunked = inf.requests ? sch.chunked_prefill : true;
  if (!chunked && budget < context)
    emit::cannot(framework, fmt::format("a token budget of {} below the {}-token context without chunked prefill (the "
                                        "engines refuse it)", budget, context));
  // vLLM's V1 scheduler and TensorRT-LLM's in-flight batcher always put prompt chunks beside decoding sequences.
  if (inf.requests && !sch.mixed_batches && framework != "sglang")
    emit::cannot(framework, "iterations that prefill or decode but never both (inference.scheduler.mixed_batches "
                            "false: SGLang's way)");
  if (budget < sequences)
    emit::cannot(framework, fmt::format("a token budget of {} below the {} sequences an iteration may hold (vLLM refuses "
                                        "it)", budget, sequences));
  const int port = 8000;
  Launch launch;
  std::vector<std::string>& a = launch.arguments;
  const auto add = [&](const std::string& flag, const std::string& value = {}) {
    a.push_back(value.empty() ? flag : flag + " " + value);
  };
  if (framework == "vllm") {
    launch.about = "vLLM's OpenAI-compatible server (`vllm serve`, arguments of vllm-project/vllm v0.11.2)";
    launch.program = "vllm serve \"$MODEL\"";
    add("--tensor-parallel-size", std::to_string(l.tp));
    add("--pipeline-parallel-size", std::to_string(l.pp));
    if (l.replicas_per_server > 1) add("--data-parallel-size", std::to_string(l.replicas_per_server));
    // Whole experts over the TP group (vllm/engine/arg_utils.py --enable-expert-parallel: EP = TP x DP, DP 1 here).
    if (ep > 1) add("--enable-expert-parallel");
    // Its block sizes (vllm/config/cache.py BlockSize at v0.11.2).
    constexpr int kBlockSizes[] = {1, 8, 16, 32, 64, 128, 256};
    if (std::ranges::find(kBlockSizes, sch.block_tokens) == std::end(kBlockSizes))
      emit::cannot(framework, fmt::format("KV blocks of {} tokens (its block sizes: 1, 8, 16, 32, 64, 128, 256)",
                                          sch.block_tokens));
    add("--max-num-batched-tokens", std::to_string(budget));
    add("--max-num-seqs", std::to_string(sequences));
    add("--block-size", std::to_string(sch.block_tokens));
    add("--max-model-len", std::to_string(context));
    add(chunked ? "--enable-chunked-prefill" : "--no-enable-chunked-prefill");
    if (sch.kv_blocks > 0) add("--num-gpu-blocks-override", std::to_string(sch.kv_blocks));
    add("--dtype", wt.dtype);
    if (wt.online_fp8) add("--quantization", "fp8");
    if (inf.kv_cache == Precision::Fp8) add("--kv-cache-dtype", "fp8");
    // With 32-bit weights its cache would follow them; dtsim's is 16-bit (its cache dtypes have no float16).
    if (wt.dtype == "float32" && inf.kv_cache == Precision::Bf16) add("--kv-cache-dtype", "bfloat16");
    if (wt.dtype == "float32" && inf.kv_cache == Precision::Fp16)
      emit::cannot(framework, "an fp16 KV cache beside 32-bit weights (its cache dtypes: auto, bfloat16, fp8)");
    add("--seed", "0");
    add("--port", std::to_string(port));
    if (l.replica_servers > 1) {
      // A replica over several servers, vLLM's multiprocess way (vllm/config/parallel.py nnodes, node_rank,
      // master_addr): the same command on every node, the first serving, the others headless workers
      // (vllm/entrypoints/cli/serve.py run_headless); the node's rank is the task's own.
      add("--distributed-executor-backend", "mp");
      add("--nnodes", std::to_string(l.replica_servers));
      add("--master-addr", "\"$head\"");
      launch.wrapper = "if [ \"$SLURM_NODEID\" -gt 0 ]; then exec \"$@\" --node-rank \"$SLURM_NODEID\" --headless; fi\n"
                       "exec \"$@\" --node-rank 0\n";
    }
  } else if (framework == "sglang") {
    launch.about = "SGLang's server (`python -m sglang.launch_server`, arguments of sgl-project/sglang v0.5.6.post2)";
    launch.program = "python -m sglang.launch_server";
    add("--model-path", "\"$MODEL\"");
    add("--tp-size", std::to_string(l.tp));
    add("--pp-size", std::to_string(l.pp));
    if (l.replicas_per_server > 1) add("--dp-size", std::to_string(l.replicas_per_server));
    if (ep > 1) add("--ep-size", std::to_string(ep));   // python/sglang/srt/server_args.py --expert-parallel-size
    add("--chunked-prefill-size", chunked ? std::to_string(budget) : "-1");
    add("--max-prefill-tokens", std::to_string(budget));
    // Left to SGLang when dtsim took its rule (sequences_from_cache): it sizes the limit from its own cache.
    if (!inf.requests || !sch.sequences_from_cache) add("--max-running-requests", std::to_string(sequences));
    if (inf.requests && sch.mixed_batches) add("--enable-mixed-chunk");
    add("--page-size", std::to_string(sch.block_tokens));
    add("--context-length", std::to_string(context));
    if (sch.kv_blocks > 0) add("--max-total-tokens", std::to_string(sch.kv_blocks * sch.block_tokens));
    add("--dtype", wt.dtype);
    if (wt.online_fp8) add("--quantization", "fp8");
    if (inf.kv_cache == Precision::Fp8) add("--kv-cache-dtype", "fp8_e4m3");
    add("--random-seed", "0");
    add("--port", std::to_string(port));
    if (l.replica_servers > 1) {
      // One process a node, the tp size the whole replica's (python/sglang/srt/server_args.py nnodes, node_rank,
      // dist_init_addr); the node's rank is the task's own.
      add("--nnodes", std::to_string(l.replica_servers));
      add("--dist-init-addr", "\"$head:5000\"");
      launch.wrapper = "exec \"$@\" --node-rank \"$SLURM_NODEID\"\n";
    }
  } else {   // trtllm
    if (!std::has_single_bit(static_cast<unsigned>(sch.block_tokens)))
      emit::cannot(framework, fmt::format("KV blocks of {} tokens (its tokens_per_block is a power of 2)", sch.block_tokens));
    launch.about = "TensorRT-LLM's OpenAI-compatible server (`trtllm-serve serve` on its PyTorch backend, options of\n"
                   "# NVIDIA/TensorRT-LLM 00209af1's serve.py), the LLM API options (0004396's llm_args.py) in the YAML file\n"
                   "# written below";
    std::string yaml = fmt::format("enable_chunked_prefill: {}\n", chunked ? "true" : "false");
    if (wt.dtype != "auto") yaml += fmt::format("dtype: {}\n", wt.dtype);
    yaml += fmt::format("kv_cache_config:\n  tokens_per_block: {}\n", sch.block_tokens);
    if (inf.kv_cache == Precision::Fp8) yaml += "  dtype: fp8\n";
    if (sch.kv_blocks > 0) yaml += fmt::format("  max_tokens: {}\n", sch.kv_blocks * sch.block_tokens);
    launch.setup = "options=\"trtllm-options.${SLURM_JOB_ID:-0}.yaml\"\ncat > \"$options\" <<'YAML'\n" + yaml + "YAML\n";
    launch.program = "trtllm-serve serve \"$MODEL\"";
    add("--backend", "pytorch");
    add("--tp_size", std::to_string(l.tp));
    add("--pp_size", std::to_string(l.pp));
    if (ep > 1) add("--ep_size", std::to_string(ep));   // the experts' width over tp / ep (moe_tensor_parallel_size)
    add("--max_num_tokens", std::to_string(budget));
    add("--max_batch_size", std::to_string(sequences));
    add("--max_seq_len", std::to_string(context));
    add("--extra_llm_api_options", "\"$options\"");
    if (l.replica_servers > 1) {
      // Across servers the LLM API runs under MPI: one Slurm task a GPU, trtllm-llmapi-launch in front.
      launch.program = "trtllm-llmapi-launch " + launch.program;
      launch.srun_options = " --mpi=pmix";   // as NVIDIA's examples launch it (examples/llm-api/llm_mgmn_trtllm_serve.sh)
      launch.tasks_per_node = l.gpus_per_server;
    }
  }
  // The figures dtsim predicts for the plan, for the script's comment.
  const auto ms = [&](const char* key) {
    const auto it = run.find(key);
    return it == run.end() || it->is_null() ? std::string("-") : fmt::format("{:.1f} ms", 1e3 * it->get<double>());
  };
  const std::string predicted =
      inf.requests ? fmt::format("p50 TTFT {}, p50 TPOT {}, {:.0f} output tokens/s at {:g} requests/s", ms("p50_ttft_s"),
                                 ms("p50_tpot_s"), run.value("throughput_tokens_per_s", 0.0), inf.requests->rate_per_s)
                   : fmt::format("TTFT {}, TPOT {}, {:.0f} output tokens/s for a batch of {} a replica", ms("ttft_s"),
                                 ms("tpot_s"), run.value("tokens_per_s", 0.0), inf.batch);
  if (framework == "trtllm" && l.replica_servers == 1 && l.replicas_per_server > 1) {
    // TensorRT-LLM serves one replica a process: a task a replica, each on its own GPUs and port.
    launch.wrapper = fmt::format("first=$((SLURM_LOCALID * {0}))\n"
                                 "export CUDA_VISIBLE_DEVICES=$(seq -s, \"$first\" $((first + {0} - 1)))\n"
                                 "exec \"$@\" --port $(({1} + SLURM_LOCALID))\n",
                                 l.tp * l.pp, port);
    launch.tasks_per_node = l.replicas_per_server;
  } else if (framework == "trtllm") {
    add("--port", std::to_string(port));
  }
  // What differs between the tasks (a node's rank, a replica's GPUs) is the task's own: a wrapper each runs.
  std::string srun = fmt::format("srun --ntasks-per-node {}{}", launch.tasks_per_node, launch.srun_options);
  if (!launch.wrapper.empty()) {
    launch.setup += fmt::format("task=\"{}-task.${{SLURM_JOB_ID:-0}}.sh\"\ncat > \"$task\" <<'SH'\n{}SH\n", framework,
                                launch.wrapper);
    srun += " bash \"$task\"";
  }
  // Where the servers listen.
  std::string endpoints;
  if (l.replica_servers > 1)
    endpoints = fmt::format("One server over the job's {} nodes listens on port {} of the first", l.servers, port);
  else if (framework == "trtllm" && l.replicas_per_server > 1)
    endpoints = fmt::format("{} servers, {} a node on its own GPUs, listen on ports {} to {} of their node", l.dp,
                            l.replicas_per_server, port, port + l.replicas_per_server - 1);
  else if (l.servers > 1)
    endpoints = fmt::format("{} servers, one a node{}, listen on port {} of their node", l.servers,
                            l.replicas_per_server > 1 ? fmt::format(" with {} replicas", l.replicas_per_server) : "", port);
  else
    endpoints = fmt::format("The server{} listens on port {}",
                            l.replicas_per_server > 1 ? fmt::format(" ({} replicas)", l.replicas_per_server) : "", port);
  const bool needs_head = l.replica_servers > 1;
  std::string out = fmt::format(
      "#!/bin/bash\n"
      "# dtsim plan --emit {0}: the {18} serving plan dtsim found for {1}: tp {2} pp {3} dp {4} on {5} x {6} GPUs;\n"
      "# dtsim predicts {7}.\n"
      "# {8}.\n"
      "# {9}; {10}.\n"
      "#SBATCH --job-name={1}\n#SBATCH --nodes={5}\n#SBATCH --ntasks-per-node={11}\n#SBATCH --gpus-per-node={6}\n"
      "#SBATCH --exclusive\n{12}set -euo pipefail\n"
      "{13}"
      "{14}"
      "{15}"
      "{16} {17}",
      framework, emit::job_name(s.name), l.tp, l.pp, l.dp, l.servers, l.gpus_per_server, predicted, launch.about,
      endpoints, l.dp > 1 ? "dtsim deals the requests round-robin over the replicas" : "send requests to it",
      launch.tasks_per_node,
      s.cluster.server_gpus > 0 ? fmt::format("#SBATCH --segment={}\n", s.cluster.servers_per_node()) : std::string(),
      model_line, needs_head ? "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n" : "",
      launch.setup, srun, launch.program,
      rank == 1 ? std::string("best") : fmt::format("#{} (the first {} can launch)", rank, framework));
  for (const std::string& arg : a) out += " \\\n  " + arg;
  return out + "\n";
}

}  // namespace dtsim::drivers
