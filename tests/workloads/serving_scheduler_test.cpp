// The continuous-batching scheduler (workloads/serving_scheduler.hpp) on traces worked by hand, and the request
// stream's draws against their distributions.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "topology/error.hpp"
#include "workloads/model.hpp"
#include "workloads/serving_scheduler.hpp"

using namespace dtsim;
using namespace dtsim::workloads;

namespace {

// Every iteration takes one second, and the passes each ran are kept.
struct OneSecondIterations {
  std::vector<std::vector<ServingPass>> seen;
  IterationTime timer() {
    return [this](std::span<const ServingPass> p) {
      seen.emplace_back(p.begin(), p.end());
      return 1.0;
    };
  }
};

// A scheduler of `tokens` tokens and `sequences` sequences an iteration, and KV-cache blocks to spare.
SchedulerLimits limits_of(int tokens, int sequences) {
  SchedulerLimits limits;
  limits.max_tokens_per_iteration = tokens;
  limits.max_sequences = sequences;
  limits.kv_blocks = 100;
  return limits;
}

}  // namespace

TEST_CASE("scheduler: two requests, chunked prefill under a 4-token budget, worked by hand") {
  // A arrives at 0 with a 6-token prompt and 3 output tokens; B at 0.5 with 2 and 2.
  // it 1 [0,1): A's first 4 prompt tokens (no token sampled).  it 2 [1,2): A's last 2 (first token at 2), B admitted, its 2 (first
  // token at 2).  it 3 [2,3): A decodes (cache 7), B decodes (cache 3), B's second token: B done at 3.
  // it 4 [3,4): A decodes (cache 8), its third token: done at 4.
  const std::vector<Request> requests = {{0.0, 6, 3}, {0.5, 2, 2}};
  SchedulerLimits limits = limits_of(4, 2);
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  CHECK(s.iterations == 4);
  CHECK(s.end_s == 4.0);
  CHECK(s.busy_s == 4.0);
  CHECK(s.tokens == 6 + 2 + 2 + 1);   // prompts, then the decode steps (a first token comes with its prompt)
  const RequestOutcome& a = s.requests[0];
  const RequestOutcome& b = s.requests[1];
  CHECK(a.admitted_s == 0.0);
  CHECK(a.first_token_s == 2.0);
  CHECK(a.finished_s == 4.0);
  CHECK(b.admitted_s == 1.0);
  CHECK(b.first_token_s == 2.0);
  CHECK(b.finished_s == 3.0);
  REQUIRE(clock.seen.size() == 4);
  using P = ServingPhase;
  const std::vector<std::vector<ServingPass>> want = {
      {{P::Prefill, 1, 4, 4, false}},   // a chunk short of the prompt's end samples nothing
      {{P::Prefill, 1, 2, 6}, {P::Prefill, 1, 2, 2}},
      {{P::Decode, 1, 1, 7}, {P::Decode, 1, 1, 3}},
      {{P::Decode, 1, 1, 8}}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(clock.seen[i] == want[i]);
  }
}

TEST_CASE("scheduler: a prompt's cached prefix is not prefilled, and its chunks attend over it") {
  // A: 10-token prompt, 8 cached, 2 output tokens; B: 6-token prompt, none cached, 1 output token; budget 3.
  // it 1: A's 2 uncached tokens over its 10 (first token at 1), then B's first prompt token with the budget left.
  // it 2: A decodes (cache 11, done at 2), B's next 2 prompt tokens.  it 3: B's last 3 (its one token, done at 3).
  std::vector<Request> requests = {{0.0, 10, 2}, {0.0, 6, 1}};
  requests[0].cached_tokens = 8;
  SchedulerLimits limits = limits_of(3, 2);
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  using P = ServingPhase;
  REQUIRE(clock.seen.size() >= 2);
  CHECK(clock.seen[0] == std::vector<ServingPass>{{P::Prefill, 1, 2, 10, true}, {P::Prefill, 1, 1, 1, false}});
  CHECK(clock.seen[1] == std::vector<ServingPass>{{P::Decode, 1, 1, 11}, {P::Prefill, 1, 2, 3, false}});
  CHECK(s.requests[0].first_token_s == 1.0);
  CHECK(s.requests[0].finished_s == 2.0);
  CHECK(s.tokens == 2 + 1 + 6);   // the cached 8 are not computed
}

