// Closed-form communication costs on a topology, for the analytic engine: each collective lowered exactly as
// the SimGrid engine lowers it (sim::lower), each transfer taking its route's latency plus bytes over the
// route's narrowest link (line rate x protocol efficiency), with no contention between transfers. On a
// contention-free case this is what the SimGrid engine computes.
#pragma once

#include <memory>

#include "sim/analytic_engine.hpp"
#include "sim/collective.hpp"
#include "topology/routing.hpp"

namespace dtsim::sim {

// True when every pair of `gpus` has a link of its own (a full mesh); false for fewer than three.
bool fully_linked(const std::vector<topology::NodeId>& gpus, const topology::Topology& topology);

// The layout of the ranks `group` (indices into topology.gpus()): their machines, and NVLS when `nvls`.
GroupLayout group_layout(const std::vector<int>& group, const topology::Topology& topology, bool nvls);

// Duration of one lowered collective whose group rank i is GPU `gpus[i]`, played contention-free.
Seconds lowered_time(const Lowered& lowered, const std::vector<topology::NodeId>& gpus, const topology::Topology& topology,
                     topology::Router& router);

// Costs for play_analytic on `topology` (rank r on topology.gpus()[r]). The costs keep a reference to
// `topology` and own a router.
CommCosts analytic_costs(const topology::Topology& topology, Algorithm algorithm, bool nvls, bool ecmp);

}  // namespace dtsim::sim
