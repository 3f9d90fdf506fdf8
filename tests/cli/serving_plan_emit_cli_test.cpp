// `dtsim plan --emit vllm | trtllm | sglang` on serving scenarios: the best plan as the engine's own launch, every
// flag checked against the engine's own list (tests/data/frameworks, drawn from each engine's source at the commit
// its header names).
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "cli/serving_plan_support.hpp"

using namespace serving_plan_support;
using nlohmann::json;

TEST_CASE("plan --emit vllm | sglang | trtllm: the best serving plan as the engine's own launch, every flag its own") {
  const fs::path dir = fresh_dir("plan", "serving-emit");
  const fs::path s = written(dir, "s.yaml",
                           "name: l70\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                           "model: {preset: llama2-70b}\n"
                           "inference:\n  kv_cache: fp8\n"
                           "  requests: {rate_per_s: 2, duration_s: 20, prompt_tokens: 1024, output_tokens: 128}\n"
                           "  scheduler: {max_tokens_per_iteration: 4096, max_sequences: 64, block_tokens: 32}\n");
  const json best = json::parse(dtsim("plan " + s.string() + " --format json").out)["plans"][0];
  const int tp = best["parallelism"]["tp"], pp = best["parallelism"]["pp"], dp = best["parallelism"]["dp"];
  {
    const auto r = dtsim("plan " + s.string() + " --emit vllm");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.out.find("#SBATCH --nodes=1\n") != std::string::npos);
    const auto args = served_launched(dir, r.out);
    REQUIRE(args.size() > 4);
    CHECK(args[0] == "vllm");
    CHECK(args[1] == "serve");
    CHECK(args[2] == "meta-llama/Llama-2-70b-hf");
    served_check_flags(args, "vllm-serve-arguments.txt");
    CHECK(served_after(args, "--tensor-parallel-size") == std::to_string(tp));
    CHECK(served_after(args, "--pipeline-parallel-size") == std::to_string(pp));
    CHECK(served_after(args, "--data-parallel-size") == (dp > 1 ? std::to_string(dp) : "(absent)"));
    CHECK(served_after(args, "--max-num-batched-tokens") == "4096");
    CHECK(served_after(args, "--max-num-seqs") == "64");
    CHECK(served_after(args, "--block-size") == "32");
    CHECK(served_after(args, "--kv-cache-dtype") == "fp8");
    CHECK(served_after(args, "--max-model-len") == "4096");   // the model's context: the stream's limit
    CHECK(std::ranges::find(args, "--enable-chunked-prefill") != args.end());
  }
  {
    const auto r = dtsim("plan " + s.string() + " --emit sglang");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const auto args = served_launched(dir, r.out);
    REQUIRE(args.size() > 5);
    CHECK(args[0] == "python");
    CHECK(args[2] == "sglang.launch_server");
    served_check_flags(args, "sglang-arguments.txt");
    CHECK(served_after(args, "--model-path") == "meta-llama/Llama-2-70b-hf");
    CHECK(served_after(args, "--tp-size") == std::to_string(tp));
    CHECK(served_after(args, "--pp-size") == std::to_string(pp));
    CHECK(served_after(args, "--chunked-prefill-size") == "4096");
    CHECK(served_after(args, "--max-running-requests") == "64");
    CHECK(served_after(args, "--page-size") == "32");
    CHECK(served_after(args, "--kv-cache-dtype") == "fp8_e4m3");
  }
  {
    const auto r = dtsim("plan " + s.string() + " --emit trtllm");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const auto args = served_launched(dir, r.out);
    const auto serve = std::ranges::find(args, "trtllm-serve");
    REQUIRE(serve != args.end());
    CHECK(*(serve + 1) == "serve");
    served_check_flags(args, "trtllm-serve-arguments.txt");
    CHECK(served_after(args, "--tp_size") == std::to_string(tp));
    CHECK(served_after(args, "--max_num_tokens") == "4096");
    CHECK(served_after(args, "--max_batch_size") == "64");
    // The LLM API options file: every key one of the LLM API's, the cache's block and dtype the scenario's.
    const std::string options = slurp(dir / "trtllm-options.7.yaml");
    const auto keys = listed("trtllm-llm-api-keys.txt");
    REQUIRE(keys.size() > 20);
    std::istringstream in(options);
    std::string section;
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      REQUIRE(colon != std::string::npos);
      const bool nested = line.starts_with("  ");
      const std::string key = line.substr(nested ? 2 : 0, colon - (nested ? 2 : 0));
      if (!nested) section = key;
      CHECK_MESSAGE(keys.count(nested ? section + "." + key : key) == 1, key);
    }
    CHECK(options.find("  tokens_per_block: 32\n") != std::string::npos);
    CHECK(options.find("  dtype: fp8\n") != std::string::npos);
  }
  // A block size vLLM does not have, or TensorRT-LLM (not a power of 2): one line, 2.
  for (const char* engine : {"vllm", "trtllm"}) {
    const auto block = dtsim("plan " + s.string() + " --emit " + engine + " --set inference.scheduler.block_tokens=48");
    CHECK(block.status == 2);
    CHECK(block.err.find("KV blocks of 48 tokens") != std::string::npos);
    CHECK(std::count(block.err.begin(), block.err.end(), '\n') == 1);
  }
  fs::remove_all(dir);
}