TEST_CASE("scheduler: a prefix from host memory is loaded, one load at a time, while the others run") {
  // A: 10-token prompt, 8 in host memory loading for 1.5 s, 2 output tokens; B: 3-token prompt, 1 output token; C:
  // 10-token prompt, 8 in host memory loading for 1 s, 1 output token; all at 0, budget 4.
  // it 1 [0,1): A admitted (its load until 1.5), B's prompt (its one token, done at 1), C admitted (its load after
  // A's, until 2.5).  Idle until 1.5.  it 2 [1.5,2.5): A's last 2 prompt tokens over its 10 (first token at 2.5).
  // it 3 [2.5,3.5): A decodes (cache 11, done at 3.5), C's last 2 (its one token, done at 3.5).
  std::vector<Request> requests = {{0.0, 10, 2}, {0.0, 3, 1}, {0.0, 10, 1}};
  requests[0].loaded_tokens = 8;
  requests[0].load_s = 1.5;
  requests[2].loaded_tokens = 8;
  requests[2].load_s = 1.0;
  SchedulerLimits limits = limits_of(4, 3);
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  using P = ServingPhase;
  REQUIRE(clock.seen.size() == 3);
  CHECK(clock.seen[0] == std::vector<ServingPass>{{P::Prefill, 1, 3, 3, true}});
  CHECK(clock.seen[1] == std::vector<ServingPass>{{P::Prefill, 1, 2, 10, true}});
  CHECK(clock.seen[2] == std::vector<ServingPass>{{P::Decode, 1, 1, 11}, {P::Prefill, 1, 2, 10, true}});
  CHECK(s.requests[0].admitted_s == 0.0);
  CHECK(s.requests[0].first_token_s == 2.5);
  CHECK(s.requests[0].finished_s == 3.5);
  CHECK(s.requests[1].finished_s == 1.0);
  CHECK(s.requests[2].admitted_s == 0.0);
  CHECK(s.requests[2].first_token_s == 3.5);
  CHECK(s.end_s == 3.5);
  CHECK(s.busy_s == 3.0);
  CHECK(s.tokens == 3 + 2 + 1 + 2);   // the loaded 16 are not computed

  // A loading request waits outside the running sequences (vLLM's WAITING_FOR_REMOTE_KVS): with one sequence
  // allowed, B runs during A's load. it 1 [0,1): A's load begins (until 1.5), B's prompt (first token at 1).
  // it 2 [1,2): B decodes (done at 2).  it 3 [2,3): A, loaded, prefills its last 2 tokens (its one token, done at 3).
  std::vector<Request> pair = {{0.0, 10, 1}, {0.0, 3, 2}};
  pair[0].loaded_tokens = 8;
  pair[0].load_s = 1.5;
  limits.max_sequences = 1;
  OneSecondIterations one;
  const ServedStream t = serve_requests(pair, limits, one.timer());
  CHECK(t.iterations == 3);
  CHECK(t.requests[1].first_token_s == 1.0);
  CHECK(t.requests[1].finished_s == 2.0);
  CHECK(t.requests[0].admitted_s == 0.0);
  CHECK(t.requests[0].finished_s == 3.0);
  REQUIRE(one.seen.size() == 3);
  CHECK(one.seen[2] == std::vector<ServingPass>{{P::Prefill, 1, 2, 10, true}});
}

