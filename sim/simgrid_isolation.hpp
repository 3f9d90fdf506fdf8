// Private to dtsim_simgrid: which group instances collective memoization may apply to. A group instance is a
// group kind and its first member rank; it is isolated when no resource its collectives' routes use (a directed
// link, a device's switching capacity) is used by another instance or by a pipeline send.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "sim/simgrid_platform.hpp"
#include "topology/topology.hpp"

namespace dtsim::sim::flow {

using GroupInstance = std::pair<std::size_t, int>;

// The directed node pairs each group instance's collectives send between, and those of the pipeline sends.
struct Traffic {
  std::map<GroupInstance, std::set<RouteNeeds::Pair>> instances;
  std::set<RouteNeeds::Pair> sends;
};

// The group instances whose resources (directed links, switch capacities) no other instance and no send uses.
std::set<GroupInstance> isolated_instances(const Traffic& traffic, const topology::Topology& topo, bool ecmp);

}  // namespace dtsim::sim::flow
