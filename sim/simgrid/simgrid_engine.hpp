// The SimGrid engine: plays a StepGraph on a topology with flow-level link contention.
//
// Platform built in code from our Topology (no XML): every device a transfer starts or ends at a host, every
// link one shared link per direction with its bandwidth x protocol efficiency and its latency, a device with a
// finite switching capacity (the star's hub) a shared link every route through it crosses, routes from
// topology::Router. Network model
// set explicitly to the textbook one: CM02, no cross-traffic, no TCP-gamma cap, max-min sharing with every flow
// the same penalty (simgrid_platform.cpp; ../shared/SIMGRID.md); the result's `network_model` says so.
//
// Every rank is played (rank classes are expanded), but where the symmetry shortcut applies; compute ops are
// timers and transfers are activities created just in time (when their dependencies are met), so live
// transfers stay bounded. One SimGrid engine per process: callers run each
// simulation in a child process (run_isolated).
#pragma once

#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/simgrid/isolated.hpp"
#include "sim/simgrid/simgrid_options.hpp"
#include "sim/timeline.hpp"
#include "topology/builders.hpp"
#include "topology/routing.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim {

// Plays `graph` on `topology`: rank r runs on topology.gpus()[r]. Must run in a process that has not run a
// SimGrid simulation before (see run_isolated).
Timeline play_simgrid(const workloads::StepGraph& graph, const topology::Topology& topology, const SimgridOptions& options);

// Times one collective per size, one after the other, over the GPUs `ranks` (indices into topology.gpus()),
// in one simulation; each time runs from the collective's start (the previous one's end) to its end. `routing` and
// `aggregate` as in SimgridOptions. Same process rule as play_simgrid.
std::vector<Seconds> time_collectives(workloads::CollectiveKind kind, const std::vector<Bytes>& sizes,
                                      const std::vector<int>& ranks, const topology::Topology& topology,
                                      const GroupLayout& layout, Algorithm algorithm,
                                      topology::Routing routing = topology::Routing::Single, bool aggregate = true,
                                      int max_channels = 0);

}  // namespace dtsim::sim
