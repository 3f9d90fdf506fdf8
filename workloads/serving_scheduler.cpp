#include "workloads/serving_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numbers>
#include <string_view>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/name_table.hpp"

namespace dtsim::workloads {
namespace {

// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): a fixed generator, so a seed means the same stream everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform on (0, 1): 53 bits, never 0 (a logarithm's argument).
  double open01() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal (Box-Muller, one of the pair).
  double normal() {
    const double u = open01();   // drawn in this order on every compiler (an expression's operands are not)
    const double v = open01();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
  }

 private:
  std::uint64_t state_;
};

int draw_length(const LengthDistribution& d, Random& random) {
  double x = d.a;
  switch (d.kind) {
    case LengthDistribution::Kind::Fixed: break;
    case LengthDistribution::Kind::Uniform: x = d.a + (d.b - d.a) * random.open01(); break;
    case LengthDistribution::Kind::Normal: x = d.a + d.b * random.normal(); break;
    case LengthDistribution::Kind::Lognormal: {
      // The log's parameters that give the lengths mean a and deviation b.
      const double sigma2 = std::log1p((d.b / d.a) * (d.b / d.a));
      x = std::exp(std::log(d.a) - sigma2 / 2 + std::sqrt(sigma2) * random.normal());
      break;
    }
  }
  return static_cast<int>(std::clamp(std::round(x), 1.0, 1e9));
}

// The blocks a request holds: its prompt and output, and under speculative decoding the `drafted` tokens whose
// keys and values the last verify writes past them.
long long blocks_for(const Request& r, int block_tokens, int drafted) {
  const long long tokens = static_cast<long long>(r.prompt_tokens) + r.output_tokens + drafted;
  return (tokens + block_tokens - 1) / block_tokens;
}

// A request being served.
struct Running {
  std::size_t index;
  int prefilled = 0;   // prompt tokens in the cache
  int produced = 0;    // output tokens sampled
  double yielded = 0;  // decode rounds' tokens, fractions included (speculative decoding): produced is its floor
  double ready_s = 0;  // a loading request's: when its prefix has arrived from host memory (Request::load_s)
};

}  // namespace

std::vector<Request> draw_requests(const RequestStream& s) {
  DTSIM_ASSERT(s.rate_per_s > 0 && s.duration_s >= 0 && (s.max_context == 0 || s.max_context >= 2), "a checked request stream");
  Random random(s.seed);
  auto gap = [&] { return -std::log(random.open01()) / s.rate_per_s; };   // exponential inter-arrival times
  std::vector<Request> out;
  for (double t = gap(); t < s.duration_s; t += gap()) {
    Request r;
    r.arrival_s = t;
    r.prompt_tokens = draw_length(s.prompt_tokens, random);
    r.output_tokens = draw_length(s.output_tokens, random);
    if (s.max_context > 0 && r.prompt_tokens + static_cast<long long>(r.output_tokens) > s.max_context) {
      r.prompt_tokens = std::min(r.prompt_tokens, s.max_context - 1);
      r.output_tokens = s.max_context - r.prompt_tokens;
      r.truncated = true;
    }
    out.push_back(r);
  }
  return out;
}

namespace {
constexpr topology::NameTable<ServingFramework, 3> kServingFrameworks{
    {{ServingFramework::Vllm, "vllm"}, {ServingFramework::Sglang, "sglang"}, {ServingFramework::Trtllm, "trtllm"}}};
}  // namespace

std::string_view to_string(ServingFramework f) { return topology::name_of(kServingFrameworks, f); }
std::optional<ServingFramework> parse_serving_framework(std::string_view name) {
  return topology::value_of(kServingFrameworks, name);
}

