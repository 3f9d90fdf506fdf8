// `dtsim run`'s simulation of one scenario point, start to finish: a training step or a serving batch or stream
// (each SimGrid play in a process of its own: one engine per process), its result object returned.
#include "sim/drivers/run.hpp"

#include <fmt/format.h>
#include <functional>

#include "results/energy.hpp"
#include "results/roofline.hpp"
#include "results/run_report.hpp"
#include "results/topology_report.hpp"
#include "results/trace.hpp"
#include "results/files.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "sim/analytic/interference.hpp"
#include "sim/drivers/auto_knobs.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/cost.hpp"
#include "sim/drivers/mixed.hpp"
#include "sim/drivers/serving.hpp"
#include "sim/drivers/stragglers.hpp"
#include "sim/process.hpp"
#include "sim/scenario/scenario_json.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "topology/builders.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;

// `trace`: the engine records every network transfer (the trace's link counters need them).
// `compute_scale`: per rank, how many times longer its compute (and its forward ops) take than its class's
// (stragglers; SimGrid only).
sim::Timeline play_engine(const scenario::Scenario& s, const workloads::StepGraph& g, const topology::Topology& topo,
                          bool trace, Factors compute_scale = {}) {
  if (s.simulation.engine == scenario::EngineKind::Analytic) {
    auto t = sim::play_analytic(g, scenario_costs(s, topo));
    t.network_model = "analytic: closed form per transfer (route latency + bytes / narrowest link x efficiency), no contention";
    return t;
  }
  sim::SimgridOptions options;
  options.algorithm = s.simulation.collective_algo;
  options.max_channels = s.simulation.max_channels;
  options.record_transfers = trace;
  options.routing = s.cluster.effective_routing();
  options.memoize = s.simulation.memoize;
  options.aggregate = s.simulation.aggregate;
  options.symmetry = s.simulation.symmetry;
  options.compute_scale = std::move(compute_scale.all);
  options.forward_scale = std::move(compute_scale.forward);
  return sim::play_simgrid(g, topo, options);
}

sim::Timeline interfered(const scenario::Scenario& s, const workloads::StepGraph& g, const topology::Topology& topo,
                         sim::Timeline t) {
  if (!s.simulation.interference) return t;
  return sim::with_interference(g, std::move(t), topo, s.cluster.gpu);
}

// The step as played: with stragglers, the slowed step (its graph and topology), and `stragglers` holds the
// comparison with the clean one.
struct Played {
  workloads::StepGraph graph;
  topology::Topology topology;
  sim::Timeline timeline;
  std::optional<json> stragglers;
};

// `kind`: per rank, its GPU kind's compute over its stage's slowest kind's (a mixed cluster, drivers/mixed.hpp);
// empty: one kind. It plays as a straggler factor below 1 would.
Played play(const scenario::Scenario& s, workloads::StepGraph g, topology::Topology topo, bool trace,
            const std::vector<double>& kind) {
  int ranks = 0;
  for (const auto& c : g.classes) ranks += static_cast<int>(c.ranks.size());
  const auto ones = std::vector<double>(static_cast<std::size_t>(ranks), 1.0);
  const Factors clean_factor{kind.empty() ? ones : kind, ones};
  if (!s.reliability.stragglers) {
    sim::Timeline t = interfered(s, g, topo, play_engine(s, g, topo, trace, relative_scale(g, clean_factor)));
    return {std::move(g), std::move(topo), std::move(t), std::nullopt};
  }
  // The stragglers' own factors (reported: a faster kind is no straggler), and played with the kinds'.
  const Factors own = straggler_factors(s, topo, ranks);
  Factors factor = own;
  for (std::size_t r = 0; r < factor.all.size(); ++r) factor.all[r] *= clean_factor.all[r];
  // The clean step first, in a process of its own on SimGrid (one engine per process): its time and waits.
  const auto clean_play = [&] {
    sim::Timeline raw = play_engine(s, g, topo, false, relative_scale(g, clean_factor));
    const auto w = waits(g, raw);
    return json{{"step", interfered(s, g, topo, std::move(raw)).step_time.value()},
                {"waits", w ? json(*w) : json(nullptr)}}
        .dump();
  };
  const json clean_j =
      json::parse(s.simulation.engine == scenario::EngineKind::Simgrid ? sim::run_isolated(clean_play) : clean_play());
  const Seconds clean(clean_j["step"].get<double>());
  std::optional<std::map<std::string, double>> clean_waits;
  if (!clean_j["waits"].is_null()) clean_waits = clean_j["waits"].get<std::map<std::string, double>>();
  workloads::StepGraph slowed = slowed_by_class(g, factor);
  topology::Topology slow_topo = with_slow_nics(s, std::move(topo));
  sim::Timeline raw = play_engine(s, slowed, slow_topo, trace, relative_scale(g, factor));
  const auto slowed_waits = waits(slowed, raw);
  sim::Timeline t = interfered(s, slowed, slow_topo, std::move(raw));
  json j = stragglers_json(s, own, clean, t.step_time, clean_waits, slowed_waits);
  return {std::move(slowed), std::move(slow_topo), std::move(t), std::move(j)};
}

