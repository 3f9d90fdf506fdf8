// Private to dtsim_simgrid: the SimGrid engine with the lowering as a parameter (simgrid_player.cpp), so that
// tests can play hand-built lowerings. play_simgrid and time_collectives pass sim::lower.
#pragma once

#include <vector>

#include "sim/simgrid/simgrid_collective.hpp"
#include "sim/simgrid/simgrid_options.hpp"
#include "sim/timeline.hpp"

namespace dtsim::sim::flow {

Timeline play_graph(const workloads::StepGraph& graph, const topology::Topology& topology,
                    const SimgridOptions& options, const LowerFn& lower);

std::vector<Seconds> time_lowered(workloads::CollectiveKind kind, const std::vector<Bytes>& sizes,
                                  const std::vector<int>& ranks, const topology::Topology& topology,
                                  const GroupLayout& layout, const LowerFn& lower, topology::Routing routing, bool aggregate = true);

}  // namespace dtsim::sim::flow
