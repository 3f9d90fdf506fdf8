// `dtsim run` on an `inference:` scenario: the static batch's prefill and its mean decode step, each a
// StepGraph (workloads/serving.hpp) played on the scenario's engine and topology, and what a buyer reads from
// them: time to first token, time per output token, tokens per second, the roofline regime of each phase, the
// memory plan and the largest batch that fits.
#include <algorithm>
#include <optional>

#include "results/energy.hpp"
#include "results/memory_report.hpp"
#include "results/topology_report.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/run.hpp"
#include "sim/drivers/cost.hpp"
#include "sim/drivers/serving.hpp"

#include "results/files.hpp"
#include "sim/simgrid/isolated.hpp"
#include "topology/builders.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/serving.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;
using workloads::ServingPhase;

struct Phase {
  workloads::ServingPass pass;
  PassTiming timing;
  double flops = 0;   // one replica's, every GPU of it
  double bytes = 0;
  Seconds compute;    // the pass's compute, stage after stage (one GPU of each stage)
  Joules gpu_energy;  // every GPU of the cluster's replicas over the pass (results/energy.hpp)
};

// `pass` of workload `w` (the scenario's, or its draft's) played on the scenario's engine.
Phase play_pass(const scenario::Scenario& s, const workloads::Workload& w, const topology::Topology& topo,
                const workloads::ServingPass& pass, const PlayServing& play, bool trace) {
  Phase p{pass, {}, 0, 0, Seconds(0), Joules(0)};
  const auto graph = located(s, [&] { return workloads::generate_serving_step(w, s.cluster.gpu, p.pass); });
  p.timing = play(graph, topo, trace);
  for (std::size_t c = 0; c < graph.classes.size(); ++c) {
    for (const auto& op : graph.classes[c].ops)
      if (const auto* compute = std::get_if<workloads::ComputeOp>(&op.body)) {
        p.flops += compute->flops.value() * w.plan.tp;
        p.bytes += compute->bytes.value() * w.plan.tp;
      }
    p.compute += Seconds(p.timing.compute_busy_s.at(c));
  }
  // The energy model reads the pass's length and each class's busy time; serving overlaps nothing with compute.
  sim::Timeline t;
  t.step_time = Seconds(p.timing.time_s);
  for (double busy : p.timing.compute_busy_s) t.classes.push_back({{}, t.step_time, Seconds(busy), Seconds(0)});
  p.gpu_energy = results::gpu_step_energy(graph, t, s.cluster.gpu, topology::power_model());
  return p;
}

// `times` runs of `a` then `b` (once), all over `per`: a speculative round (the draft's steps, the target's verify)
// per token it yields, or a prefill and the draft's (per 1). The pass and trace are b's (the target's).
Phase chained(const Phase& a, double times, const Phase& b, double per) {
  Phase out = b;
  const auto mix = [&](double x, double y) { return (times * x + y) / per; };
  out.timing.time_s = mix(a.timing.time_s, b.timing.time_s);
  for (std::size_t c = 0; c < out.timing.compute_busy_s.size() && c < a.timing.compute_busy_s.size(); ++c)
    out.timing.compute_busy_s[c] = mix(a.timing.compute_busy_s[c], b.timing.compute_busy_s[c]);
  out.flops = mix(a.flops, b.flops);
  out.bytes = mix(a.bytes, b.bytes);
  out.compute = Seconds(mix(a.compute.value(), b.compute.value()));
  out.gpu_energy = Joules(mix(a.gpu_energy.value(), b.gpu_energy.value()));
  return out;
}