// One point, start to finish: runs in a child process.
json simulate(const scenario::Scenario& s, const TraceRequest& trace) {
  const auto& w = *s.workload;
  const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  const auto bom = scenario_bom(s, built.topology);
  scenario_prices(s, bom);   // a bill ownership cannot price is an error before the simulation, not after
  const auto memory = mixed_memory(s, w);
  MixedStep step =
      s.cluster.groups.empty()
          ? MixedStep{located(s, [&] { return workloads::generate_step(w, s.cluster.gpu, {s.simulation.granularity}); }), {}}
          : mixed_step(s);
  const Played played = play(s, std::move(step.graph), built.topology, !trace.path.empty() && trace.options.links,
                             step.relative);
  const auto& graph = played.graph;
  const auto& timeline = played.timeline;
  const auto metrics = results::step_metrics(graph, timeline, s.cluster.gpu, results::single_gpu_compute(w, s.cluster.gpu));
  if (!trace.path.empty())
    results::write_file(trace.path,
               results::trace_json(graph, timeline, played.topology, s.cluster.effective_routing(), trace.options),
               "--trace");
  results::RunInfo info{s.name,
                        s.cluster.graph ? *s.cluster.graph : results::cluster_layout(s.cluster),
                        s.simulation.engine == scenario::EngineKind::Simgrid ? "simgrid" : "analytic",
                        timeline.network_model,
                        std::string(sim::to_string(s.simulation.collective_algo)),
                        s.reference.source,
                        s.reference.baseline.empty() ? s.reference.values : std::map<std::string, double>{}};
  if (s.simulation.engine == scenario::EngineKind::Simgrid)
    info.shortcuts = {{"memoized_collectives", timeline.memoized_collectives},
                      {"memo_refused_collectives", timeline.memo_refused_collectives},
                      {"memo_shapes", timeline.memo_shapes},
                      {"aggregated_collectives", timeline.aggregated_collectives},
                      {"symmetry", timeline.symmetry}};
  json row = results::run_json(info, metrics, memory);
  const Joules gpu_energy = results::gpu_step_energy(graph, timeline, s.cluster.gpu, topology::power_model());
  add_accounting(row, account(s, bom, gpu_energy, timeline.step_time), timeline.step_time);
  row["roofline"] = results::roofline_json(w, s.cluster.gpu);
  if (played.stragglers) row["stragglers"] = *played.stragglers;
  return row;
}

}  // namespace

// `given` checked (its plan against its cluster, so that a bad degree is reported at its key, before any search),
// its auto knobs chosen, and the plan they make checked again.
scenario::Scenario runnable(const scenario::Scenario& given) {
  if (!given.workload)
    throw InputError("model", "", "missing section: run simulates a training step or a serving batch",
                     "a scenario with model and training or inference sections; for the topology alone, dtsim topo",
                     given.file);
  if (given.workload->inference && !given.cluster.groups.empty())
    throw InputError("cluster.groups", std::to_string(given.cluster.groups.size()),
                     "groups of GPU kinds apply to training (a served model runs on one kind here):",
                     "one kind for a serving scenario", scenario::locate(given, "cluster.groups"));
  located(given, [&] { workloads::check_plan(*given.workload, cluster_gpus(given)); });
  scenario::Scenario s = balance(resolve_auto(given));
  located(s, [&] { workloads::check_plan(*s.workload, cluster_gpus(s)); });
  return s;
}