TEST_CASE("scheduler: speculative rounds carry the drafted tokens and yield their mean, fractions carried over") {
  // One request: 4-token prompt, 6 output tokens; 3 drafted tokens a round, 2.5 tokens yielded a round.
  // it 1: the prompt (first token at 1: yielded 1).  it 2: verify 4 tokens over 4 + 1 + 3 = 8 (yielded 3.5:
  // produced 3).  it 3: over 4 + 3 + 3 = 10 (yielded 6: produced 6, done at 3).
  const std::vector<Request> requests = {{0.0, 4, 6}};
  SchedulerLimits limits;
  limits.max_tokens_per_iteration = 16;
  limits.kv_blocks = 100;
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer(), {}, SpeculativeRounds{3, 2.5});
  using P = ServingPhase;
  REQUIRE(clock.seen.size() == 3);
  CHECK(clock.seen[0] == std::vector<ServingPass>{{P::Prefill, 1, 4, 4, true}});
  CHECK(clock.seen[1] == std::vector<ServingPass>{{P::Decode, 1, 4, 8}});
  CHECK(clock.seen[2] == std::vector<ServingPass>{{P::Decode, 1, 4, 10}});
  CHECK(s.requests[0].first_token_s == 1.0);
  CHECK(s.requests[0].finished_s == 3.0);
  CHECK(s.tokens == 4 + 4 + 4);   // every verified token is computed, accepted or not
  // A budget below a round's tokens leaves the sequence waiting for nothing: the reader refuses it, the
  // scheduler runs a round only where it fits (here a 4-token budget holds exactly one).
  limits.max_tokens_per_iteration = 4;
  OneSecondIterations tight;
  CHECK(serve_requests(requests, limits, tight.timer(), {}, SpeculativeRounds{3, 2.5}).end_s == 3.0);
}

TEST_CASE("scheduler: a request waits for KV-cache blocks, and without chunking a prompt runs whole") {
  // One 16-token block: A (10 + 2 tokens) holds it until it finishes at 2; B (arrived at 0) is admitted then.
  const std::vector<Request> requests = {{0.0, 10, 2}, {0.0, 3, 1}};
  SchedulerLimits limits;
  limits.max_tokens_per_iteration = 4;   // smaller than A's prompt: unchunked, A runs alone
  limits.kv_blocks = 1;
  limits.chunked_prefill = false;
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  CHECK(s.requests[0].first_token_s == 1.0);
  CHECK(s.requests[0].finished_s == 2.0);
  CHECK(s.requests[1].admitted_s == 2.0);
  CHECK(s.requests[1].first_token_s == 3.0);   // one output token: done with its prompt
  CHECK(s.requests[1].finished_s == 3.0);
  CHECK(s.iterations == 3);
  REQUIRE(clock.seen.size() == 3);
  CHECK(clock.seen[0][0] == ServingPass{ServingPhase::Prefill, 1, 10, 10});
}

TEST_CASE("scheduler: idle time jumps to the next arrival, and a request too large for the cache is refused") {
  const std::vector<Request> requests = {{5.0, 1, 1}};
  SchedulerLimits limits;
  limits.kv_blocks = 1;
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  CHECK(s.requests[0].admitted_s == 5.0);
  CHECK(s.end_s == 6.0);
  CHECK(s.busy_s == 1.0);
  const std::vector<Request> big = {{0.0, 20, 1}};
  CHECK_THROWS_WITH_AS(serve_requests(big, limits, clock.timer()),
                       doctest::Contains("more KV-cache blocks than the cache holds (1 of 16 tokens)"), InputError);
  limits.kv_blocks = 0;
  CHECK_THROWS_AS(serve_requests(requests, limits, clock.timer()), InputError);
}

TEST_CASE("request stream: Poisson arrivals at the rate, lengths with the distribution's mean, the same for a seed") {
  RequestStream stream;
  stream.rate_per_s = 10;
  stream.duration_s = 2000;
  stream.seed = 7;
  stream.prompt_tokens = {LengthDistribution::Kind::Lognormal, 512, 256};
  stream.output_tokens = {LengthDistribution::Kind::Uniform, 100, 300};
  const auto r = draw_requests(stream);
  // 20,000 expected; the count's deviation is sqrt(20,000) = 141.
  CHECK(std::abs(static_cast<double>(r.size()) - 20000.0) < 5 * 141.0);
  for (std::size_t i = 1; i < r.size(); ++i) REQUIRE(r[i].arrival_s >= r[i - 1].arrival_s);
  auto mean = [&](auto field) {
    return std::accumulate(r.begin(), r.end(), 0.0, [&](double s, const Request& q) { return s + field(q); }) /
           static_cast<double>(r.size());
  };
  const double prompt = mean([](const Request& q) { return q.prompt_tokens; });
  const double output = mean([](const Request& q) { return q.output_tokens; });
  CHECK(prompt == doctest::Approx(512).epsilon(0.02));
  CHECK(output == doctest::Approx(200).epsilon(0.01));
  const double sd = std::sqrt(mean([&](const Request& q) { return (q.prompt_tokens - prompt) * (q.prompt_tokens - prompt); }));
  CHECK(sd == doctest::Approx(256).epsilon(0.05));
  const auto again = draw_requests(stream);
  REQUIRE(again.size() == r.size());
  CHECK(again.back().arrival_s == r.back().arrival_s);
  CHECK(again.back().prompt_tokens == r.back().prompt_tokens);
  stream.seed = 8;
  CHECK(draw_requests(stream).front().arrival_s != r.front().arrival_s);
}

