// The duration of one continuous-batching iteration on the cluster (workloads/serving_scheduler.hpp's
// IterationTime), in closed form: what play_analytic gives for generate_serving_step of the iteration's passes,
// without building the graph. A serving step is one chain of ops (stage after stage: compute, the TP all-reduces,
// the pipeline send, the logits and their gather), so its time is the sum of their durations; and each duration
// depends on the batch's token count alone (the GEMMs, element-wise kernels, all-reduces and sends), on the rows
// that sample (the logits and their gather), or on one pass alone (its attention over its own cache). The first
// two are memoised by count, the third computed per pass: an hour of requests times in seconds.
// Under attention data parallelism (workloads::attention_data_parallel) a replica's iteration also waits for its
// MoE layers' two exchanges, and its experts take every replica's tokens: each other replica is taken to run as
// many tokens as this one (the replicas' iterations step together in the engines; who waits for the busiest
// replica is not modelled).
#pragma once

#include <span>
#include <map>
#include <unordered_map>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "workloads/serving.hpp"

namespace dtsim::sim {

class ServingIterations {
 public:
  // `w` holds `inference` and passes check_plan; `costs` time its collectives and sends on the cluster (rank r
  // on the topology's GPU r), e.g. analytic_costs.
  ServingIterations(const workloads::Workload& w, const topology::GpuSpec& gpu, CommCosts costs);

  // One replica's iteration running `passes` (not empty) as one batch.
  Seconds operator()(std::span<const workloads::ServingPass> passes);

 private:
  // Embedding, every layer's kernels but attention, all-reduces, sends, for `tokens` tokens of which `decode` decode
  // (multi-head latent attention treats the two apart; other models take decode 0).
  Seconds token_part(long long tokens, long long decode);
  Seconds sampling_part(long long rows);         // the logits and their gather
  Seconds attention(const workloads::ServingPass& pass) const;   // one pass, every layer

  workloads::Workload w_;
  topology::GpuSpec gpu_;
  workloads::Precision precision_;
  CommCosts costs_;
  std::vector<int> stage_layers_;
  std::vector<int> stage_moe_layers_;   // of them, MoE layers (ModelSpec::moe_layer)
  std::vector<std::vector<int>> tp_groups_;   // per stage: replica 0's TP group
  std::vector<std::vector<int>> ep_groups_;   // per stage, under attention data parallelism: its expert group
  std::vector<std::pair<int, int>> sends_;     // per stage boundary: (from rank, to rank)
  std::map<std::pair<long long, long long>, Seconds> by_tokens_;
  std::unordered_map<long long, Seconds> by_rows_;
};

// The time to send one request's KV cache (`tokens` tokens, every layer's keys and values in `kv_cache`) from a
// prefill replica whose TP ranks are `from` to a decode replica whose TP ranks are `to` (ranks as `costs` number
// them). The KV heads are split evenly over each side's ranks: a sending rank sends each receiving rank the share
// of heads both hold, one transfer after another on its path; all sending ranks at once, without contention
// (the closed form): the slowest rank's time.
Seconds kv_transfer_time(const workloads::ModelSpec& m, workloads::Precision kv_cache, double tokens,
                         std::span<const int> from, std::span<const int> to, const CommCosts& costs);

}  // namespace dtsim::sim
