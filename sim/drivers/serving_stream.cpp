// `run` on a scenario with `inference.requests`: the stream served by the continuous-batching scheduler
// (workloads/serving_scheduler.hpp), every iteration timed in the analytic engine's closed form on the cluster
// (sim/analytic/serving_iterations.hpp). Colocated: requests go round-robin to the data-parallel replicas, each
// prefilling and decoding its own. Disaggregated: a prefill pool and a decode pool of the same cluster; each
// request's prompt is prefilled (and its first token sampled) on a prefill replica, its KV cache sent over the
// topology to a decode replica, and decoded there.
#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/analytic/serving_iterations.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/run.hpp"
#include "sim/drivers/serving.hpp"
#include "workloads/memory_plan.hpp"
#include "sim/process.hpp"
#include "workloads/serving_scheduler.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;
using workloads::Request;
using workloads::SchedulerLimits;

// KV-cache blocks one GPU of `w` holds beside the weights and a full iteration's workspace (workloads::
// stream_workspace: the token budget's tokens, max_sequences sequences' logits), in the share of its memory the
// engine gives them (workloads::kv_cache_budget). Throws when nothing is left; `key` names the scenario key to blame.
long long kv_blocks_that_fit(const scenario::Scenario& s, const workloads::Workload& w, const SchedulerLimits& l,
                             const std::string& key) {
  const workloads::InferenceSpec& inf = *w.inference;
  const auto plan = workloads::plan_memory(w, s.cluster.gpu);
  Bytes workspace = workloads::stream_workspace(w.model, l.max_tokens_per_iteration, l.max_sequences, w.plan.tp);
  if (inf.speculative)   // the draft runs the same iteration after the target, on its own split
    workspace = std::max(workspace, workloads::stream_workspace(inf.speculative->draft, l.max_tokens_per_iteration,
                                                                l.max_sequences,
                                                                workloads::draft_tp(*inf.speculative, w.plan.tp)));
  const Bytes taken = plan.parts.params + workspace;
  // A block holds its tokens' keys and values on a GPU, the draft's beside the target's under speculative decoding
  // (the whole draft's on a one-GPU draft).
  double token_bytes = workloads::kv_bytes_per_token(w.model, inf.kv_cache).value() /
                       (workloads::kv_split(w.model, w.plan.tp) * w.plan.pp);
  if (inf.speculative)
    token_bytes += workloads::kv_bytes_per_token(inf.speculative->draft, inf.kv_cache).value() /
                   (workloads::kv_split(inf.speculative->draft, workloads::draft_tp(*inf.speculative, w.plan.tp)) *
                    w.plan.pp);
  const double block_bytes = token_bytes * l.block_tokens;
  const double left = workloads::kv_cache_budget(inf.framework, s.cluster.gpu, l, w.plan.tp, w.plan.pp,
                                                plan.parts.params, workspace).value();
  if (left < block_bytes)
    throw InputError(key, fmt::format("{:.1f} of {:.1f} GB", taken.value() / 1e9, plan.capacity.value() / 1e9),
                     fmt::format("the weights and an iteration's workspace ({} tokens, {} sequences) leave no GPU "
                                 "memory for the KV cache in {}'s share of it:", l.max_tokens_per_iteration,
                                 l.max_sequences, workloads::to_string(inf.framework)),
                     "more GPUs (tp or pp), narrower weights, or a smaller inference.scheduler.max_tokens_per_iteration",
                     s.file);
  return static_cast<long long>(std::floor(left / block_bytes));
}

// `l` with its KV blocks (what the memory plan leaves when not given) and, under SGLang's rule
// (sequences_from_cache), the sequence limit that cache gives.
SchedulerLimits sized(const scenario::Scenario& s, const workloads::Workload& w, SchedulerLimits l, const std::string& key) {
  if (l.kv_blocks == 0) l.kv_blocks = kv_blocks_that_fit(s, w, l, key);
  if (l.sequences_from_cache)
    l.max_sequences = workloads::sglang_running_limit(l.kv_blocks * l.block_tokens, w.inference->requests->max_context);
  return l;
}

