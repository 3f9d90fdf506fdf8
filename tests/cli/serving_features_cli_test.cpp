// `dtsim run` on serving features beside the plain batch and stream: a prefix cache (inference.prefix_cache_hit),
// its host-memory tier (inference.kv_offload) and speculative decoding with a draft model (inference.speculative).
#include <algorithm>
#include <cmath>

#include "cli/serving_support.hpp"

using namespace serving_support;

TEST_CASE("serving prefix cache: a hit spares the prefill, the static batch's and each request's, and is written back") {
  // A static batch: 1,024-token prompts, half of each cached: the prefill computes 512 tokens a sequence over
  // the whole prompt; decode is unchanged.
  const fs::path file = scenario("prefix-static", kLlama70b);
  const json cold = serving_run_json(file);
  const json warm = serving_run_json(file, "--set inference.prefix_cache_hit=0.5");
  CHECK(warm["phases"]["prefill"]["new_tokens_per_sequence"] == 512);
  CHECK(warm["phases"]["prefill"]["context_tokens"] == 1024);
  CHECK(warm["ttft_s"].get<double>() < 0.6 * cold["ttft_s"].get<double>());
  CHECK(warm["tpot_s"].get<double>() == doctest::Approx(cold["tpot_s"].get<double>()));
  // A stream: every request spares 496 of its 512 prompt tokens (31 blocks; the last block is computed).
  const fs::path stream = scenario("prefix-stream", stream_of(4, 60, "  prefix_cache_hit: 1\n"));
  const json served = serving_run_json(stream);
  const json plain = serving_run_json(scenario("prefix-stream-cold", stream_of(4, 60)));
  CHECK(served["stream"]["prefix_cached_tokens"].get<double>() == 496 * served["stream"]["requests"].get<double>());
  CHECK(plain["stream"]["prefix_cached_tokens"] == 0);
  CHECK(served["p50_ttft_s"].get<double>() < 0.6 * plain["p50_ttft_s"].get<double>());   // 16 tokens: a weight read
  // The resolved scenario holds the hit, and runs again to the same figures.
  const fs::path out = fresh_dir("serving", "prefix-out");
  REQUIRE(dtsim("run " + stream.string() + " --out " + out.string()).status == 0);
  std::ifstream resolved(out / "scenario.resolved.yaml");
  const std::string text((std::istreambuf_iterator<char>(resolved)), std::istreambuf_iterator<char>());
  CHECK(text.find("prefix_cache_hit: 1") != std::string::npos);
  const json again = serving_run_json(out / "scenario.resolved.yaml");
  CHECK(again["p50_ttft_s"] == served["p50_ttft_s"]);
  // Bad values are one line, status 2.
  for (const char* bad : {"-0.1", "1.5", "yes"}) {
    const Result r = dtsim("run " + file.string() + " --set inference.prefix_cache_hit=" + bad);
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("inference.prefix_cache_hit") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("serving kv offload: a host hit is loaded over each GPU's host link instead of prefilled") {
  // The static batch: 32 sequences of 1,024 tokens on 8 H100 (TP 8), half of each prompt in host memory: the
  // prefill computes the other half, after the batch's loads: 32 x 512 tokens x 327,680 B (Llama-2-70B's 80 layers
  // x K and V of 8 heads of 128, bf16) / 8 GPUs over PCIe Gen5 at 63 x 0.8 GB/s.
  const fs::path file = scenario("offload-static", kLlama70b);
  const json gpu_hit = serving_run_json(file, "--set inference.prefix_cache_hit=0.5");
  const json host_hit = serving_run_json(file, "--set inference.kv_offload.host_GB=100 --set inference.kv_offload.hit=0.5");
  const json& o = host_hit["kv_offload"];
  CHECK(o["loaded_tokens"] == 512);
  CHECK(o["link"] == "pcie5");
  const double load = 32.0 * 512 * 327680 / 8 / (63e9 * 0.8);
  CHECK(o["load_s"].get<double>() == doctest::Approx(load));
  CHECK(host_hit["phases"]["prefill"]["new_tokens_per_sequence"] == 512);
  CHECK(host_hit["ttft_s"].get<double>() == doctest::Approx(gpu_hit["ttft_s"].get<double>() + load));
  CHECK(host_hit["tpot_s"].get<double>() == doctest::Approx(gpu_hit["tpot_s"].get<double>()));
  // A stream: each request loads 496 of its 512 prompt tokens; its first token comes later than from the GPU's
  // cache and sooner than with no cache.
  const json loaded = serving_run_json(scenario("offload-stream", stream_of(4, 60, "  kv_offload: {host_GB: 100, hit: 1}\n")));
  const json cached = serving_run_json(scenario("offload-stream-gpu", stream_of(4, 60, "  prefix_cache_hit: 1\n")));
  const json cold = serving_run_json(scenario("offload-stream-cold", stream_of(4, 60)));
  CHECK(loaded["stream"]["host_loaded_tokens"].get<double>() == 496 * loaded["stream"]["requests"].get<double>());
  CHECK(loaded["stream"]["prefix_cached_tokens"] == 0);
  CHECK(loaded["p50_ttft_s"].get<double>() > cached["p50_ttft_s"].get<double>());
  CHECK(loaded["p50_ttft_s"].get<double>() < cold["p50_ttft_s"].get<double>());
  // The resolved scenario holds it; a host tier too small for one request's hit is one line, status 2.
  const fs::path out = fresh_dir("serving", "offload-out");
  REQUIRE(dtsim("run " + file.string() + " --set inference.kv_offload.host_GB=100 --set inference.kv_offload.hit=0.5 "
                "--out " + out.string()).status == 0);
  std::ifstream resolved(out / "scenario.resolved.yaml");
  const std::string text((std::istreambuf_iterator<char>(resolved)), std::istreambuf_iterator<char>());
  CHECK(text.find("kv_offload:") != std::string::npos);
  const Result small = dtsim("run " + file.string() + " --set inference.kv_offload.host_GB=0.1 --set inference.kv_offload.hit=0.5");
  CHECK(small.status == 2);
  CHECK(small.err.find("inference.kv_offload.host_GB: cannot hold the host hits loaded at once, 16384 tokens") !=
        std::string::npos);   // the batch's 32 hits of 512 tokens
  CHECK(std::count(small.err.begin(), small.err.end(), '\n') == 1);
}

TEST_CASE("serving speculative: a round is the draft's steps and the target's verify over the tokens it yields") {
  // Llama-2-70B on two H100 (TP 2) at batch 1, drafted by Llama-2-7B on the same split.
  const auto target = [](const std::string& speculative) {
    return "name: spec\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 2, intra: nvswitch}\n"
           "model: {preset: llama2-70b}\nparallelism: {tp: 2}\n"
           "inference:\n  batch: 1\n  prompt_tokens: 1024\n  output_tokens: 256\n" + speculative;
  };
  const std::string spec = "  speculative: {draft: llama2-7b, tokens: 4, acceptance: 0.75}\n";
  const json plain = serving_run_json(scenario("spec-off", target("")));
  const json fast = serving_run_json(scenario("spec-on", target(spec)));
  const json& sp = fast["speculative"];
  const double per_round = (1.0 - std::pow(0.75, 5)) / 0.25;
  CHECK(sp["tokens_per_round"].get<double>() == doctest::Approx(per_round));
  CHECK(sp["round_s"].get<double>() ==
        doctest::Approx(4 * sp["draft_step_s"].get<double>() + sp["verify_s"].get<double>()));
  CHECK(fast["tpot_s"].get<double>() == doctest::Approx(sp["round_s"].get<double>() / per_round));
  CHECK(fast["ttft_s"].get<double>() ==
        doctest::Approx(plain["ttft_s"].get<double>() + sp["draft_prefill_s"].get<double>()).epsilon(1e-6));
  CHECK(fast["phases"]["decode"]["new_tokens_per_sequence"] == 5);   // the verify pass: 4 drafted and its own
  // At batch 1 the target reads its weights once for five tokens, and the draft is a tenth of its size: each
  // token comes faster. The draft's weights and cache take memory.
  CHECK(fast["tpot_s"].get<double>() < 0.6 * plain["tpot_s"].get<double>());
  CHECK(sp["draft_step_s"].get<double>() < 0.25 * sp["verify_s"].get<double>());
  CHECK(fast["memory"]["parts_bytes"]["params"].get<double>() > plain["memory"]["parts_bytes"]["params"].get<double>());
  CHECK(fast["max_batch_that_fits"].get<long long>() < plain["max_batch_that_fits"].get<long long>());
  // No acceptance, no speed-up: every round yields the target's own token and costs the draft's steps besides.
  const json useless = serving_run_json(scenario("spec-zero", target(spec)), "--set inference.speculative.acceptance=0");
  CHECK(useless["tpot_s"].get<double>() > plain["tpot_s"].get<double>());
  // A stream of Llama-2-7B at a light load, drafted by a 68M model of Llama-2's vocabulary (JackFram/llama-68m's
  // shape): each token comes faster; the resolved scenario holds the draft and runs again to the same figures.
  const std::string tiny = "  speculative: {draft: {layers: 2, hidden: 768, heads: 12, ffn_hidden: 3072, vocab: 32000, "
                           "seq_length: 4096}, tokens: 3, acceptance: 0.6}\n";
  const json streamed = serving_run_json(scenario("spec-stream", stream_of(1, 60, tiny)));
  const json unspeculated = serving_run_json(scenario("spec-stream-off", stream_of(1, 60)));
  CHECK(streamed["p50_tpot_s"].get<double>() < 0.8 * unspeculated["p50_tpot_s"].get<double>());
  const fs::path out = fresh_dir("serving", "spec-out");
  REQUIRE(dtsim("run " + scenario("spec-stream-resolved", stream_of(1, 60, tiny)).string() + " --out " + out.string())
              .status == 0);
  const json again = serving_run_json(out / "scenario.resolved.yaml");
  CHECK(again["p50_tpot_s"] == streamed["p50_tpot_s"]);
  // Bad input: one line, status 2.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{draft: llama2-7b, tokens: 4}", "inference.speculative.acceptance"},
      {"{draft: llama2-7b, acceptance: 1.5}", "inference.speculative.acceptance"},
      {"{draft: llama2-7b, tokens: 0, acceptance: 0.5}", "inference.speculative.tokens"},
      {"{draft: llama3-8b, acceptance: 0.5}", "inference.speculative.draft"},      // another vocabulary
      {"{draft: no-such-model, acceptance: 0.5}", "inference.speculative.draft"},
      {"{tokens: 4, acceptance: 0.5}", "inference.speculative.draft"},
      {"{draft: llama2-7b, acceptance: 0.5, depth: 2}", "inference.speculative.depth"},
      {"yes", "inference.speculative"},
      // A draft the target's split cannot hold: 25 heads over tp 2.
      {"{draft: {layers: 4, hidden: 800, heads: 25, ffn_hidden: 3072, vocab: 32000, seq_length: 4096}, acceptance: 0.5}",
       "inference.speculative.draft"},
      {"{draft: llama2-7b, acceptance: 0.5, tp: 4}", "inference.speculative.tp"}};   // neither 1 nor the target's
  for (const auto& [value, key] : bad) {
    CAPTURE(value);
    const Result r = dtsim("run " + scenario("spec-bad", target("  speculative: " + value + "\n")).string());
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(key) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // The same 25-head draft on one GPU of each TP group (vLLM's draft_tensor_parallel_size 1): it runs, holds its
  // whole weights on that GPU, and the resolved scenario says tp 1.
  const std::string one_gpu = "  speculative: {draft: {layers: 4, hidden: 800, heads: 25, ffn_hidden: 3072, vocab: 32000, "
                              "seq_length: 4096}, acceptance: 0.5, tp: 1}\n";
  const json narrow = serving_run_json(scenario("spec-tp1", target(one_gpu)));
  CHECK(narrow["speculative"]["draft_step_s"].get<double>() > 0);
  const json split_draft = serving_run_json(scenario("spec-tp2", target(spec)));
  const json single_draft = serving_run_json(scenario("spec-7b-tp1", target(spec)), "--set inference.speculative.tp=1");
  CHECK(single_draft["memory"]["parts_bytes"]["params"].get<double>() >
        split_draft["memory"]["parts_bytes"]["params"].get<double>());
  const fs::path narrow_out = fresh_dir("serving", "spec-tp1-out");
  REQUIRE(dtsim("run " + scenario("spec-tp1-resolved", target(one_gpu)).string() + " --out " + narrow_out.string()).status == 0);
  std::ifstream narrow_resolved(narrow_out / "scenario.resolved.yaml");
  const std::string narrow_text((std::istreambuf_iterator<char>(narrow_resolved)), std::istreambuf_iterator<char>());
  CHECK(narrow_text.find("tp: 1") != std::string::npos);
  const Result both = dtsim("run " + scenario("spec-disagg", stream_of(1, 60, tiny +
      "  disaggregation: {prefill: {gpus: 1}, decode: {gpus: 1}}\n")).string());
  CHECK(both.status == 2);
  CHECK(both.err.find("inference.speculative") != std::string::npos);
  const Result budget = dtsim("run " + scenario("spec-budget", stream_of(1, 60, tiny +
      "  scheduler: {max_tokens_per_iteration: 3}\n")).string());
  CHECK(budget.status == 2);
  CHECK(budget.err.find("inference.scheduler.max_tokens_per_iteration") != std::string::npos);
}

TEST_CASE("serving framework: the engine's scheduler defaults serve a stream, explicit limits win, written back") {
  // Llama-2-7B on one H100 at 4 requests/s: vLLM's server takes 1,024 sequences on a GPU of 70 GiB or more,
  // TensorRT-LLM 2,048, SGLang what its cache gives (min(tokens / 2, tokens x 512 / 4,096 within 2,048..4,096)).
  const json vllm = serving_run_json(scenario("framework-vllm", stream_of(4, 30)));
  CHECK(vllm["stream"]["framework"] == "vllm");
  CHECK(vllm["stream"]["max_sequences"] == 1024);
  const fs::path trtllm = scenario("framework-trtllm", stream_of(4, 30, "  framework: trtllm\n"));
  const json t = serving_run_json(trtllm);
  CHECK(t["stream"]["framework"] == "trtllm");
  CHECK(t["stream"]["max_sequences"] == 2048);
  // The run table says what served it.
  const Result table = dtsim("run " + trtllm.string());
  CHECK(table.out.find("stream: trtllm's scheduler, 8192 tokens and 2048 sequences an iteration, 64-token KV blocks (") !=
        std::string::npos);
  CHECK(table.out.find("prompts whole, prefill beside decode") != std::string::npos);
  const fs::path sglang = scenario("framework-sglang", stream_of(4, 30, "  framework: sglang\n"));
  const json g = serving_run_json(sglang);
  const long long tokens = g["stream"]["kv_blocks"].get<long long>();   // one-token pages
  CHECK(g["stream"]["max_sequences"] == std::min(tokens / 2, std::clamp(tokens * 512 / 4096, 2048LL, 4096LL)));
  // On an A100 vLLM's server takes 2,048 tokens and 256 sequences.
  const json a100 = serving_run_json(scenario("framework-a100", stream_of(4, 30)), "--set cluster.gpu=a100-sxm4-80gb");
  CHECK(a100["stream"]["max_sequences"] == 256);
  // An explicit limit replaces the framework's.
  const json given = serving_run_json(sglang, "--set inference.scheduler.max_sequences=100");
  CHECK(given["stream"]["max_sequences"] == 100);
  // The resolved scenario names the framework, leaves SGLang's limit to its rule, and runs again alike.
  const fs::path out = fresh_dir("serving", "framework-out");
  REQUIRE(dtsim("run " + sglang.string() + " --out " + out.string()).status == 0);
  std::ifstream resolved(out / "scenario.resolved.yaml");
  const std::string text((std::istreambuf_iterator<char>(resolved)), std::istreambuf_iterator<char>());
  CHECK(text.find("framework: sglang") != std::string::npos);
  CHECK(text.find("mixed_batches: false") != std::string::npos);
  CHECK(text.find("block_tokens: 1\n") != std::string::npos);
  CHECK(text.find("max_sequences") == std::string::npos);
  const json again = serving_run_json(out / "scenario.resolved.yaml");
  CHECK(again["p50_ttft_s"] == g["p50_ttft_s"]);
  CHECK(again["stream"]["max_sequences"] == g["stream"]["max_sequences"]);
  // SGLang without chunking prefills up to its max_prefill_tokens, 16,384, unless the budget is written.
  const fs::path whole = fresh_dir("serving", "framework-whole");
  REQUIRE(dtsim("run " + sglang.string() + " --set inference.scheduler.chunked_prefill=false --out " + whole.string()).status == 0);
  std::ifstream whole_resolved(whole / "scenario.resolved.yaml");
  const std::string whole_text((std::istreambuf_iterator<char>(whole_resolved)), std::istreambuf_iterator<char>());
  CHECK(whole_text.find("max_tokens_per_iteration: 16384") != std::string::npos);
  // An engine dtsim has no defaults for is one line, status 2, naming the ones it has.
  const Result bad = dtsim("run " + trtllm.string() + " --set inference.framework=tgi");
  CAPTURE(bad.err);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("inference.framework: unknown value 'tgi' (allowed: vllm, sglang, trtllm)") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}
