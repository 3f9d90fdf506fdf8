// `dtsim run`: each scenario point simulated (on the SimGrid engine, in a process of its own: one engine per
// process), its result object printed as a table, JSON or CSV, and written with the resolved scenario under --out.
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <iostream>
#include <yaml-cpp/yaml.h>

#include "results/roofline.hpp"
#include "results/run_report.hpp"
#include "results/topology_report.hpp"
#include "results/trace.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "sim/cli/auto_knobs.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/cli/cost_support.hpp"
#include "sim/cli/serving_run.hpp"
#include "results/energy.hpp"
#include "sim/analytic/interference.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;

// The resolved scenario as JSON (through its YAML): numbers stay numbers, booleans booleans.
json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json out = json::object();
    for (const auto& kv : n) out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return out;
  }
  if (n.IsSequence()) {
    json out = json::array();
    for (const auto& v : n) out.push_back(yaml_to_json(v));
    return out;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;   // quoted in the YAML: a string
  long long i = 0;
  double d = 0;
  bool b = false;
  if (YAML::convert<long long>::decode(n, i)) return i;
  if (YAML::convert<double>::decode(n, d)) return d;
  if (YAML::convert<bool>::decode(n, b)) return b;
  return s;
}

// `trace`: the engine records every network transfer (the trace's link counters need them).
sim::Timeline play_engine(const scenario::Scenario& s, const workloads::StepGraph& g, const topology::Topology& topo, bool trace) {
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
  return sim::play_simgrid(g, topo, options);
}

sim::Timeline play(const scenario::Scenario& s, const workloads::StepGraph& g, const topology::Topology& topo, bool trace) {
  sim::Timeline t = play_engine(s, g, topo, trace);
  if (!s.simulation.interference) return t;
  return sim::with_interference(g, std::move(t), topo, s.cluster.gpu);
}

// One point, start to finish: runs in a child process.
json simulate(const scenario::Scenario& s, const TraceRequest& trace) {
  const auto& w = *s.workload;
  const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  const auto bom = scenario_bom(s, built.topology);
  scenario_prices(s, bom);   // a bill ownership cannot price is an error before the simulation, not after
  const auto graph = located(s, [&] { return workloads::generate_step(w, s.cluster.gpu, {s.simulation.granularity}); });
  const auto memory = workloads::plan_memory(w, s.cluster.gpu);
  const auto timeline = play(s, graph, built.topology, !trace.path.empty() && trace.options.links);
  const auto metrics = results::step_metrics(graph, timeline, s.cluster.gpu, results::single_gpu_compute(w, s.cluster.gpu));
  if (!trace.path.empty())
    write_file(trace.path,
               results::trace_json(graph, timeline, built.topology, s.cluster.effective_routing(), trace.options),
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
  return row;
}

std::string json_text(const std::vector<json>& rows, bool sweep) {
  if (rows.size() == 1 && !sweep) return rows.front().dump(2) + "\n";
  return json(rows).dump(2) + "\n";
}

void write_outputs(const std::string& dir, const std::vector<scenario::Scenario>& scenarios, const std::vector<json>& rows, bool sweep) {
  write_file(dir + "/result.json", json_text(rows, sweep), "--out");
  write_file(dir + "/result.csv", results::run_csv(rows), "--out");
  std::string yaml;
  for (const auto& s : scenarios) yaml += (yaml.empty() ? "" : "---\n") + scenario::to_yaml(s);
  write_file(dir + "/scenario.resolved.yaml", yaml, "--out");
}

}  // namespace

json point_json(const scenario::SweepPoint& point) {
  json values = json::object();
  for (const auto& [k, v] : point.values) values[k] = yaml_to_json(YAML::Load(v));
  return {{"index", point.index}, {"values", values}};
}

namespace {

// `given` checked (its plan against its cluster, so that a bad degree is reported at its key, before any search),
// its auto knobs chosen, and the plan they make checked again.
scenario::Scenario runnable(const scenario::Scenario& given) {
  if (!given.workload)
    throw InputError("model", "", "missing section: run simulates a training step or a serving batch",
                     "a scenario with model and training or inference sections; for the topology alone, dtsim topo",
                     given.file);
  located(given, [&] { workloads::check_plan(*given.workload, cluster_gpus(given)); });
  scenario::Scenario s = resolve_auto(given);
  located(s, [&] { workloads::check_plan(*s.workload, cluster_gpus(s)); });
  return s;
}

}  // namespace

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
  json chosen = json::object();
  for (const auto& [key, value] : s.auto_chosen) chosen[key] = yaml_to_json(YAML::Load(value));
  row["auto_chosen"] = chosen;
  if (s.point.index >= 0) row["point"] = point_json(s.point);
  row["scenario"] = yaml_to_json(YAML::Load(scenario::to_yaml(s)));
  return row;
}

int run_command(const ScenarioArgs& args, const RunOutputs& outputs) {
  const auto scenarios = load(args);
  TraceRequest trace{outputs.trace, {results::parse_trace_ranks(outputs.trace_ranks), outputs.trace_links}};
  if (outputs.trace.empty() && outputs.dir.empty() && (outputs.trace_links || outputs.trace_ranks != "stages"))
    throw InputError(outputs.trace_links ? "--trace-links" : "--trace-ranks", outputs.trace_links ? "" : outputs.trace_ranks,
                     "shapes a trace, and none is written without", "--trace FILE or --out DIR");
  if (outputs.trace_links)
    for (const auto& s : scenarios)
      if (s.simulation.engine == scenario::EngineKind::Analytic)
        throw InputError("--trace-links", "", "counts the transfers the SimGrid engine plays; the analytic engine plays none, so",
                         "simulation.engine: simgrid", s.file);
  if (trace.path.empty() && !outputs.dir.empty() && scenarios.size() == 1) trace.path = outputs.dir + "/trace.json";
  if (!outputs.trace.empty() && scenarios.size() != 1)
    throw InputError("--trace", outputs.trace, fmt::format("the scenario has {} points; --trace takes", scenarios.size()),
                     "a scenario without sweep axes (one point's resolved scenario is in --out DIR)");
  if (!outputs.dir.empty()) make_directory(outputs.dir);   // before the runs: the trace goes there
  std::vector<json> rows;
  std::vector<scenario::Scenario> resolved;   // as run: what auto chose written into the resolved scenario
  for (const auto& s : scenarios) {
    resolved.push_back(runnable(s));
    rows.push_back(run_point(resolved.back(), trace));
  }
  const bool sweep = scenarios.front().point.index >= 0;
  if (!outputs.dir.empty()) write_outputs(outputs.dir, resolved, rows, sweep);
  if (args.format == Format::Json) std::cout << json_text(rows, sweep);
  else if (args.format == Format::Csv) std::cout << results::run_csv(rows);
  else std::cout << results::run_table(rows);
  return 0;
}

}  // namespace dtsim::cli