// The q-quantile of `v` (0 <= q <= 1), interpolated between order statistics (numpy's default).
double quantile(std::vector<double> v, double q) {
  std::ranges::sort(v);
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}
json quantile_or_null(const std::vector<double>& v, double q) { return v.empty() ? json(nullptr) : json(quantile(v, q)); }

// One request's life, whoever served it.
struct Served {
  Request request;
  double admitted_s = 0, first_token_s = 0, finished_s = 0;
};

// What the pools did: iterations, tokens computed, busy time summed over replicas, replicas.
struct Work {
  long long iterations = 0, tokens = 0;
  double busy_s = 0;
  int replicas = 0;
  void add(const workloads::ServedStream& s) {
    iterations += s.iterations;
    tokens += s.tokens;
    busy_s += s.busy_s;
  }
};

// A pool's costs: the pool's rank r is the cluster's rank offset + r.
sim::CommCosts shifted(sim::CommCosts base, int offset) {
  return {[base, offset](const workloads::CollectiveOp& op, const std::vector<int>& group) {
            std::vector<int> g(group);
            for (int& r : g) r += offset;
            return base.collective(op, g);
          },
          [base, offset](const workloads::SendOp& op, int from, int to) { return base.transfer(op, from + offset, to + offset); }};
}

// `requests` dealt round-robin to `replicas` shares.
std::vector<std::vector<Request>> deal(const std::vector<Request>& requests, int replicas) {
  std::vector<std::vector<Request>> shares(static_cast<std::size_t>(replicas));
  for (std::size_t i = 0; i < requests.size(); ++i) shares[i % shares.size()].push_back(requests[i]);
  return shares;
}

// Each request that ends, counted where a simulation child's progress line reads it (sim/process.hpp).
void count_finished() { sim::progress().done.fetch_add(1, std::memory_order_relaxed); }

// The colocated stream: each data-parallel replica serves its share, prefill and decode.
std::vector<Served> serve_colocated(const scenario::Scenario& s, const topology::Topology& topo, const std::vector<Request>& requests,
                                    SchedulerLimits limits, Work& work, json& details) {
  const auto& w = *s.workload;
  const bool planned = limits.kv_blocks == 0;
  limits = sized(s, w, limits, "inference.requests");
  const sim::CommCosts costs = scenario_costs(s, topo);
  sim::ServingIterations timer(w, s.cluster.gpu, costs);
  workloads::IterationTime time = [&](std::span<const workloads::ServingPass> p) { return timer(p).value(); };
  // Speculative decoding: the target's passes carry the drafted tokens; before them the draft prefills the same
  // chunks and runs its `tokens` decode steps, one token a sequence each.
  const auto& spec = w.inference->speculative;
  std::optional<sim::ServingIterations> draft_timer;
  workloads::SpeculativeRounds rounds;
  std::vector<workloads::ServingPass> first, steps;
  if (spec) {
    draft_timer.emplace(workloads::draft_workload(w), s.cluster.gpu, costs);
    rounds = {spec->tokens, workloads::speculative_tokens_per_round(*spec)};
    time = [&](std::span<const workloads::ServingPass> passes) {
      first.clear();
      steps.clear();
      for (workloads::ServingPass p : passes) {
        if (p.phase == workloads::ServingPhase::Decode) {
          p.context -= p.new_tokens - 1;   // the draft's step: one token over the cache as it stands
          p.new_tokens = 1;
          steps.push_back(p);
        }
        first.push_back(p);
      }
      double t = timer(passes).value() + (*draft_timer)(first).value();
      if (!steps.empty()) t += (spec->tokens - 1) * (*draft_timer)(steps).value();
      return t;
    };
  }
  std::vector<Served> out;
  work.replicas = w.plan.dp;
  for (const auto& share : deal(requests, w.plan.dp)) {
    const auto served = located(s, [&] { return workloads::serve_requests(share, limits, time, count_finished, rounds); });
    work.add(served);
    for (const auto& r : served.requests) out.push_back({r.request, r.admitted_s, r.first_token_s, r.finished_s});
  }
  details["kv_blocks"] = limits.kv_blocks;
  details["kv_blocks_from"] = planned ? "memory plan" : "inference.scheduler.kv_blocks";
  details["max_sequences"] = limits.max_sequences;
  return out;
}

