// Private to dtsim_simgrid: what the step's traffic uses, for the shortcuts that must know who shares what.
//
// Resources as simgrid_platform.hpp numbers them. Collective memoization applies to an
// isolated group instance (a group kind and its first member rank): one whose collectives' routes use no
// resource another instance or a pipeline send uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/simgrid_platform.hpp"
#include "topology/topology.hpp"

namespace dtsim::sim::flow {

struct CollectivePlan;

using GroupInstance = std::pair<std::size_t, int>;

// The step's traffic: per group instance its members (sorted), the plans of its collectives and the directed
// node pairs they send between; per pipeline send (sender rank, receiver rank) its node pair.
struct Traffic {
  struct Instance {
    std::vector<int> members;
    std::set<const CollectivePlan*> plans;
    std::set<RouteNeeds::Pair> pairs;
  };
  std::map<GroupInstance, Instance> instances;
  std::map<std::pair<int, int>, RouteNeeds::Pair> sends;
};

// The group instances whose resources no other instance and no send uses.
std::set<GroupInstance> isolated_instances(const Traffic& traffic, RouteResources& resources);

}  // namespace dtsim::sim::flow
