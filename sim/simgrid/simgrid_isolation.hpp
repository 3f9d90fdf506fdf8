// Private to dtsim_simgrid: the step's traffic (who sends to whom, over which plans), what its routes use, and
// the pairs a simulation must route, for the shortcuts that must know who shares what.
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

#include "sim/simgrid/simgrid_collective.hpp"
#include "sim/simgrid/simgrid_platform.hpp"
#include "workloads/step_graph.hpp"
#include "topology/topology.hpp"

namespace dtsim::sim::flow {

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

// A group's members (sorted, distinct) and their GPUs.
std::vector<int> members_of(const workloads::StepGraph& g, int rank, workloads::Group group);
std::vector<topology::NodeId> gpus_of(const topology::Topology& topo, const std::vector<int>& ranks);

// The step's traffic over every rank.
Traffic collect_traffic(const workloads::StepGraph& g, const topology::Topology& topo, PlanCache& plans,
                        const Sites& sites);

// The pairs the played ranks (all when `representative` is null) send between: every transfer of the group
// instances they are in, but those in `timers` (memoized: their collectives are timers), and their sends.
RouteNeeds route_needs(const Traffic& traffic, const topology::Topology& topo, const Sites& sites,
                       const std::vector<int>* representative, const std::set<GroupInstance>* timers);

// The group instances whose collectives may be memoized: those whose resources no other instance and no send
// uses; and TP instances whose resources no other TP instance uses and the other groups' flows (data-parallel
// rings through the node's NVSwitch beside a TP group of 4 on an 8-GPU node, pipeline sends inside a node) take
// at most kLightShare of, each flow bounded by its route's narrowest resource (a NIC, typically). The light
// sharing is not played: while such a flow runs, the TP collective would take at most that much longer, and only
// then (docs/scale.md has the measured effect).
inline constexpr double kLightShare = 0.25;
std::set<GroupInstance> isolated_instances(const Traffic& traffic, RouteResources& resources);

}  // namespace dtsim::sim::flow