// A pool of the cluster as a workload: `pool.tp`-GPU replicas, pipeline 1.
workloads::Workload pool_workload(const scenario::Scenario& s, const workloads::ServingPool& pool, const char* name) {
  workloads::Workload w = *s.workload;
  w.plan.tp = pool.tp;
  w.plan.pp = 1;
  w.plan.vpp = 1;
  w.plan.dp = pool.gpus / pool.tp;
  w.plan.layers_per_stage.clear();
  try {
    workloads::check_plan(w, pool.gpus);
  } catch (const InputError& e) {
    throw InputError(fmt::format("inference.disaggregation.{}.tp", name), std::to_string(pool.tp), e.reason(), e.allowed(), s.file);
  }
  return w;
}

// The disaggregated stream: prefill replicas, KV transfers (one at a time out of each prefill replica), decode
// replicas.
std::vector<Served> serve_disaggregated(const scenario::Scenario& s, const topology::Topology& topo,
                                        const std::vector<Request>& requests, const SchedulerLimits& given,
                                        Work& work, json& details) {
  const auto& d = *s.workload->inference->disaggregation;
  const int gpus = cluster_gpus(s);
  if (d.prefill.gpus + d.decode.gpus > gpus)
    throw InputError("inference.disaggregation", fmt::format("{} + {} GPUs", d.prefill.gpus, d.decode.gpus),
                     fmt::format("the pools need more GPUs than the cluster's {}:", gpus),
                     "prefill.gpus + decode.gpus <= the cluster's GPUs", s.file);
  const auto base = scenario_costs(s, topo);
  const workloads::Workload wp = pool_workload(s, d.prefill, "prefill"), wd = pool_workload(s, d.decode, "decode");
  const SchedulerLimits lp = sized(s, wp, given, "inference.disaggregation.prefill");
  const SchedulerLimits ld = sized(s, wd, given, "inference.disaggregation.decode");
  sim::ServingIterations prefill_timer(wp, s.cluster.gpu, base), decode_timer(wd, s.cluster.gpu, shifted(base, d.prefill.gpus));
  const workloads::IterationTime prefill_time = [&](std::span<const workloads::ServingPass> p) { return prefill_timer(p).value(); };
  const workloads::IterationTime decode_time = [&](std::span<const workloads::ServingPass> p) { return decode_timer(p).value(); };
  const int prefill_replicas = wp.plan.dp, decode_replicas = wd.plan.dp;
  work.replicas = prefill_replicas + decode_replicas;

  // Prefill: each request to its first token (output 1), its index kept in `arrival order`.
  std::vector<Served> out(requests.size());
  std::vector<std::vector<std::size_t>> prefilled_by(static_cast<std::size_t>(prefill_replicas));
  // The host tier's load reaches the prefill pool's GPUs, split as that pool splits the model.
  const double load_per_token =
      s.workload->inference->kv_offload ? workloads::host_load_time(wp, s.cluster.gpu, 1.0).value() : 0.0;
  for (int r = 0; r < prefill_replicas; ++r) {
    std::vector<Request> share;
    std::vector<std::size_t> index;
    for (std::size_t i = static_cast<std::size_t>(r); i < requests.size(); i += static_cast<std::size_t>(prefill_replicas)) {
      share.push_back(requests[i]);
      share.back().output_tokens = 1;
      share.back().load_s = share.back().loaded_tokens * load_per_token;
      index.push_back(i);
    }
    const auto served = located(s, [&] { return workloads::serve_requests(share, lp, prefill_time); });
    work.add(served);
    for (std::size_t k = 0; k < index.size(); ++k) {
      out[index[k]] = {requests[index[k]], served.requests[k].admitted_s, served.requests[k].first_token_s, 0};
      prefilled_by[static_cast<std::size_t>(r)].push_back(index[k]);
    }
  }
  // KV transfers, in the order each prefill replica finishes its prompts, to decode replica (request % replicas).
  std::vector<double> transfer_s, transfer_bytes;
  std::vector<std::vector<Request>> decode_share(static_cast<std::size_t>(decode_replicas));
  std::vector<std::vector<std::size_t>> decode_index(static_cast<std::size_t>(decode_replicas));
  const auto ranks = [](int first, int count) {
    std::vector<int> v(static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) v[static_cast<std::size_t>(k)] = first + k;
    return v;
  };
  const auto& m = s.workload->model;
  const auto kv = s.workload->inference->kv_cache;
  for (int r = 0; r < prefill_replicas; ++r) {
    auto& order = prefilled_by[static_cast<std::size_t>(r)];
    std::ranges::stable_sort(order, {}, [&](std::size_t i) { return out[i].first_token_s; });
    double free = 0;
    const auto from = ranks(r * d.prefill.tp, d.prefill.tp);
    for (const std::size_t i : order) {
      if (requests[i].output_tokens <= 1) {   // its one token came with the prefill: nothing to send or decode
        out[i].finished_s = out[i].first_token_s;
        count_finished();
        continue;
      }
      const int dr = static_cast<int>(i % static_cast<std::size_t>(decode_replicas));
      const auto to = ranks(d.prefill.gpus + dr * d.decode.tp, d.decode.tp);
      const double tokens = requests[i].prompt_tokens;
      const double t = sim::kv_transfer_time(m, kv, tokens, from, to, base).value();
      const double start = std::max(out[i].first_token_s, free);
      free = start + t;
      transfer_s.push_back(free - out[i].first_token_s);   // queued behind earlier transfers, then sent
      transfer_bytes.push_back(tokens * workloads::kv_bytes_per_token(m, kv).value());
      Request arrived = requests[i];
      arrived.arrival_s = free;
      arrived.prefilled = true;
      arrived.load_s = 0;   // its prefix was loaded in the prefill pool
      decode_share[static_cast<std::size_t>(dr)].push_back(arrived);
      decode_index[static_cast<std::size_t>(dr)].push_back(i);
    }
  }
  // Decode: each replica's requests in the order their caches arrive.
  for (int r = 0; r < decode_replicas; ++r) {
    auto& share = decode_share[static_cast<std::size_t>(r)];
    auto& index = decode_index[static_cast<std::size_t>(r)];
    std::vector<std::size_t> order(share.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::ranges::stable_sort(order, {}, [&](std::size_t k) { return share[k].arrival_s; });
    std::vector<Request> sorted;
    for (std::size_t k : order) sorted.push_back(share[k]);
    const auto served = located(s, [&] { return workloads::serve_requests(sorted, ld, decode_time, count_finished); });
    work.add(served);
    for (std::size_t k = 0; k < order.size(); ++k) out[index[order[k]]].finished_s = served.requests[k].finished_s;
  }
  details["kv_blocks"] = json{{"prefill", lp.kv_blocks}, {"decode", ld.kv_blocks}};
  details["max_sequences"] = json{{"prefill", lp.max_sequences}, {"decode", ld.max_sequences}};
  details["kv_blocks_from"] = given.kv_blocks == 0 ? "memory plan" : "inference.scheduler.kv_blocks";
  details["disaggregation"] = {{"prefill", {{"gpus", d.prefill.gpus}, {"tp", d.prefill.tp}, {"replicas", prefill_replicas}}},
                               {"decode", {{"gpus", d.decode.gpus}, {"tp", d.decode.tp}, {"replicas", decode_replicas}}},
                               {"p50_kv_transfer_s", quantile_or_null(transfer_s, 0.50)},
                               {"p99_kv_transfer_s", quantile_or_null(transfer_s, 0.99)},
                               {"mean_kv_bytes", transfer_bytes.empty() ? 0.0 : [&] {
                                  double sum = 0;
                                  for (double b : transfer_bytes) sum += b;
                                  return sum / static_cast<double>(transfer_bytes.size());
                                }()}};
  return out;
}

}  // namespace

