// What the drivers share: locating errors raised after loading, the GPU count of a scenario's cluster, the analytic
// engine's costs on it.
#pragma once

#include <string_view>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"
#include "topology/topology.hpp"

namespace dtsim::drivers {

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

// GPUs the scenario's cluster has: the builders' count, or the user graph's.
int cluster_gpus(const scenario::Scenario& s);

// A count option (`--top`, `--confirm`, `--jobs`, or the Python keyword) checked: below `least` it is the one-line
// InputError naming `key`.
void check_count(std::string_view key, int value, int least);

// The analytic engine's closed-form costs on `topo` (the scenario's built cluster) with the scenario's collective
// algorithm, channels and routing, and NVLS where its switches reduce.
sim::CommCosts scenario_costs(const scenario::Scenario& s, const topology::Topology& topo);

}  // namespace dtsim::drivers