// What an hour of serving costs and what a token takes in energy (rental: the GPUs' hourly rate; ownership: the
// bill of materials over its service life plus the facility's electricity at the decode step's power), from the
// decode step (or the prefill, for an encoder).
void add_serving_accounting(const scenario::Scenario& s, const topology::Topology& topo, const Phase& step, double step_tokens,
                            double tokens_per_s, json& row) {
  const auto bom = scenario_bom(s, topo);
  const auto prices = scenario_prices(s, bom);
  const Seconds time(step.timing.time_s);
  const auto energy = results::step_energy(step.gpu_energy, time, bom.network_power(), topology::power_model(), prices.pue);
  const double gpus = static_cast<double>(bom.count(topology::PartKind::Gpu));
  const double facility_kw = energy.facility.value() / time.value() / 1e3;
  const double per_hour = prices.mode == results::CostMode::Rental
                              ? prices.gpu_hour.value() * gpus
                              : prices.capital.value() / (prices.years * 8760.0) + facility_kw * prices.kwh_usd;
  row["cost"] = {{"mode", prices.mode == results::CostMode::Rental ? "rental" : "ownership"},
                 {"usd_per_hour", per_hour},
                 {"usd_per_million_tokens", usd_per_million_tokens(per_hour, tokens_per_s)},
                 {"gpus_usd", gpus * s.cluster.gpu.price.value()},
                 {"capital_usd", bom.total().value()}};
  row["energy"] = {{"gpu_J_per_token", step.gpu_energy.value() / step_tokens},
                   {"per_token_J", energy.facility.value() / step_tokens},
                   {"power_kW", facility_kw}};
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
  while (hi <= scenario::kMaxSequences && fits(hi)) lo = hi, hi *= 2;
  hi = std::min(hi, scenario::kMaxSequences + 1);
  while (hi - lo > 1) {
    const long long mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

// The phases' traces as one: the decode step's events after the prefill's (shifted by its time), on the same GPUs'
// tracks, each slice's name prefixed by its phase.
std::string merged_trace(const Phase& prefill, const Phase* decode) {
  json out = json::parse(prefill.timing.trace);
  auto& events = out.at("traceEvents");
  const auto label = [](json& e, const char* phase) {
    if (e.value("ph", "") == "X") e["name"] = fmt::format("{} {}", phase, e.value("name", ""));
  };
  for (auto& e : events) label(e, "prefill");
  if (decode) {
    const double shift_us = prefill.timing.time_s * 1e6;
    json step = json::parse(decode->timing.trace);
    // The decode step's metadata names the same processes again (and any lane the prefill did not have); its
    // flow ids follow the prefill's.
    constexpr long long kDecodeFlowIds = 1'000'000'000;
    for (auto& e : step.at("traceEvents")) {
      if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift_us;
      if (e.contains("id")) e["id"] = e["id"].get<long long>() + kDecodeFlowIds;
      label(e, "decode");
      events.push_back(std::move(e));
    }
  }
  return out.dump();
}

double usd_per_million_tokens(double usd_per_hour, double tokens_per_s) {
  return usd_per_hour / (tokens_per_s * 3600.0) * 1e6;
}

json simulate_serving(const scenario::Scenario& s, const PlayServing& play, const std::string& trace_path) {
  const auto& w = *s.workload;
  const auto& inf = *w.inference;
  const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  const auto precision = workloads::serving_compute_precision(inf, s.cluster.gpu);
  const bool trace = !trace_path.empty();
  const auto& spec = inf.speculative;
  std::optional<workloads::Workload> draft;
  if (spec) draft = workloads::draft_workload(w);
  json speculative;
  // The prompt is prefilled by the target, then by the draft (its own KV cache).
  Phase prefill = play_pass(s, w, built.topology, workloads::serving_pass(inf, ServingPhase::Prefill), play, trace);
  if (draft) {
    const Phase own = play_pass(s, *draft, built.topology, prefill.pass, play, false);
    speculative["draft_prefill_s"] = own.timing.time_s;
    prefill = chained(own, 1.0, prefill, 1.0);
  }
  std::optional<Phase> decode_phase;
  // The host tier's hits arrive over each GPU's link to host memory before the prompts' prefill (vLLM schedules a
  // request once its load is done); the batch's loads share the links.
  json offload;
  double load_s = 0;
  if (inf.kv_offload) {
    const int loaded = workloads::cached_prefix(inf, inf.prompt_tokens).host;
    located(s, [&] { workloads::check_host_cache(w, static_cast<long long>(inf.batch) * loaded); });
    load_s = workloads::host_load_time(w, s.cluster.gpu, static_cast<double>(inf.batch) * loaded).value();
    offload = {{"host_GB", inf.kv_offload->host_GB},
               {"hit", inf.kv_offload->hit},
               {"loaded_tokens", loaded},
               {"load_s", load_s},
               {"link", topology::host_memory_link(s.cluster.gpu).name}};
  }
  const double ttft = load_s + prefill.timing.time_s;
  const double replicas = w.plan.dp;
  const int gpus = w.plan.tp * w.plan.pp * w.plan.dp;
  json row = {{"name", s.name},
              {"gpus", gpus},
              {"layout", s.cluster.graph ? *s.cluster.graph : results::cluster_layout(s.cluster)},
              {"engine", s.simulation.engine == scenario::EngineKind::Simgrid ? "simgrid" : "analytic"},
              {"network_model", prefill.timing.network_model},
              {"collective_algo", std::string(sim::to_string(s.simulation.collective_algo))},
              {"compute_precision", std::string(to_string(precision))},
              {"ttft_s", ttft}};
  json phases = {{"prefill", phase_json(prefill, s.cluster.gpu, precision)}};
  if (inf.output_tokens > 0) {
    workloads::ServingPass step = workloads::serving_pass(inf, ServingPhase::Decode);
    if (!spec) {
      decode_phase.emplace(play_pass(s, w, built.topology, step, play, trace));
    } else {
      // A round: the draft's `tokens` decode steps, then the target scoring tokens + 1 per sequence; per token yielded.
      const Phase drafting = play_pass(s, *draft, built.topology, step, play, false);
      workloads::ServingPass verify = step;   // the drafted tokens' keys and values join the cache it attends over
      verify.new_tokens = spec->tokens + 1;
      verify.context = step.context + spec->tokens;
      const Phase verifying = play_pass(s, w, built.topology, verify, play, trace);
      const double per_round = workloads::speculative_tokens_per_round(*spec);
      decode_phase.emplace(chained(drafting, spec->tokens, verifying, per_round));
      speculative.update({{"draft", spec->draft.name},
                          {"tokens", spec->tokens},
                          {"acceptance", spec->acceptance},
                          {"tokens_per_round", per_round},
                          {"draft_step_s", drafting.timing.time_s},
                          {"verify_s", verifying.timing.time_s},
                          {"round_s", spec->tokens * drafting.timing.time_s + verifying.timing.time_s}});
    }
    const Phase& decode = *decode_phase;
    const double tpot = decode.timing.time_s;
    const double request = ttft + (inf.output_tokens - 1) * tpot;   // the first token comes with the prefill
    row["tpot_s"] = tpot;
    row["request_time_s"] = request;
    row["tokens_per_s"] = replicas * inf.batch * inf.output_tokens / request;
    row["decode_tokens_per_s"] = replicas * inf.batch / tpot;
    phases["decode"] = phase_json(decode, s.cluster.gpu, precision);
    add_serving_accounting(s, built.topology, decode, replicas * inf.batch, row["tokens_per_s"].get<double>(), row);
  } else {   // prefill only (an encoder's serving): prompt tokens per second
    row["tpot_s"] = nullptr;
    row["request_time_s"] = ttft;
    row["tokens_per_s"] = replicas * inf.batch * inf.prompt_tokens / ttft;
    row["decode_tokens_per_s"] = nullptr;
    add_serving_accounting(s, built.topology, prefill, replicas * inf.batch * inf.prompt_tokens,
                           row["tokens_per_s"].get<double>(), row);
  }
  row["tokens_per_s_per_gpu"] = row["tokens_per_s"].get<double>() / gpus;
  if (spec) row["speculative"] = speculative;
  if (inf.kv_offload) row["kv_offload"] = offload;
  row["phases"] = phases;
  const auto memory = workloads::plan_memory(w, s.cluster.gpu);
  row["memory"] = results::memory_json(memory);
  row["max_batch_that_fits"] = max_batch_that_fits(w, s.cluster.gpu);
  // A stream in a process of its own, as a simulation is: a long one draws its progress line and ends with its
  // parent (sim/simgrid/isolated.hpp).
  if (inf.requests)
    row = json::parse(sim::run_isolated([&] {
      json served = row;
      serve_stream(s, built.topology, served);
      return served.dump();
    }));
  if (trace) results::write_file(trace_path, merged_trace(prefill, decode_phase ? &*decode_phase : nullptr), "--trace");
  json reference = json::object();
  if (!s.reference.source.empty()) reference["source"] = s.reference.source;
  for (const auto& [k, v] : s.reference.values) reference[k] = v;
  row["reference"] = reference;
  return row;
}

}  // namespace dtsim::drivers