long long stream_kv_blocks_that_fit(const scenario::Scenario& s) {
  return kv_blocks_that_fit(s, *s.workload, s.workload->inference->scheduler, "inference.requests");
}

void serve_stream(const scenario::Scenario& s, const topology::Topology& topo, json& row) {
  const auto& inf = *s.workload->inference;
  sim::progress().requests.store(true, std::memory_order_relaxed);   // the passes' ops before it are not the stream's
  sim::progress().total.store(0, std::memory_order_relaxed);
  sim::progress().done.store(0, std::memory_order_relaxed);
  auto requests = workloads::draw_requests(*inf.requests);
  long long cached = 0, loaded = 0;   // prompt tokens the prefix cache spared: on the GPUs, and from host memory
  int most_loaded = 0;
  const double load_per_token = inf.kv_offload ? workloads::host_load_time(*s.workload, s.cluster.gpu, 1.0).value() : 0.0;
  for (Request& r : requests) {
    const workloads::CachedPrefix prefix = workloads::cached_prefix(inf, r.prompt_tokens);
    r.cached_tokens = prefix.gpu;
    r.loaded_tokens = prefix.host;
    r.load_s = prefix.host * load_per_token;
    cached += prefix.gpu;
    loaded += prefix.host;
    most_loaded = std::max(most_loaded, prefix.host);
  }
  located(s, [&] { workloads::check_host_cache(*s.workload, most_loaded); });
  sim::progress().total.store(requests.size(), std::memory_order_relaxed);
  Work work;
  json details = json::object();
  details["framework"] = workloads::to_string(inf.framework);
  const std::vector<Served> served = inf.disaggregation
                                         ? serve_disaggregated(s, topo, requests, inf.scheduler, work, details)
                                         : serve_colocated(s, topo, requests, inf.scheduler, work, details);
  std::vector<double> ttft, tpot, queue, latency;
  long long output = 0, truncated = 0;
  double end = 0;
  for (const Served& r : served) {
    ttft.push_back(r.first_token_s - r.request.arrival_s);
    queue.push_back(r.admitted_s - r.request.arrival_s);
    latency.push_back(r.finished_s - r.request.arrival_s);
    if (r.request.output_tokens > 1) tpot.push_back((r.finished_s - r.first_token_s) / (r.request.output_tokens - 1));
    output += r.request.output_tokens;
    truncated += r.request.truncated ? 1 : 0;
    end = std::max(end, r.finished_s);
  }
  row["p50_ttft_s"] = quantile_or_null(ttft, 0.50);
  row["p99_ttft_s"] = quantile_or_null(ttft, 0.99);
  row["p50_tpot_s"] = quantile_or_null(tpot, 0.50);
  row["p99_tpot_s"] = quantile_or_null(tpot, 0.99);
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? json(nullptr) : json(sum / static_cast<double>(v.size()));
  };
  row["mean_ttft_s"] = mean(ttft);   // what serving benchmarks (vLLM's, TensorRT-LLM's) print beside percentiles
  row["mean_tpot_s"] = mean(tpot);
  const double rate = end > 0 ? static_cast<double>(output) / end : 0.0;
  row["throughput_tokens_per_s"] = rate;
  // A stream's cost a token is at the rate it served (the static figure is one request alone's).
  if (row.contains("cost") && rate > 0)
    row["cost"]["usd_per_million_tokens"] = usd_per_million_tokens(row["cost"]["usd_per_hour"].get<double>(), rate);
  json stream = {
      {"requests", requests.size()},
      {"requests_truncated", truncated},
      {"arrival_rate_per_s", inf.requests->rate_per_s},
      {"duration_s", inf.requests->duration_s},
      {"completion_s", end},
      {"throughput_requests_per_s", end > 0 ? static_cast<double>(requests.size()) / end : 0.0},
      {"output_tokens", output},
      {"prefix_cached_tokens", cached},
      {"host_loaded_tokens", loaded},
      {"p50_queue_s", quantile_or_null(queue, 0.50)},
      {"p99_queue_s", quantile_or_null(queue, 0.99)},
      {"p50_latency_s", quantile_or_null(latency, 0.50)},
      {"p99_latency_s", quantile_or_null(latency, 0.99)},
      {"iterations", work.iterations},
      {"mean_tokens_per_iteration",
       work.iterations > 0 ? static_cast<double>(work.tokens) / static_cast<double>(work.iterations) : 0.0},
      {"busy_fraction", end > 0 ? work.busy_s / (end * work.replicas) : 0.0},
      {"timing", "each iteration in the analytic engine's closed form (no contention)"}};
  stream.update(details);
  row["stream"] = stream;
}

}  // namespace dtsim::drivers