TEST_CASE("request stream: draws past the context are cut, prompt first, and marked") {
  RequestStream s;
  s.rate_per_s = 100;
  s.duration_s = 1;
  s.max_context = 600;
  s.prompt_tokens = {LengthDistribution::Kind::Fixed, 500, 0};
  s.output_tokens = {LengthDistribution::Kind::Fixed, 200, 0};
  for (const Request& r : draw_requests(s)) {
    CHECK(r.prompt_tokens == 500);
    CHECK(r.output_tokens == 100);
    CHECK(r.truncated);
  }
  s.prompt_tokens.a = 700;
  for (const Request& r : draw_requests(s)) {
    CHECK(r.prompt_tokens == 599);
    CHECK(r.output_tokens == 1);
  }
  s.prompt_tokens.a = 300;
  for (const Request& r : draw_requests(s)) CHECK_FALSE(r.truncated);
}

TEST_CASE("scheduler: prefilled requests (disaggregated decode) decode at once, worked by hand") {
  // A (5-token prompt, 3 outputs) arrives at 0 with its cache, B (2, 2) at 0.5, C (4, 1) at 0.7.
  // it 1 [0,1): A decodes (cache 6).  At 1 B joins; C's only token came with it: done at once.
  // it 2 [1,2): A (cache 7) and B (cache 3) decode: both done at 2.
  std::vector<Request> requests = {{0.0, 5, 3}, {0.5, 2, 2}, {0.7, 4, 1}};
  for (Request& r : requests) r.prefilled = true;
  SchedulerLimits limits;
  limits.kv_blocks = 100;
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  CHECK(s.iterations == 2);
  CHECK(s.end_s == 2.0);
  CHECK(s.tokens == 3);
  CHECK(s.requests[0].first_token_s == 0.0);
  CHECK(s.requests[0].finished_s == 2.0);
  CHECK(s.requests[1].admitted_s == 1.0);
  CHECK(s.requests[1].first_token_s == 0.5);
  CHECK(s.requests[1].finished_s == 2.0);
  CHECK(s.requests[2].finished_s == 1.0);
  using P = ServingPhase;
  const std::vector<std::vector<ServingPass>> want = {{{P::Decode, 1, 1, 6}}, {{P::Decode, 1, 1, 7}, {P::Decode, 1, 1, 3}}};
  CHECK(clock.seen == want);
}

TEST_CASE("scheduler: without mixed batches an iteration prefills or decodes, prefill first, worked by hand") {
  // A at 0 (6-token prompt, 3 out), B at 0.5 (2, 2), C at 2.5 (3, 2); 4 tokens and 3 sequences an iteration.
  // it 1 [0,1): A's first 4.  it 2 [1,2): A's last 2 and B's 2 (first tokens at 2).  it 3 [2,3): no prompt under
  // way or admissible: A and B decode, B done at 3.  it 4 [3,4): C waits, so C's prompt runs alone and A does not
  // decode (mixed, A would have finished at 4).  it 5 [4,5): A and C decode, both done at 5.
  const std::vector<Request> requests = {{0.0, 6, 3}, {0.5, 2, 2}, {2.5, 3, 2}};
  SchedulerLimits limits = limits_of(4, 3);
  limits.mixed_batches = false;
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  CHECK(s.iterations == 5);
  CHECK(s.requests[0].first_token_s == 2.0);
  CHECK(s.requests[0].finished_s == 5.0);
  CHECK(s.requests[1].finished_s == 3.0);
  CHECK(s.requests[2].admitted_s == 3.0);
  CHECK(s.requests[2].first_token_s == 4.0);
  CHECK(s.requests[2].finished_s == 5.0);
  using P = ServingPhase;
  const std::vector<std::vector<P>> phases = {{P::Prefill}, {P::Prefill, P::Prefill}, {P::Decode, P::Decode},
                                              {P::Prefill}, {P::Decode, P::Decode}};
  REQUIRE(clock.seen.size() == phases.size());
  for (std::size_t i = 0; i < phases.size(); ++i) {
    CAPTURE(i);
    REQUIRE(clock.seen[i].size() == phases[i].size());
    for (std::size_t k = 0; k < phases[i].size(); ++k) CHECK(clock.seen[i][k].phase == phases[i][k]);
  }
  // The same stream mixed: C's prompt runs beside A's decode step, and A ends at 4.
  limits.mixed_batches = true;
  const ServedStream mixed = serve_requests(requests, limits, OneSecondIterations{}.timer());
  CHECK(mixed.requests[0].finished_s == 4.0);
}

