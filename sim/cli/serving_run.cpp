// `dtsim run` on an `inference:` scenario: the static batch's prefill and its mean decode step, each a
// StepGraph (workloads/serving.hpp) played on the scenario's engine and topology, and what a buyer reads from
// them: time to first token, time per output token, tokens per second, the roofline regime of each phase, the
// memory plan and the largest batch that fits.
#include <algorithm>
#include <cmath>

#include "results/memory_report.hpp"
#include "results/topology_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/cli/serving_run.hpp"
#include "topology/builders.hpp"
#include "workloads/memory_plan.hpp"
#include "sim/analytic/serving_iterations.hpp"
#include "workloads/serving.hpp"
#include "workloads/serving_scheduler.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;
using workloads::ServingPhase;

struct Phase {
  workloads::ServingPass pass;
  PassTiming timing;
  double flops = 0;   // one replica's, every GPU of it
  double bytes = 0;
  Seconds compute;    // the pass's compute, stage after stage (one GPU of each stage)
};

Phase play_phase(const Scenario& s, const topology::Topology& topo, ServingPhase which, const PlayServing& play) {
  const auto& w = *s.workload;
  Phase p{workloads::serving_pass(*w.inference, which), {}, 0, 0, Seconds(0)};
  const auto graph = located(s, [&] { return workloads::generate_serving_step(w, s.cluster.gpu, p.pass); });
  p.timing = play(graph, topo);
  for (std::size_t c = 0; c < graph.classes.size(); ++c) {
    for (const auto& op : graph.classes[c].ops)
      if (const auto* compute = std::get_if<workloads::ComputeOp>(&op.body)) {
        p.flops += compute->flops.value() * w.plan.tp;
        p.bytes += compute->bytes.value() * w.plan.tp;
      }
    p.compute += Seconds(p.timing.compute_busy_s.at(c));
  }
  return p;
}

json phase_json(const Phase& p, const topology::GpuSpec& gpu, workloads::Precision precision) {
  const double time = p.timing.time_s;
  const double intensity = p.bytes > 0 ? p.flops / p.bytes : 0.0;
  const double ridge = gpu.ridge_point(precision);
  return {{"time_s", time},
          {"batch", p.pass.batch},
          {"new_tokens_per_sequence", p.pass.new_tokens},
          {"context_tokens", p.pass.context},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"intensity_flop_per_byte", intensity},
          {"ridge_flop_per_byte", ridge},
          {"regime", intensity < ridge ? "memory-bound" : "compute-bound"},
          {"breakdown_s", {{"compute", p.compute.value()}, {"exposed_comm", time - p.compute.value()}}}};
}

