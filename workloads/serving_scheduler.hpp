// A served request stream (DESIGN.md's `inference.requests`) and the iteration-level continuous-batching scheduler
// that serves it, vLLM-like: every iteration runs one token of each decoding sequence and chunks of prompts, under
// a token budget and a sequence limit; a request is admitted only when the KV cache has the blocks its prompt and
// output will hold (reserved at admission, so nothing is preempted: vLLM allocates blocks as tokens come and
// preempts when it runs out, which this conservative admission never needs), else it queues, first come first served.
//
// The scheduler knows nothing of the hardware: an iteration's duration comes from a callback given the passes it
// runs (workloads/serving.hpp's ServingPass, one per sequence), so the cluster's timing and a hand-worked test's
// are plugged in alike.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "topology/catalog.hpp"
#include "workloads/request_stream.hpp"
#include "workloads/serving.hpp"

namespace dtsim::workloads {

struct Request {
  double arrival_s = 0;
  int prompt_tokens = 1;
  int output_tokens = 1;
  bool truncated = false;   // its drawn lengths were cut to the stream's max_context
  bool prefilled = false;   // its prompt's KV cache arrives with it (disaggregated decode): admitted, it decodes at
                            // once, its first token already sampled
  int cached_tokens = 0;    // its prompt's first tokens a prefix cache holds (prefix_cached_tokens): not prefilled
  int loaded_tokens = 0;    // the next ones, in host memory (cached_prefix): loaded, not prefilled
  double load_s = 0;        // their load's time (host_load_time); loads share the host links, one after another,
                            // and the request waits for its own, admitted, while the others run
};

// The stream's requests in arrival order; the same seed gives the same requests on every machine (the generator
// and the distributions are computed here, not taken from the standard library's unspecified ones).
std::vector<Request> draw_requests(const RequestStream& stream);

// An iteration's duration in seconds, given one pass per sequence it runs (a prefill chunk or a decode token).
using IterationTime = std::function<double(std::span<const ServingPass>)>;

struct RequestOutcome {
  Request request;
  double admitted_s = 0;      // its first iteration's start
  double first_token_s = 0;   // the end of the iteration that completed its prompt
  double finished_s = 0;
};

struct ServedStream {
  std::vector<RequestOutcome> requests;   // in arrival order
  long long iterations = 0;
  long long tokens = 0;                   // prompt and output tokens computed
  double busy_s = 0;                      // time spent in iterations
  double end_s = 0;                       // the last request's finish
};

// Speculative decoding in the scheduler (InferenceSpec::speculative): a decoding sequence's pass carries the
// `tokens` drafted tokens and the target's own, tokens + 1 against the budget, and yields `per_round` tokens on
// average (speculative_tokens_per_round; the fraction carried to its next round). {0, 1}: one token a step.
struct SpeculativeRounds {
  int tokens = 0;
  double per_round = 1;
};

std::string_view to_string(ServingFramework f);
std::optional<ServingFramework> parse_serving_framework(std::string_view name);
inline constexpr std::string_view kServingFrameworkNames = "vllm, sglang, trtllm";

// The limits an engine serves with when a scenario writes none (`inference.framework`), on GPUs of `gpu`:
// - vLLM (v0.11.2's OpenAI server): 8,192 tokens and 1,024 sequences an iteration on GPUs of 70 GiB or more other
//   than the A100, else 2,048 and 256; 16-token blocks; prompts chunked into mixed batches;
// - SGLang (v0.5.6.post2): prompt chunks of 2,048 tokens below 35 GiB, 4,096 below 60, 8,192 below 160, else
//   16,384; one-token pages (64 on Blackwell for a model without MLA, its TensorRT-LLM attention kernels');
//   prefill batches apart from decode batches; max_running_requests from the cache (sequences_from_cache), or 48
//   under speculative decoding;
// - TensorRT-LLM (its engine and C++ runtime as trtllm-build and the Triton backend leave them): 8,192 tokens and
//   2,048 sequences, prompts whole (no context chunking), 64-token blocks, mixed (in-flight) batches.
// The sources are cited in the definition.
SchedulerLimits framework_scheduler(ServingFramework framework, const topology::GpuSpec& gpu, const ModelSpec& model,
                                    bool speculative);

// The GPU memory a stream's KV cache takes on one GPU of a `tp` x `pp` replica whose weights take `params` and whose
// fullest iteration's activations `workspace` (stream_workspace), as each engine sizes it when not told:
// - vLLM: gpu_memory_utilization 0.9 of the GPU's memory for everything it holds (vllm/config/cache.py; its
//   worker's determine_available_memory takes the weights, the profiled peak and the memory outside PyTorch from it);
// - TensorRT-LLM: kv_cache_free_gpu_mem_fraction 0.9 of the memory left free after the engine loads
//   (tensorrtllm_backend v0.14.0 model_instance_state.cc: "default value of 0.9");
// - SGLang: mem_fraction_static of the GPU's memory for the weights and the cache, the rest reserved for
//   activations and CUDA graphs (server_args.py _handle_gpu_memory_settings, v0.5.6.post2: (M - R) / M with R in
//   MiB 512 + 1.5 x max(chunk, 2048) + 2 x the CUDA-graph batch (8, 24 or 80, 32 or 160, 256 or 512 by memory
//   tier and tp under or from 4) + 1,024 x tp x pp / 8, at least 10,240 on GPUs over 60 GiB, rounded to 0.001),
//   of the memory free once the CUDA context is up.
// The CUDA context and the framework's own memory (GpuSpec::memory_reserve) come out of each. At least zero.
Bytes kv_cache_budget(ServingFramework framework, const topology::GpuSpec& gpu, const SchedulerLimits& limits, int tp,
                      int pp, Bytes params, Bytes workspace);

// SGLang's max_running_requests for a cache of `kv_tokens` tokens and a `context`-token model
// (python/sglang/srt/managers/tp_worker.py and model_executor/model_runner.py init_memory_pool, v0.5.6.post2):
// min(kv_tokens / 2, kv_tokens x 512 / context clamped to [2048, 4096]), at least 1.
int sglang_running_limit(long long kv_tokens, int context);

// Serves every request to its last token. A request whose prompt and output need more blocks than the cache has
// is refused (InputError on `inference.requests`), as are limits below 1.
// `finished`, when given, is called as each request ends (a caller's progress count).
ServedStream serve_requests(std::span<const Request> requests, const SchedulerLimits& limits, const IterationTime& time,
                            const std::function<void()>& finished = {}, SpeculativeRounds speculation = {});

}  // namespace dtsim::workloads