SchedulerLimits framework_scheduler(ServingFramework framework, const topology::GpuSpec& gpu, const ModelSpec& model,
                                    bool speculative) {
  SchedulerLimits l;
  const double gib = to_gibibytes(gpu.memory);
  switch (framework) {
    case ServingFramework::Vllm: {
      // vllm/engine/arg_utils.py EngineArgs._set_default_args (from vllm-project/vllm#17885 to v0.11.2 and later),
      // its OpenAI server's defaults: GPUs of 70 GiB or more other than the A100 take the larger ones.
      const bool large = gib >= 70 && std::string_view(gpu.name).find("a100") == std::string_view::npos;
      l.max_tokens_per_iteration = large ? 8192 : 2048;
      l.max_sequences = large ? 1024 : 256;
      l.block_tokens = 16;   // vllm/config/cache.py: 16 on CUDA
      break;
    }
    case ServingFramework::Sglang:
      // python/sglang/srt/server_args.py _handle_gpu_memory_settings (v0.5.6.post2): the chunk by the GPU's memory.
      l.max_tokens_per_iteration = gib < 35 ? 2048 : gib < 60 ? 4096 : gib < 160 ? 8192 : 16384;
      // Under speculative decoding 48 (_handle_speculative_decoding, a draft model's STANDALONE included), else
      // sglang_running_limit's floor until the memory plan sizes the cache.
      l.max_sequences = speculative ? 48 : 2048;
      l.sequences_from_cache = !speculative;
      // page_size 1 (_handle_page_size), but 64 where the attention backend is TensorRT-LLM's: the default on
      // Blackwell for a model without MLA (_handle_attention_backend_compatibility, trtllm_mha's pages of 16,
      // 32 or 64).
      l.block_tokens = gpu.architecture.starts_with("blackwell") && !model.mla() ? 64 : 1;
      l.mixed_batches = false;  // enable_mixed_chunk false
      break;
    case ServingFramework::Trtllm:
      // trtllm-build's BuildConfig (tensorrt_llm/builder.py): max_batch_size 2048 (NVIDIA/TensorRT-LLM#2253,
      // 2024-09), max_num_tokens 8192 (#1763, 2024-06); context chunking off unless enable_chunked_context
      // (triton-inference-server/tensorrtllm_backend v0.14.0 inflight_batcher_llm/src/model_instance_state.cc);
      // paged KV blocks of 64 tokens (tokens_per_block); in-flight batching mixes context and generation.
      l.max_tokens_per_iteration = 8192;
      l.max_sequences = 2048;
      l.block_tokens = 64;
      l.chunked_prefill = false;
      break;
  }
  return l;
}