// The largest batch whose memory plan fits (0: not even one sequence; at most the batch a scenario may give),
// by doubling then bisection: the plan grows with the batch. Invariant: lo fits (or is 0), hi does not (or is
// past the limit).
long long max_batch_that_fits(workloads::Workload w, const topology::GpuSpec& gpu) {
  auto fits = [&](long long batch) {
    w.inference->batch = static_cast<int>(batch);
    return workloads::plan_memory(w, gpu).fits;
  };
  long long lo = 0, hi = 1;
  while (hi <= kMaxSequences && fits(hi)) lo = hi, hi *= 2;
  hi = std::min(hi, kMaxSequences + 1);
  while (hi - lo > 1) {
    const long long mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

// KV-cache blocks one GPU holds beside the weights and a full iteration's decode workspace (max_sequences
// sequences over the whole context): what vLLM gives the cache after profiling a peak batch. Throws when nothing
// is left.
long long kv_blocks_that_fit(const Scenario& s, const workloads::SchedulerLimits& l) {
  workloads::Workload w = *s.workload;
  workloads::InferenceSpec& inf = *w.inference;
  inf.batch = l.max_sequences;
  const auto plan = workloads::plan_memory(w, s.cluster.gpu);
  const Bytes taken = plan.parts.params + plan.parts.activations;
  workloads::InferenceSpec block = inf;
  block.batch = 1;
  block.context = l.block_tokens;
  const double block_bytes = workloads::kv_cache_bytes(w.model, block, w.plan.tp).value() / w.plan.pp;
  const double left = (plan.capacity - taken).value();
  if (left < block_bytes)
    throw InputError("inference.requests", fmt::format("{:.1f} of {:.1f} GB", taken.value() / 1e9, plan.capacity.value() / 1e9),
                     fmt::format("the weights and the decode workspace of {} sequences leave no GPU memory for the KV "
                                 "cache:", l.max_sequences),
                     "more GPUs (tp or pp), narrower weights, or fewer inference.scheduler.max_sequences", s.file);
  return static_cast<long long>(std::floor(left / block_bytes));
}

// The q-quantile of `v` (0 <= q <= 1), interpolated between order statistics (numpy's default); 0 when empty.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::ranges::sort(v);
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// The served stream of `inference.requests` (DESIGN.md's p50/p99 fields at the row's top level, the rest under
// `stream`). Requests go round-robin to the data-parallel replicas, each serving its share with its own
// continuous-batching scheduler; every iteration is timed in the analytic engine's closed form on the cluster.
void serve_stream(const Scenario& s, const topology::Topology& topo, json& row) {
  const auto& w = *s.workload;
  const auto& inf = *w.inference;
  workloads::SchedulerLimits limits = inf.scheduler;
  const bool planned = limits.kv_blocks == 0;
  if (planned) limits.kv_blocks = kv_blocks_that_fit(s, limits);
  const auto requests = workloads::draw_requests(*inf.requests);
  const int replicas = w.plan.dp;
  std::vector<std::vector<workloads::Request>> shares(static_cast<std::size_t>(replicas));
  for (std::size_t i = 0; i < requests.size(); ++i) shares[i % shares.size()].push_back(requests[i]);
  sim::ServingIterations timer(w, s.cluster.gpu, scenario_costs(s, topo));
  const workloads::IterationTime time = [&](std::span<const workloads::ServingPass> passes) { return timer(passes).value(); };

  std::vector<double> ttft, tpot, queue, latency;
  long long iterations = 0, tokens = 0, output = 0, truncated = 0;
  double busy = 0, end = 0;
  for (const auto& share : shares) {
    const auto served = located(s, [&] { return workloads::serve_requests(share, limits, time); });
    iterations += served.iterations;
    tokens += served.tokens;
    busy += served.busy_s;
    end = std::max(end, served.end_s);
    for (const auto& r : served.requests) {
      ttft.push_back(r.first_token_s - r.request.arrival_s);
      queue.push_back(r.admitted_s - r.request.arrival_s);
      latency.push_back(r.finished_s - r.request.arrival_s);
      if (r.request.output_tokens > 1) tpot.push_back((r.finished_s - r.first_token_s) / (r.request.output_tokens - 1));
      output += r.request.output_tokens;
      truncated += r.request.truncated ? 1 : 0;
    }
  }
  const auto q = [](const std::vector<double>& v, double p) { return v.empty() ? json(nullptr) : json(quantile(v, p)); };
  row["p50_ttft_s"] = q(ttft, 0.50);
  row["p99_ttft_s"] = q(ttft, 0.99);
  row["p50_tpot_s"] = q(tpot, 0.50);
  row["p99_tpot_s"] = q(tpot, 0.99);
  row["throughput_tokens_per_s"] = end > 0 ? static_cast<double>(output) / end : 0.0;
  row["stream"] = {
      {"requests", requests.size()},
      {"requests_truncated", truncated},
      {"arrival_rate_per_s", inf.requests->rate_per_s},
      {"duration_s", inf.requests->duration_s},
      {"completion_s", end},
      {"throughput_requests_per_s", end > 0 ? static_cast<double>(requests.size()) / end : 0.0},
      {"output_tokens", output},
      {"p50_queue_s", q(queue, 0.50)},
      {"p99_queue_s", q(queue, 0.99)},
      {"p50_latency_s", q(latency, 0.50)},
      {"p99_latency_s", q(latency, 0.99)},
      {"iterations", iterations},
      {"mean_tokens_per_iteration", iterations > 0 ? static_cast<double>(tokens) / static_cast<double>(iterations) : 0.0},
      {"busy_fraction", end > 0 ? busy / (end * replicas) : 0.0},
      {"kv_blocks", limits.kv_blocks},
      {"kv_blocks_from", planned ? "memory plan" : "inference.scheduler.kv_blocks"},
      {"timing", "each iteration in the analytic engine's closed form (no contention)"}};
}

}  // namespace

json simulate_serving(const Scenario& s, const PlayServing& play) {
  const auto& w = *s.workload;
  const auto& inf = *w.inference;
  const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  const auto precision = workloads::serving_compute_precision(inf, s.cluster.gpu);
  const Phase prefill = play_phase(s, built.topology, ServingPhase::Prefill, play);
  const double ttft = prefill.timing.time_s;
  const double replicas = w.plan.dp;
  const int gpus = w.plan.tp * w.plan.pp * w.plan.dp;
  json row = {{"name", s.name},
              {"gpus", gpus},
              {"layout", s.cluster.graph ? *s.cluster.graph : results::cluster_layout(s.cluster)},
              {"engine", s.simulation.engine == EngineKind::Simgrid ? "simgrid" : "analytic"},
              {"network_model", prefill.timing.network_model},
              {"collective_algo", std::string(sim::to_string(s.simulation.collective_algo))},
              {"compute_precision", std::string(to_string(precision))},
              {"ttft_s", ttft}};
  json phases = {{"prefill", phase_json(prefill, s.cluster.gpu, precision)}};
  if (inf.output_tokens > 0) {
    const Phase decode = play_phase(s, built.topology, ServingPhase::Decode, play);
    const double tpot = decode.timing.time_s;
    const double request = ttft + (inf.output_tokens - 1) * tpot;   // the first token comes with the prefill
    row["tpot_s"] = tpot;
    row["request_time_s"] = request;
    row["tokens_per_s"] = replicas * inf.batch * inf.output_tokens / request;
    row["decode_tokens_per_s"] = replicas * inf.batch / tpot;
    phases["decode"] = phase_json(decode, s.cluster.gpu, precision);
  } else {   // prefill only (an encoder's serving): prompt tokens per second
    row["tpot_s"] = nullptr;
    row["request_time_s"] = ttft;
    row["tokens_per_s"] = replicas * inf.batch * inf.prompt_tokens / ttft;
    row["decode_tokens_per_s"] = nullptr;
  }
  row["tokens_per_s_per_gpu"] = row["tokens_per_s"].get<double>() / gpus;
  row["phases"] = phases;
  const auto memory = workloads::plan_memory(w, s.cluster.gpu);
  row["memory"] = results::memory_json(memory);
  row["max_batch_that_fits"] = max_batch_that_fits(w, s.cluster.gpu);
  if (inf.requests) serve_stream(s, built.topology, row);
  json reference = json::object();
  if (!s.reference.source.empty()) reference["source"] = s.reference.source;
  for (const auto& [k, v] : s.reference.values) reference[k] = v;
  row["reference"] = reference;
  return row;
}

}  // namespace dtsim::cli
