// `dtsim run` as a library call: each scenario point checked, its `auto` knobs chosen, simulated, and its result
// object (DESIGN.md's fields) returned. Nothing printed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/trace.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::drivers {

// A trace to write beside a run: its file (none when empty) and what it shows.
struct TraceRequest {
  std::string path;
  results::TraceOptions options;
};

// `given` checked (its plan against its cluster, so that a bad degree is reported at its key, before any search),
// its auto knobs chosen, and the plan they make checked again. InputError when it has no workload.
scenario::Scenario runnable(const scenario::Scenario& given);

// One scenario point simulated in its own process: its result object (run_json), with `auto_chosen`, `point` and
// the resolved `scenario`; writes its Perfetto trace as `trace` asks.
nlohmann::json run_point(const scenario::Scenario& s, const TraceRequest& trace = {});

// The memory plan per GPU of `s` with its `auto` knobs chosen (`dtsim memory`). The plan is checked against the
// cluster first, so a bad degree is reported at its key, not as a wrong plan; InputError without a model section.
workloads::MemoryPlan memory_plan(const scenario::Scenario& s);

// Every point of `scenarios`, in order: as run (what `auto` chose written in) and its result object.
struct RunResult {
  std::vector<scenario::Scenario> resolved;
  std::vector<nlohmann::json> rows;
};
RunResult run(const std::vector<scenario::Scenario>& scenarios, const TraceRequest& trace = {});

}  // namespace dtsim::drivers