TEST_CASE("scheduler: without mixed batches every decoding sequence steps, whatever the token budget") {
  // Three 1-token prompts, 3 out, a 2-token budget: it 1 prefills A and B, it 2 C (first tokens at 1, 1, 2); then
  // all three decode in each of two iterations (3 tokens over a budget of 2), done at 4.
  const std::vector<Request> requests = {{0.0, 1, 3}, {0.0, 1, 3}, {0.0, 1, 3}};
  SchedulerLimits limits = limits_of(2, 3);
  limits.mixed_batches = false;
  OneSecondIterations clock;
  const ServedStream s = serve_requests(requests, limits, clock.timer());
  CHECK(s.iterations == 4);
  REQUIRE(clock.seen.size() == 4);
  CHECK(clock.seen[2].size() == 3);
  CHECK(clock.seen[3].size() == 3);
  for (const RequestOutcome& r : s.requests) CHECK(r.finished_s == 4.0);
}

TEST_CASE("serving frameworks: each engine's scheduler defaults by GPU, from its source") {
  using topology::find_gpu;
  const auto check = [](ServingFramework f, const char* gpu, int tokens, int sequences, int block, bool chunked,
                        bool mixed, bool from_cache) {
    CAPTURE(gpu);
    CAPTURE(to_string(f));
    const SchedulerLimits l = framework_scheduler(f, find_gpu(gpu), find_model("llama3-8b"), false);
    CHECK(l.max_tokens_per_iteration == tokens);
    CHECK(l.max_sequences == sequences);
    CHECK(l.block_tokens == block);
    CHECK(l.chunked_prefill == chunked);
    CHECK(l.mixed_batches == mixed);
    CHECK(l.sequences_from_cache == from_cache);
    CHECK(l.kv_blocks == 0);
  };
  // vLLM: 70 GiB or more and not an A100 takes 8,192 and 1,024; the A100 80GB, the L40S, the 4090 2,048 and 256.
  check(ServingFramework::Vllm, "h100-sxm5-80gb", 8192, 1024, 16, true, true, false);
  check(ServingFramework::Vllm, "b200-sxm-180gb", 8192, 1024, 16, true, true, false);
  check(ServingFramework::Vllm, "mi300x", 8192, 1024, 16, true, true, false);
  check(ServingFramework::Vllm, "a100-sxm4-80gb", 2048, 256, 16, true, true, false);
  check(ServingFramework::Vllm, "l40s", 2048, 256, 16, true, true, false);
  // SGLang: its chunk by memory (24 GiB: 2,048; 40: 4,096; 80 and 140: 8,192; 179: 16,384), one-token pages.
  check(ServingFramework::Sglang, "rtx4090", 2048, 2048, 1, true, false, true);
  check(ServingFramework::Sglang, "a100-sxm4-40gb", 4096, 2048, 1, true, false, true);
  check(ServingFramework::Sglang, "h100-sxm5-80gb", 8192, 2048, 1, true, false, true);
  check(ServingFramework::Sglang, "h200-sxm-141gb", 8192, 2048, 1, true, false, true);
  // On Blackwell a model without MLA attends with TensorRT-LLM's kernels, in 64-token pages.
  check(ServingFramework::Sglang, "b200-sxm-180gb", 16384, 2048, 64, true, false, true);
  // TensorRT-LLM: the same on every GPU.
  check(ServingFramework::Trtllm, "h100-sxm5-80gb", 8192, 2048, 64, false, true, false);
  check(ServingFramework::Trtllm, "a100-sxm4-40gb", 8192, 2048, 64, false, true, false);
  // DeepSeek-V3's MLA on Blackwell keeps one-token pages (FlashInfer); speculative decoding caps SGLang at 48.
  const auto& b200 = find_gpu("b200-sxm-180gb");
  CHECK(framework_scheduler(ServingFramework::Sglang, b200, find_model("deepseek-v3"), false).block_tokens == 1);
  const SchedulerLimits drafted = framework_scheduler(ServingFramework::Sglang, b200, find_model("llama3-8b"), true);
  CHECK(drafted.max_sequences == 48);
  CHECK_FALSE(drafted.sequences_from_cache);
  CHECK(framework_scheduler(ServingFramework::Vllm, b200, find_model("llama3-8b"), true).max_sequences == 1024);
  CHECK(parse_serving_framework("sglang") == ServingFramework::Sglang);
  CHECK_FALSE(parse_serving_framework("tgi").has_value());
}

