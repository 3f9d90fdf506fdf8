// What the subcommands share: loading the scenario of the arguments, locating errors raised after loading, the
// GPU count of a scenario's cluster, writing files.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/trace.hpp"
#include "sim/cli/commands.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/collectives/collective.hpp"
#include "workloads/step_graph.hpp"
#include "topology/error.hpp"

namespace dtsim::cli {

std::vector<scenario::Scenario> load(const ScenarioArgs& args, bool keep_invalid_points = false);

// Errors raised while building know the key, not the file: add where the scenario gave that key.
template <class Fn>
auto located(const scenario::Scenario& s, Fn fn) {
  try {
    return fn();
  } catch (const InputError& e) {
    if (!e.location().empty()) throw;
    throw InputError(e.key(), e.value(), e.reason(), e.allowed(), scenario::locate(s, e.key()));
  }
}

// A sweep point as rows carry it: {"index": i, "values": {dotted key: value}}.
nlohmann::json point_json(const scenario::SweepPoint& point);

// A trace to write beside a run: its file (none when empty) and what it shows.
struct TraceRequest {
  std::string path;
  results::TraceOptions options;
};

// One scenario point simulated in its own process: its result object (run_json), with `point` and the resolved
// `scenario`; writes its Perfetto trace as `trace` asks.
nlohmann::json run_point(const scenario::Scenario& s, const TraceRequest& trace = {});

// A sweep's default output directory: `out/<scenario name>/`, the name without the point's suffix.
std::string default_out(const scenario::Scenario& s);

// GPUs the scenario's cluster has: the builders' count, or the user graph's.
int cluster_gpus(const scenario::Scenario& s);

// The analytic engine's closed-form costs on `topo` (the scenario's built cluster) with the scenario's collective
// algorithm, channels and routing, and NVLS where its switches reduce.
sim::CommCosts scenario_costs(const scenario::Scenario& s, const topology::Topology& topo);

// One collective over every GPU of `cluster`, timed by the SimGrid engine (in a child process) at each size,
// with the algorithm and protocol the lowering chose for it; `max_channels` as simulation.max_channels; a
// broadcast starts from rank `root`.
struct CollectiveTiming {
  Seconds time;
  std::string algorithm;
  std::string protocol;
};
std::vector<CollectiveTiming> collective_times(const topology::ClusterSpec& cluster, workloads::CollectiveKind kind,
                                               sim::Algorithm algorithm, const std::vector<Bytes>& sizes,
                                               int max_channels = 0, int root = 0);

// Creates `dir` and its parents (an --out directory).
void make_directory(const std::string& dir);

// Writes `text` to `path` whole: beside it, synced, then renamed over it (a device or FIFO is written in place).
// InputError naming the path, the step that failed and errno's text; `key` names the option that gave the path.
void write_file(const std::string& path, const std::string& text, const std::string& key);
// Appends `text` to `path` and syncs it (a sweep's rows, one at a time); InputError naming the path and errno's text.
void append_file(const std::string& path, const std::string& text, const std::string& key);

}  // namespace dtsim::cli
