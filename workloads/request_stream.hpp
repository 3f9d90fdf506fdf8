// What a served request stream is (DESIGN.md's `inference.requests`) and the limits of the scheduler that serves
// it (`inference.scheduler`): plain data the scenario reader fills and workloads/serving_scheduler.hpp serves.
#pragma once

#include <cstdint>

namespace dtsim::workloads {

// A length distribution in tokens: fixed (`a`), uniform on [a, b], normal or lognormal of mean `a` and standard
// deviation `b` (the lengths' own mean and deviation, not the logarithm's); draws are rounded and at least 1.
struct LengthDistribution {
  enum class Kind { Fixed, Uniform, Normal, Lognormal };
  Kind kind = Kind::Fixed;
  double a = 1;
  double b = 0;
};

struct RequestStream {
  LengthDistribution prompt_tokens;
  LengthDistribution output_tokens;
  double rate_per_s = 1;    // Poisson arrivals
  double duration_s = 60;   // requests arrive in [0, duration)
  std::uint64_t seed = 1;
  int max_context = 0;      // a request's prompt + output at most (0: no limit): a drawn prompt is cut to
                            // max_context - 1 tokens, then its output to what the context leaves (as a server caps
                            // generation at the model's length)
};

// The serving engine whose scheduler serves the stream (`inference.framework`); its defaults are
// framework_scheduler's.
enum class ServingFramework { Vllm, Sglang, Trtllm };

struct SchedulerLimits {
  int max_tokens_per_iteration = 8192;   // vLLM's max_num_batched_tokens
  int max_sequences = 256;               // vLLM's max_num_seqs
  long long kv_blocks = 0;               // the KV cache's capacity, in blocks
  int block_tokens = 16;                 // vLLM's block_size
  bool chunked_prefill = true;           // off: a prompt is prefilled whole, alone if it exceeds the budget
  bool mixed_batches = true;             // off: an iteration prefills or decodes, never both, prefill first (SGLang's
                                         // default; its --enable-mixed-chunk mixes them)
  // max_sequences follows the KV cache's size (sglang_running_limit) once the memory plan gives it: SGLang's
  // max_running_requests when not given. Never set with a given max_sequences.
  bool sequences_from_cache = false;
};

// Disaggregated serving (`inference.disaggregation`): the cluster's first `prefill.gpus` GPUs prefill, the next
// `decode.gpus` decode, each pool in replicas of `tp` GPUs (pipeline parallelism 1); each request's KV cache goes
// from its prefill replica to a decode replica over the fabric.
struct ServingPool {
  int gpus = 1;
  int tp = 1;
};
struct Disaggregation {
  ServingPool prefill;
  ServingPool decode;
};

}  // namespace dtsim::workloads