TEST_CASE("plan --emit for a mixture of experts: whole experts over the TP group in each engine's flag") {
  const fs::path dir = fresh_dir("plan", "serving-emit-moe");
  const fs::path s = written(dir, "s.yaml",
                                  "name: mix\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 4, intra: nvswitch}\n"
                                  "model: {preset: mixtral-8x7b}\nparallelism: {tp: 4, pp: 1, dp: 1, ep: 4}\n"
                                  "inference:\n  requests: {rate_per_s: 2, duration_s: 20, prompt_tokens: 512, "
                                  "output_tokens: 128}\n");
  const std::vector<std::tuple<std::string, std::string, std::string>> engines = {
      {"vllm", "vllm-serve-arguments.txt", "--enable-expert-parallel"},
      {"sglang", "sglang-arguments.txt", "--ep-size"},
      {"trtllm", "trtllm-serve-arguments.txt", "--ep_size"}};
  for (const auto& [engine, list, flag] : engines) {
    CAPTURE(engine);
    const auto r = dtsim("plan " + s.string() + " --emit " + engine);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const auto args = served_launched(dir, r.out);
    served_check_flags(args, list);
    REQUIRE(std::ranges::find(args, flag) != args.end());
    if (engine != "vllm") CHECK(served_after(args, flag) == "4");
  }
  // vLLM's expert parallelism is whole experts over all of tp: ep 2 on tp 4 (each expert split in two) it cannot
  // write; SGLang and TensorRT-LLM can.
  const auto half = dtsim("plan " + s.string() + " --emit vllm --set parallelism.ep=2");
  CHECK(half.status == 2);
  CHECK(half.err.find("ep 2 on tp 4") != std::string::npos);
  REQUIRE(dtsim("plan " + s.string() + " --emit trtllm --set parallelism.ep=2").status == 0);
  // Experts split over tp (ep 1): no expert-parallel flag.
  const auto split = dtsim("plan " + s.string() + " --emit vllm --set parallelism.ep=1");
  REQUIRE_MESSAGE(split.status == 0, split.err);
  CHECK(split.out.find("--enable-expert-parallel") == std::string::npos);
  // Replicas of a mixture of experts on one server: vLLM's --data-parallel-size would spread the experts over them.
  const auto replicas = dtsim("plan " + s.string() + " --emit vllm --set parallelism.tp=2 --set parallelism.dp=2 "
                              "--set parallelism.ep=2");
  CHECK(replicas.status == 2);
  CHECK(replicas.err.find("mixture of experts") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("plan --emit for serving: a replica over two servers, quantized checkpoints, and what cannot be written") {
  const fs::path dir = fresh_dir("plan", "serving-emit-limits");
  // Llama-3.1-405B in bf16 needs two 8-GPU servers a replica: SGLang's multi-node launch, a node rank a server.
  const fs::path big = written(dir, "big.yaml",
                             "name: l405\ncluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 8, intra: nvswitch,\n"
                             "  inter: fat-tree, inter_link: ib-ndr, nics_per_node: 8}\n"
                             "model: {preset: llama3-405b}\n"
                             "inference: {batch: 8, prompt_tokens: 512, output_tokens: 64}\n"
                             "parallelism: {dp: 1}\nsimulation: {engine: analytic}\n");
  const auto sg = dtsim("plan " + big.string() + " --emit sglang");
  REQUIRE_MESSAGE(sg.status == 0, sg.err);
  CHECK(sg.out.find("#SBATCH --nodes=2\n") != std::string::npos);
  const auto args = served_launched(dir, sg.out);
  served_check_flags(args, "sglang-arguments.txt");
  REQUIRE(args.size() > 2);
  CHECK(args[0] == "bash");   // each task through the wrapper, which adds its own node's rank
  CHECK(served_after(args, "--nnodes") == "2");
  CHECK(served_after(args, "--dist-init-addr") == "node1:5000");
  const auto rank_of = [&](const std::string& wrapper, int node) {
    REQUIRE(std::system(fmt::format("cd {} && SLURM_NODEID={} bash {} printf '%s\\n' > {}", dir.string(), node, wrapper,
                                    (dir / "rank").string()).c_str()) == 0);
    return slurp(dir / "rank");
  };
  CHECK(rank_of(args[1], 1) == "--node-rank\n1\n");
  // vLLM: the same command on both nodes, the second a headless worker.
  const auto vl = dtsim("plan " + big.string() + " --emit vllm");
  REQUIRE_MESSAGE(vl.status == 0, vl.err);
  const auto vargs = served_launched(dir, vl.out);
  served_check_flags(vargs, "vllm-serve-arguments.txt");
  CHECK(served_after(vargs, "--nnodes") == "2");
  CHECK(served_after(vargs, "--master-addr") == "node1");
  CHECK(rank_of(vargs[1], 0) == "--node-rank\n0\n");
  CHECK(rank_of(vargs[1], 1) == "--node-rank\n1\n--headless\n");
  for (const char* f : {"--node-rank", "--headless"}) CHECK(listed("vllm-serve-arguments.txt").count(f) == 1);
  const auto trt = dtsim("plan " + big.string() + " --emit trtllm");
  REQUIRE_MESSAGE(trt.status == 0, trt.err);
  CHECK(trt.out.find("#SBATCH --ntasks-per-node=8\n") != std::string::npos);
  const auto targs = served_launched(dir, trt.out);
  CHECK(std::ranges::find(targs, "trtllm-llmapi-launch") != targs.end());
  CHECK(trt.out.find("srun --ntasks-per-node 8 --mpi=pmix trtllm-llmapi-launch trtllm-serve serve") != std::string::npos);
  served_check_flags(targs, "trtllm-serve-arguments.txt");
  // int4 weights need a quantized checkpoint: the script stops without MODEL, saying what to give.
  const fs::path q = written(dir, "q.yaml",
                           "name: q\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                           "model: {preset: llama2-70b}\n"
                           "inference: {batch: 8, prompt_tokens: 512, output_tokens: 64, weights: int4}\n"
                           "parallelism: {tp: 8}\nsimulation: {engine: analytic}\n");
  const auto v = dtsim("plan " + q.string() + " --emit vllm");
  REQUIRE_MESSAGE(v.status == 0, v.err);
  CHECK(v.out.find("MODEL=${MODEL:?set MODEL to a checkpoint of llama2-70b quantized to INT4") != std::string::npos);
  // Two replicas of tp 4 in one server: vLLM's and SGLang's own data parallelism, TensorRT-LLM a server each on its
  // own four GPUs and port.
  const fs::path two = written(dir, "two.yaml",
                                    "name: l70\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                                    "model: {preset: llama2-70b}\n"
                                    "inference: {batch: 16, prompt_tokens: 512, output_tokens: 64}\n"
                                    "parallelism: {tp: 4, dp: 2}\nsimulation: {engine: analytic}\n");
  const auto v2 = served_launched(dir, dtsim("plan " + two.string() + " --emit vllm").out);
  CHECK(served_after(v2, "--data-parallel-size") == "2");
  CHECK(served_after(v2, "--max-num-seqs") == "16");
  CHECK(served_after(v2, "--max-num-batched-tokens") == "8192");   // the batch's whole prefill, 16 x 512
  const auto s2 = served_launched(dir, dtsim("plan " + two.string() + " --emit sglang").out);
  CHECK(served_after(s2, "--dp-size") == "2");
  const auto t2script = dtsim("plan " + two.string() + " --emit trtllm").out;
  CHECK(t2script.find("#SBATCH --ntasks-per-node=2\n") != std::string::npos);
  const auto t2 = served_launched(dir, t2script);
  served_check_flags(t2, "trtllm-serve-arguments.txt");
  REQUIRE(t2.size() > 2);
  CHECK(t2[0] == "bash");
  const auto replica = [&](int local) {
    REQUIRE(std::system(fmt::format("cd {} && SLURM_LOCALID={} bash {} sh -c 'echo $CUDA_VISIBLE_DEVICES \"$@\"' sh > {}",
                                    dir.string(), local, t2[1], (dir / "replica").string()).c_str()) == 0);
    return slurp(dir / "replica");
  };
  CHECK(replica(0) == "0,1,2,3 --port 8000\n");
  CHECK(replica(1) == "4,5,6,7 --port 8001\n");
  // A model given by its shape is named by the scenario, whose name may hold anything: the script keeps it text.
  const fs::path odd = written(dir, "odd.yaml",
                                    "name: 'c}u$(touch pwned)'\n"
                                    "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                                    "model: {layers: 4, hidden: 1024, heads: 16, ffn_hidden: 4096, seq_length: 2048, vocab: 32000}\n"
                                    "inference: {batch: 8, prompt_tokens: 512, output_tokens: 64}\n"
                                    "parallelism: {tp: 8}\nsimulation: {engine: analytic}\n");
  const auto oddr = dtsim("plan " + odd.string() + " --emit vllm");
  REQUIRE_MESSAGE(oddr.status == 0, oddr.err);
  CHECK(oddr.out.find("$(touch") == std::string::npos);
  std::ofstream(dir / "odd.sbatch") << oddr.out;
  CHECK(std::system(fmt::format("cd {} && MODEL=x PATH={}:$PATH SRUN_ARGS=/dev/null SLURM_JOB_NODELIST=n bash odd.sbatch",
                                dir.string(), (dir / "bin").string()).c_str()) == 0);
  CHECK(!fs::exists(dir / "pwned"));
  // A training framework on a serving scenario, a serving engine on a training one, and an unknown name: one line, 2.
  const auto megatron = dtsim("plan " + q.string() + " --emit megatron");
  CHECK(megatron.status == 2);
  CHECK(megatron.err.find("cannot run the best plan: a serving scenario (its engines here: vllm, trtllm, sglang)") !=
        std::string::npos);
  const fs::path train = written(dir, "t.yaml",
                               "name: t\ncluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                               "model: {preset: gpt-1.7b}\ntraining: {global_batch: 32}\nsimulation: {engine: analytic}\n");
  const auto vt = dtsim("plan " + train.string() + " --confirm 0 --emit vllm");
  CHECK(vt.status == 2);
  CHECK(vt.err.find("a training scenario") != std::string::npos);
  const auto unknown = dtsim("plan " + q.string() + " --emit tgi");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("vllm, trtllm, sglang") != std::string::npos);
  // Disaggregated pools are not searched.
  const fs::path pools = written(dir, "pools.yaml",
                               "name: p\ncluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 8, intra: nvswitch,\n"
                               "  inter: fat-tree, inter_link: ib-ndr, nics_per_node: 8}\n"
                               "model: {preset: llama2-70b}\n"
                               "inference:\n  requests: {rate_per_s: 1, duration_s: 10, prompt_tokens: 512, output_tokens: 64}\n"
                               "  disaggregation: {prefill: {gpus: 8, tp: 8}, decode: {gpus: 8, tp: 8}}\n");
  const auto d = dtsim("plan " + pools.string());
  CHECK(d.status == 2);
  CHECK(d.err.find("inference.disaggregation") != std::string::npos);
  for (const auto* e : {&megatron, &vt, &unknown, &d}) CHECK(std::count(e->err.begin(), e->err.end(), '\n') == 1);
  fs::remove_all(dir);
}

TEST_CASE("plan --emit for an SGLang-served stream: its limit left to SGLang, unmixed batches nowhere else") {
  const fs::path dir = fresh_dir("plan", "serving-emit-sglang");
  const fs::path s = written(dir, "s.yaml",
                           "name: l7\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1}\n"
                           "model: {preset: llama2-7b}\n"
                           "inference:\n  framework: sglang\n"
                           "  requests: {rate_per_s: 2, duration_s: 10, prompt_tokens: 512, output_tokens: 64}\n");
  const auto r = dtsim("plan " + s.string() + " --emit sglang");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto args = served_launched(dir, r.out);
  served_check_flags(args, "sglang-arguments.txt");
  CHECK(served_after(args, "--max-running-requests") == "(absent)");   // SGLang sizes it from its own cache
  CHECK(std::ranges::find(args, "--enable-mixed-chunk") == args.end());
  CHECK(served_after(args, "--chunked-prefill-size") == "8192");
  CHECK(served_after(args, "--page-size") == "1");
  // With mixed batches it says so; vLLM and TensorRT-LLM cannot run unmixed ones.
  const auto mixed = dtsim("plan " + s.string() + " --emit sglang --set inference.scheduler.mixed_batches=true");
  REQUIRE_MESSAGE(mixed.status == 0, mixed.err);
  const auto mixed_args = served_launched(dir, mixed.out);
  CHECK(std::ranges::find(mixed_args, "--enable-mixed-chunk") != mixed_args.end());
  // Written for vLLM, the limit is the one the stream was served with (SGLang's rule, from the cache).
  const auto as_vllm = dtsim("plan " + s.string() + " --emit vllm --set inference.scheduler.mixed_batches=true");
  REQUIRE_MESSAGE(as_vllm.status == 0, as_vllm.err);
  const json served = json::parse(dtsim("run " + s.string() + " --format json").out);
  CHECK(served_after(served_launched(dir, as_vllm.out), "--max-num-seqs") ==
        std::to_string(served["stream"]["max_sequences"].get<int>()));
  for (const char* engine : {"vllm", "trtllm"}) {
    const auto no = dtsim("plan " + s.string() + " --emit " + engine);
    CAPTURE(no.err);
    CHECK(no.status == 2);
    CHECK(no.err.find("mixed_batches") != std::string::npos);
    CHECK(std::count(no.err.begin(), no.err.end(), '\n') == 1);
  }
  fs::remove_all(dir);
}