TEST_CASE("serving frameworks: SGLang's running-request limit from its cache, worked by hand") {
  // min(tokens / 2, tokens x 512 / context within [2048, 4096])
  CHECK(sglang_running_limit(578'750, 8192) == 4096);        // 36,171 -> 4,096
  CHECK(sglang_running_limit(1'000'000, 131'072) == 3906);   // 1e6 x 512 / 131,072 = 3,906.25
  CHECK(sglang_running_limit(100'000, 131'072) == 2048);     // 390 -> 2,048
  CHECK(sglang_running_limit(1'000, 131'072) == 500);        // half the cache's tokens
  CHECK(sglang_running_limit(1, 131'072) == 1);
}

TEST_CASE("serving frameworks: the KV cache's share of a GPU, each engine's rule, worked by hand") {
  // An H100 (80 GiB, 1.5 GiB of CUDA context and framework), 35 GB of weights, a 2 GB iteration workspace.
  const auto& h100 = topology::find_gpu("h100-sxm5-80gb");
  const double memory = 80.0 * (1LL << 30), reserve = 1.5 * (1LL << 30);
  const Bytes params{35e9}, workspace{2e9};
  const SchedulerLimits chunk8k = limits_of(8192, 256);
  // vLLM: 0.9 of the GPU for everything; TensorRT-LLM: 0.9 of what the weights and workspace leave.
  CHECK(kv_cache_budget(ServingFramework::Vllm, h100, chunk8k, 4, 1, params, workspace).value() ==
        doctest::Approx(0.9 * memory - reserve - 37e9));
  CHECK(kv_cache_budget(ServingFramework::Trtllm, h100, chunk8k, 4, 1, params, workspace).value() ==
        doctest::Approx(0.9 * (memory - reserve - 37e9)));
  // SGLang at tp 4: R = 512 + 1.5 x 8,192 + 2 x 512 + 1,024 x 4 / 8 = 14,336 MiB, (81,920 - 14,336) / 81,920 =
  // 0.825 of the memory free after the CUDA context for weights and cache; at tp 1, R = 512 + 12,288 + 512 + 128 =
  // 13,440: 0.836 (rounded).
  CHECK(kv_cache_budget(ServingFramework::Sglang, h100, chunk8k, 4, 1, params, workspace).value() ==
        doctest::Approx(0.825 * (memory - reserve) - 35e9));
  CHECK(kv_cache_budget(ServingFramework::Sglang, h100, chunk8k, 1, 1, params, workspace).value() ==
        doctest::Approx(0.836 * (memory - reserve) - 35e9));
  // An RTX 4090 (24 GiB, under 60: no 10 GiB floor), a 2,048-token chunk at tp 1: R = 512 + 3,072 + 48 + 128 =
  // 3,760 MiB, 0.847.
  const auto& rtx = topology::find_gpu("rtx4090");
  CHECK(kv_cache_budget(ServingFramework::Sglang, rtx, limits_of(2048, 256), 1, 1, Bytes{1e9}, workspace).value() ==
        doctest::Approx(0.847 * (rtx.memory.value() - rtx.memory_reserve.value()) - 1e9));
  // Weights past the share leave nothing, never less.
  CHECK(kv_cache_budget(ServingFramework::Vllm, h100, chunk8k, 1, 1, Bytes{90e9}, workspace).value() == 0.0);
}
