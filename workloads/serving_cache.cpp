// The prefix cache of a served prompt (serving.hpp): the tokens its GPU tier and its host-memory tier hold, and the
// host tier's loads and size.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/serving.hpp"

namespace dtsim::workloads {
namespace {

// The whole blocks of `block_tokens` in `tokens` (vLLM matches and keeps the cache by block).
int whole_blocks(double tokens, int block_tokens) {
  return static_cast<int>(std::floor(tokens / block_tokens + 1e-9)) * block_tokens;
}

}  // namespace

int prefix_cached_tokens(int prompt_tokens, double hit, int block_tokens) {
  DTSIM_ASSERT(prompt_tokens >= 1 && hit >= 0.0 && hit <= 1.0 && block_tokens >= 1, "a checked prefix-cache hit");
  // vLLM caps a hit at the prompt less its last token, then keeps whole blocks of that (vllm/v1/core/
  // kv_cache_manager.py, get_computed_blocks: max_cache_hit_length = num_tokens - 1; only full blocks are hashed).
  return whole_blocks(std::min(hit * prompt_tokens, static_cast<double>(prompt_tokens - 1)), block_tokens);
}

CachedPrefix cached_prefix(const InferenceSpec& inf, int prompt_tokens) {
  const int block = inf.scheduler.block_tokens;
  CachedPrefix c{prefix_cached_tokens(prompt_tokens, inf.prefix_cache_hit, block), 0};
  // The host tier's share beyond the GPU's, capped as the GPU's hit is (never the last token).
  if (inf.kv_offload)
    c.host = whole_blocks(std::min(inf.kv_offload->hit * prompt_tokens, static_cast<double>(prompt_tokens - 1 - c.gpu)),
                          block);
  return c;
}

Seconds host_load_time(const Workload& w, const topology::GpuSpec& gpu, double tokens) {
  const InferenceSpec& inf = *w.inference;
  const auto layers = stage_layers(w.plan, w.model.layers);
  const double share = *std::ranges::max_element(layers) / static_cast<double>(w.model.layers);
  double per_gpu = kv_bytes_per_token(w.model, inf.kv_cache).value() / kv_split(w.model, w.plan.tp);
  // A speculative draft's cache is offloaded and loaded with the target's (its own KV cache, on the target's
  // pipeline split and its own tensor parallelism).
  if (inf.speculative)
    per_gpu += kv_bytes_per_token(inf.speculative->draft, inf.kv_cache).value() /
               kv_split(inf.speculative->draft, draft_tp(*inf.speculative, w.plan.tp));
  const topology::LinkSpec& link = topology::host_memory_link(gpu);
  return Seconds(tokens * per_gpu * share / (link.bandwidth.value() * link.efficiency));
}

Bytes host_cache_bytes(const Workload& w, double tokens) {
  const double copies = w.model.mla() ? w.plan.tp : 1.0;
  double per_token = kv_bytes_per_token(w.model, w.inference->kv_cache).value() * copies;
  if (const auto& spec = w.inference->speculative) per_token += kv_bytes_per_token(spec->draft, w.inference->kv_cache).value();
  return Bytes(tokens * per_token);
}

void check_host_cache(const Workload& w, long long tokens) {
  const auto& offload = w.inference->kv_offload;
  if (!offload || tokens <= 0) return;
  const Bytes need = host_cache_bytes(w, static_cast<double>(tokens));
  if (need.value() > offload->host_GB * 1e9)
    throw InputError("inference.kv_offload.host_GB", fmt::format("{:g}", offload->host_GB),
                     fmt::format("cannot hold the host hits loaded at once, {} tokens of KV cache ({:.3g} GB for a "
                                 "replica):",
                                 tokens, need.value() / 1e9),
                     fmt::format("at least {:.3g}, or a smaller kv_offload.hit", need.value() / 1e9));
}

}  // namespace dtsim::workloads
