// Private to dtsim_simgrid: collective memoization (SimgridOptions::memoize).
//
// An isolated group instance (simgrid_isolation.hpp) runs its collectives one at a time on resources nothing
// else uses, so a collective's duration depends only on its plan and on the sub-topology its transfers cross:
// per transfer, the resources of its route in order, each with what it offers (bandwidth, latency), named by
// first appearance. That is the collective's shape. Before the step is played, one collective of each
// (plan, shape) is played alone, one after the other, in a simulation of its own (a child process); in the step,
// every collective of an isolated instance is one timer of its shape's duration, and its routes never enter the
// step's platform. With transfers recorded, a replay records the transfers of the one played, on its own nodes.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "sim/simgrid/simgrid_collective.hpp"
#include "sim/simgrid/simgrid_isolation.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim::flow {

class Memo {
 public:
  // A collective of one shape as played: its duration; what it played (the plan or its aggregate); its
  // transfers (endpoints of that plan, times from its start) when recording.
  struct Played {
    Seconds duration;
    std::shared_ptr<const CollectivePlan> plan;
    struct Transfer {
      std::uint32_t src, dst;
      Bytes bytes;
      Seconds start, end;
    };
    std::vector<Transfer> transfers;
  };

  // Plays one collective per (plan, shape) of the `isolated` instances of `traffic`, aggregated when
  // `aggregates` is not null, recording transfers when `record`.
  Memo(const Traffic& traffic, std::set<GroupInstance> isolated, const topology::Topology& topology,
       const Sites& sites, PlanCache& plans, RouteResources& resources, Aggregates* aggregates, bool record,
       topology::Routing routing);

  [[nodiscard]] bool isolated(const GroupInstance& instance) const { return isolated_.count(instance) > 0; }
  [[nodiscard]] const std::set<GroupInstance>& isolated() const { return isolated_; }
  // What `plan` takes on isolated `instance`.
  [[nodiscard]] const Played& played(const GroupInstance& instance, const CollectivePlan* plan) const;
  [[nodiscard]] std::size_t shapes() const { return played_.size(); }

 private:
  std::set<GroupInstance> isolated_;
  std::map<std::pair<GroupInstance, const CollectivePlan*>, std::size_t> shape_of_;
  std::vector<Played> played_;
};

}  // namespace dtsim::sim::flow