Bytes kv_cache_budget(ServingFramework framework, const topology::GpuSpec& gpu, const SchedulerLimits& limits, int tp,
                      int pp, Bytes params, Bytes workspace) {
  constexpr double kShare = 0.9;   // vLLM's gpu_memory_utilization, TensorRT-LLM's kv_cache_free_gpu_mem_fraction
  const double memory = gpu.memory.value(), reserve = gpu.memory_reserve.value();
  double budget = 0;
  switch (framework) {
    case ServingFramework::Vllm: budget = kShare * memory - reserve - params.value() - workspace.value(); break;
    case ServingFramework::Trtllm: budget = kShare * (memory - reserve - params.value() - workspace.value()); break;
    case ServingFramework::Sglang: {
      const double gib = to_gibibytes(gpu.memory), mib = 1024 * gib;
      const bool wide = tp >= 4;
      const double graph_batch = gib < 20 ? 8 : gib < 35 ? (wide ? 80 : 24) : gib < 60 ? (wide ? 160 : 32)
                                 : gib < 160 ? (wide ? 512 : 256) : 512;
      double reserved = 512 + 1.5 * std::max(limits.max_tokens_per_iteration, 2048) + 2 * graph_batch +
                        1024.0 * tp * pp / 8;
      if (mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
      const double fraction = std::round((mib - reserved) / mib * 1000) / 1000;
      // Of the memory free once the CUDA context is up (model_runner.py: min_per_gpu_memory, then
      // profile_max_num_token's rest_memory = available - total x (1 - mem_fraction_static)).
      budget = fraction * (memory - reserve) - params.value();
      break;
    }
  }
  return Bytes(std::max(0.0, budget));
}

int sglang_running_limit(long long kv_tokens, int context) {
  DTSIM_ASSERT(kv_tokens >= 0 && context >= 1, "a cache and a context");
  const long long by_context = std::clamp<long long>(kv_tokens * 512 / context, 2048, 4096);
  return static_cast<int>(std::max<long long>(1, std::min(kv_tokens / 2, by_context)));
}

ServedStream serve_requests(std::span<const Request> requests, const SchedulerLimits& limits, const IterationTime& time,
                            const std::function<void()>& on_finished, SpeculativeRounds speculation) {
  DTSIM_ASSERT(speculation.tokens >= 0 && speculation.per_round >= 1.0 &&
                   speculation.per_round <= speculation.tokens + 1.0 + 1e-9,
               "a round yields between one token and every drafted one and the target's");
  const int step_tokens = 1 + speculation.tokens;   // a decoding sequence's tokens through the target an iteration
  if (limits.max_tokens_per_iteration < step_tokens)   // a decoding sequence would never run
    throw InputError("inference.scheduler.max_tokens_per_iteration", std::to_string(limits.max_tokens_per_iteration),
                     fmt::format("cannot hold one decoding sequence's {} drafted tokens and its own:", speculation.tokens),
                     "at least inference.speculative.tokens + 1");
  if (limits.max_tokens_per_iteration < 1 || limits.max_sequences < 1 || limits.block_tokens < 1 || limits.kv_blocks < 1)
    throw InputError("inference.requests", "", "the scheduler needs a token budget, a sequence limit and KV-cache blocks "
                     "of at least 1; got none for", "a model and batch that leave memory for the KV cache");
  for (const Request& r : requests)
    DTSIM_ASSERT(r.cached_tokens >= 0 && r.loaded_tokens >= 0 && r.load_s >= 0 &&
                     r.cached_tokens + r.loaded_tokens < r.prompt_tokens,
                 "a request computes its prompt's last token");
  for (const Request& r : requests)
    if (blocks_for(r, limits.block_tokens, speculation.tokens) > limits.kv_blocks)
      throw InputError("inference.requests",
                       fmt::format("{} + {} tokens", r.prompt_tokens, r.output_tokens),
                       fmt::format("a request needs more KV-cache blocks than the cache holds ({} of {} tokens):",
                                   limits.kv_blocks, limits.block_tokens),
                       fmt::format("prompt and output of at most {} tokens together",
                                   limits.kv_blocks * limits.block_tokens));

  ServedStream out;
  out.requests.resize(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) out.requests[i].request = requests[i];
  std::deque<std::size_t> waiting;
  std::vector<Running> running;
  long long free_blocks = limits.kv_blocks;
  std::size_t arrived = 0, finished = 0;
  double now = 0;
  double link_free = 0;         // when the host links finish the loads under way
  std::deque<Running> loading;  // prefixes coming from host memory, in the order they finish (the links are shared)
  std::deque<Running> loaded;   // those arrived, scheduled ahead of the waiting requests
  std::vector<ServingPass> passes;
  std::vector<std::pair<std::size_t, int>> members;   // (index into running, tokens) per pass

  while (finished < requests.size()) {
    while (arrived < requests.size() && requests[arrived].arrival_s <= now) waiting.push_back(arrived++);
    while (!loading.empty() && loading.front().ready_s <= now) {
      loaded.push_back(loading.front());
      loading.pop_front();
    }
    if (running.empty() && waiting.empty() && loading.empty() && loaded.empty()) {
      now = requests[arrived].arrival_s;
      continue;
    }
    // Requests whose prompt was prefilled elsewhere join the decoding sequences as soon as their blocks are free.
    while (!waiting.empty() && requests[waiting.front()].prefilled && std::ssize(running) < limits.max_sequences) {
      const std::size_t i = waiting.front();
      const long long need = blocks_for(requests[i], limits.block_tokens, speculation.tokens);
      if (need > free_blocks) break;
      waiting.pop_front();
      out.requests[i].admitted_s = now;
      out.requests[i].first_token_s = requests[i].arrival_s;
      if (requests[i].output_tokens <= 1) {   // its one token came with it
        out.requests[i].finished_s = now;
        ++finished;
        if (on_finished) on_finished();
        continue;
      }
      free_blocks -= need;
      running.push_back({i, requests[i].prompt_tokens, 1, 1.0});
    }
    if (finished == requests.size()) break;
    passes.clear();
    members.clear();
    int budget = limits.max_tokens_per_iteration;
    // How much of a prompt with `remaining` tokens this iteration prefills (0: none).
    auto chunk_of = [&](int remaining) {
      if (limits.chunked_prefill) return std::min(remaining, budget);
      return remaining <= budget || passes.empty() ? remaining : 0;
    };
    // Decoding sequences first, one token each; then prompts under way; then admissions, first come first served.
    // Without mixed batches the prompts go first, alone, and the sequences decode in an iteration with none, all of
    // them (SGLang's decode batch has no token budget).
    const auto decode = [&] {
      for (std::size_t k = 0; k < running.size() && budget >= step_tokens; ++k) {
        const Running& r = running[k];
        const Request& q = requests[r.index];
        if (r.prefilled < q.prompt_tokens) continue;
        passes.push_back({ServingPhase::Decode, 1, step_tokens, q.prompt_tokens + r.produced + step_tokens - 1});
        members.emplace_back(k, step_tokens);
        budget -= step_tokens;
      }
    };
    if (limits.mixed_batches) decode();
    for (std::size_t k = 0; k < running.size() && budget > 0; ++k) {
      const Running& r = running[k];
      const int remaining = requests[r.index].prompt_tokens - r.prefilled;
      if (remaining == 0) continue;
      const int chunk = chunk_of(remaining);
      if (chunk == 0) continue;
      passes.push_back({ServingPhase::Prefill, 1, chunk, r.prefilled + chunk, chunk == remaining});
      members.emplace_back(k, chunk);
      budget -= chunk;
    }
    // Requests whose prefix has come from host memory, first (their blocks were reserved when the load began).
    while (!loaded.empty() && std::ssize(running) < limits.max_sequences && (budget > 0 || passes.empty())) {
      const Running& r = loaded.front();
      const int remaining = requests[r.index].prompt_tokens - r.prefilled;
      const int chunk = chunk_of(remaining);
      if (chunk == 0) break;
      running.push_back(r);
      loaded.pop_front();
      passes.push_back({ServingPhase::Prefill, 1, chunk, running.back().prefilled + chunk, chunk == remaining});
      members.emplace_back(running.size() - 1, chunk);
      budget -= chunk;
    }
    while (!waiting.empty() && !requests[waiting.front()].prefilled && std::ssize(running) < limits.max_sequences &&
           (budget > 0 || passes.empty())) {
      const std::size_t i = waiting.front();
      const long long need = blocks_for(requests[i], limits.block_tokens, speculation.tokens);
      if (need > free_blocks) break;   // head of line: later requests wait behind it
      const int cached = requests[i].cached_tokens + requests[i].loaded_tokens;
      // Its prefix first comes from host memory: its load begins, and it waits for it outside the running
      // sequences (vLLM's WAITING_FOR_REMOTE_KVS), spending no budget.
      if (requests[i].load_s > 0) {
        waiting.pop_front();
        free_blocks -= need;
        out.requests[i].admitted_s = now;
        link_free = std::max(now, link_free) + requests[i].load_s;
        loading.push_back({i, cached, 0, 0.0, link_free});
        continue;
      }
      const int chunk = chunk_of(requests[i].prompt_tokens - cached);
      if (chunk == 0) break;
      waiting.pop_front();
      free_blocks -= need;
      out.requests[i].admitted_s = now;
      running.push_back({i, cached, 0});
      passes.push_back({ServingPhase::Prefill, 1, chunk, cached + chunk, chunk == requests[i].prompt_tokens - cached});
      members.emplace_back(running.size() - 1, chunk);
      budget -= chunk;
    }
    if (!limits.mixed_batches && passes.empty()) {
      budget = std::numeric_limits<int>::max();
      decode();
    }
    if (passes.empty()) {   // nothing runs until a load ends or a request arrives
      double next = arrived < requests.size() ? requests[arrived].arrival_s : INFINITY;
      if (!loading.empty()) next = std::min(next, loading.front().ready_s);
      DTSIM_ASSERT(std::isfinite(next) && next > now, "a scheduler with requests to serve and nothing it can run");
      now = next;
      continue;
    }
    const double dt = time(passes);
    DTSIM_ASSERT(dt > 0 && std::isfinite(dt), "an iteration takes a positive, finite time");
    now += dt;
    out.busy_s += dt;
    ++out.iterations;
    for (const auto& [k, tokens] : members) {
      Running& r = running[k];
      const Request& q = requests[r.index];
      out.tokens += tokens;
      if (r.prefilled < q.prompt_tokens) {
        r.prefilled += tokens;
        if (r.prefilled == q.prompt_tokens) {   // the prompt's last chunk samples the first token
          r.produced = 1;
          r.yielded = 1.0;
          out.requests[r.index].first_token_s = now;
        }
      } else {
        r.yielded += speculation.per_round;
        r.produced = std::min(q.output_tokens, static_cast<int>(std::floor(r.yielded + 1e-9)));
      }
    }
    // Finished requests leave, and their blocks return to the cache.
    std::erase_if(running, [&](const Running& r) {
      const Request& q = requests[r.index];
      if (r.prefilled < q.prompt_tokens || r.produced < q.output_tokens) return false;
      out.requests[r.index].finished_s = now;
      free_blocks += blocks_for(q, limits.block_tokens, speculation.tokens);
      ++finished;
      if (on_finished) on_finished();
      return true;
    });
  }
  out.end_s = now;
  return out;
}

}  // namespace dtsim::workloads