json run_point(const scenario::Scenario& given, const TraceRequest& trace) {
  // simulation.max_seconds: the whole point (resolving `auto`, generating, simulating) in a process of its own,
  // ended when it runs past the limit; the rows and files already written stay.
  if (const auto limit = given.simulation.max_seconds) {
    scenario::Scenario unlimited = given;
    unlimited.simulation.max_seconds.reset();
    try {
      return json::parse(sim::run_isolated([&] { return run_point(unlimited, trace).dump(); }, *limit));
    } catch (const sim::TimeLimitExceeded&) {
      throw InputError("simulation.max_seconds", fmt::format("{:g}", *limit),
                       fmt::format("point {} ran past its limit of wall-clock seconds and was stopped:", given.name),
                       "a limit the job meets, or none (the key left out)", given.file);
    }
  }
  const scenario::Scenario s = runnable(given);
  if (!trace.path.empty()) results::check_trace_ranks(trace.options.ranks, cluster_gpus(s));
  // A SimGrid run in a process of its own (one engine per process); the analytic engine keeps no state between
  // runs, so it runs here, without a fork.
  const auto isolated = [&](const std::function<std::string()>& work) {
    return s.simulation.engine == scenario::EngineKind::Simgrid ? sim::run_isolated(work) : work();
  };
  json row;
  if (s.workload->inference) {
    // Each pass on its own engine (a process of its own on SimGrid); serving passes have no communication beside
    // compute, so no interference to add.
    row = simulate_serving(
        s,
        [&](const workloads::StepGraph& g, const topology::Topology& topo, bool traced) {
          const json t = json::parse(isolated([&] {
            const sim::Timeline timeline = play_engine(s, g, topo, traced && trace.options.links);
            json busy = json::array();
            for (const auto& c : timeline.classes) busy.push_back(c.compute_busy.value());
            const std::string events =
                traced ? results::trace_json(g, timeline, topo, s.cluster.effective_routing(), trace.options) : std::string();
            return json{{"time", timeline.step_time.value()}, {"busy", busy}, {"network", timeline.network_model},
                        {"trace", events}}
                .dump();
          }));
          return PassTiming{t.at("time").get<double>(), t.at("busy").get<std::vector<double>>(),
                            t.at("network").get<std::string>(), t.at("trace").get<std::string>()};
        },
        trace.path);
  } else {
    row = json::parse(isolated([&] { return simulate(s, trace).dump(); }));
  }
  row["auto_chosen"] = scenario::auto_chosen_json(s);
  if (s.point.index >= 0) row["point"] = scenario::point_json(s.point);
  row["scenario"] = scenario::to_json(s);
  return row;
}

workloads::MemoryPlan memory_plan(const scenario::Scenario& s) {
  if (!s.workload)
    throw InputError("model", "", "missing section: the memory command needs a model section to plan",
                     "a scenario with model (preset or shape) and training or inference", s.file);
  located(s, [&] { workloads::check_plan(*s.workload, cluster_gpus(s)); });
  // A mixed cluster's layers and batch shares split as run splits them, each stage's memory checked on its own kind.
  const scenario::Scenario resolved = balance(resolve_auto(s));
  return mixed_memory(resolved, *resolved.workload);
}

RunResult run(const std::vector<scenario::Scenario>& scenarios, const TraceRequest& trace) {
  RunResult out;
  for (const auto& s : scenarios) {
    out.resolved.push_back(runnable(s));
    out.rows.push_back(run_point(out.resolved.back(), trace));
  }
  return out;
}

}  // namespace dtsim::drivers
