// Private to dtsim_simgrid: playing one lowered collective on a Simulation, by the step rule of collective.hpp.
//
// Step rule (collective.hpp), as played here: a collective starts when its members have all reached it. A
// transfer of step k from endpoint e starts `step_latency` after every transfer of step k-1 into or out of e has
// ended; when e has no transfer in step k-1 (step 0, or a gap in e's steps), `step_latency` after the
// collective's start + `latency`. The collective ends when its last transfer ends (`latency` after its start
// when it has none).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "sim/analytic/analytic_costs.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/simgrid/simgrid_platform.hpp"
#include "sim/timeline.hpp"
#include "topology/topology.hpp"

namespace dtsim::sim::flow {

// An endpoint of a lowered collective: a group rank, or (rank kSwitch) the NVSwitch of `machine`.
struct Endpoint {
  int rank = 0;
  int machine = -1;
};

// A lowering with its schedule: per endpoint, the steps it takes part in (its phases), in step order.
struct CollectivePlan {
  struct Phase {
    int step = 0;
    bool chained = false;                     // the endpoint also takes part in step - 1: this phase waits for it
    int transfers = 0;                        // transfers of this step into or out of the endpoint
    std::vector<std::uint32_t> outgoing;      // transfers of this step the endpoint sends
  };
  struct Ends {
    std::uint32_t src = 0, dst = 0;           // endpoint indices
    std::uint32_t src_phase = 0, dst_phase = 0;
  };
  Lowered lowered;
  // > 1: PlanCache's compact form of a lowering whose steps are all alike: `lowered` holds its first step, which
  // the whole repeats this many times (lowered.steps). Only its aggregate is ever played (Aggregates::of).
  int repeats = 1;
  std::vector<Endpoint> endpoints;            // the group ranks 0..n-1, then the switches
  std::vector<std::vector<Phase>> phases;     // per endpoint
  std::vector<Ends> ends;                     // per transfer
  std::size_t id = 0;                         // the order PlanCache made it in: sets of plans are iterated in this
                                              // order, never by address (which varies from run to run)
};

CollectivePlan make_plan(Lowered lowered, int members);

using LowerFn = std::function<Lowered(workloads::CollectiveKind, Bytes, const GroupLayout&)>;

// Plans memoized by (kind, size, layout): a collective repeated on many groups or micro-batches is lowered once.
// `compact` (when every plan will be played through Aggregates): a lowering whose steps are all alike is kept as
// its first step (CollectivePlan::repeats), so that a 2,240-rank ring costs 2,240 transfers, not 5 million.
class PlanCache {
 public:
  explicit PlanCache(LowerFn lower, bool compact = false) : lower_(std::move(lower)), compact_(compact) {}
  std::shared_ptr<const CollectivePlan> get(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout);
  // The plan `get` returned as `plan` (owned here).
  [[nodiscard]] std::shared_ptr<const CollectivePlan> find(const CollectivePlan* plan) const;

 private:
  using Key = std::tuple<int, double, std::vector<int>, bool, bool, std::vector<int>, double, double, double>;
  LowerFn lower_;
  bool compact_;
  std::map<Key, std::shared_ptr<const CollectivePlan>> plans_;
  std::map<const CollectivePlan*, std::shared_ptr<const CollectivePlan>> by_address_;
};

// Machine ids as plans name them: per rank its label (0, 1, ... in ascending order of id), and the distinct ids
// in that order (label -> id).
std::pair<std::vector<int>, std::vector<int>> label_machines(const std::vector<int>& machine);

// Where a group's ranks sit: their machines, and the NVSwitch that reduces in the switch on each machine that
// has one. NVLS-capable: a non-blocking Switch node (no capacity limit, so not the star's hub) of the machine,
// linked to a GPU of that machine by a link with `switch_reduction` (its class's, topology::Link).
class Sites {
 public:
  explicit Sites(const topology::Topology& topology);
  // The layout of a group of GPUs (in group-rank order): nvls when every machine has an NVLS switch. Machines
  // are labelled 0, 1, ... in ascending order of id, so that groups placed alike share one plan (a switch
  // endpoint's machine is such a label).
  [[nodiscard]] GroupLayout layout(const std::vector<topology::NodeId>& gpus) const;
  // The node of each endpoint of `plan` for a group on `gpus`.
  [[nodiscard]] std::vector<topology::NodeId> endpoint_nodes(const CollectivePlan& plan,
                                                             const std::vector<topology::NodeId>& gpus) const;

 private:
  [[nodiscard]] std::vector<int> machines(const std::vector<topology::NodeId>& gpus) const;

  const topology::Topology& topo_;
  std::map<int, topology::NodeId> nvls_switch_;   // by machine
  std::unique_ptr<topology::RingOrders> rings_;   // each machine's ring order, searched once
};

// Aggregated flows (SimgridOptions::aggregate): per plan, its aggregate (sim::aggregate_steps) when it has one,
// and per set of GPUs the tail the aggregate adds so that, played contention-free, it takes what the stepped
// plan takes (lowered_time of each; never negative).
class Aggregates {
 public:
  Aggregates(const topology::Topology& topology, topology::Routing routing);
  struct Choice {
    std::shared_ptr<const CollectivePlan> plan;
    Seconds tail;
  };
  // nullopt when `plan` has no aggregate.
  std::optional<Choice> of(const std::shared_ptr<const CollectivePlan>& plan, const std::vector<topology::NodeId>& gpus);

 private:
  const topology::Topology& topo_;
  PairPaths paths_;
  std::map<const CollectivePlan*, std::shared_ptr<const CollectivePlan>> plans_;   // null: none
  std::map<std::pair<const CollectivePlan*, std::vector<topology::NodeId>>, Seconds> tails_;
};

// Adds the pairs a plan's transfers send between to `needs`.
void add_routes(RouteNeeds& needs, const CollectivePlan& plan, const std::vector<topology::NodeId>& nodes);

// One collective being played. Owned by the caller, who may destroy it inside `finished`.
class CollectiveRun {
 public:
  using Finished = std::function<void(Seconds end)>;
  // The collective ends `tail` after its last transfer (an aggregate's latencies, Aggregates).
  CollectiveRun(Simulation& sim, std::shared_ptr<const CollectivePlan> plan, std::vector<topology::NodeId> nodes,
                std::vector<TransferRecord>* record, Finished finished, Seconds tail = Seconds(0));
  // The collective starts now.
  void start();

 private:
  void launch(std::size_t endpoint, std::size_t phase, Seconds delay);
  void transfer_done(std::uint32_t t, Seconds start, Seconds end);
  void touch(std::size_t endpoint, std::size_t phase);

  Simulation& sim_;
  std::shared_ptr<const CollectivePlan> plan_;
  std::vector<topology::NodeId> nodes_;        // per endpoint
  std::vector<TransferRecord>* record_;
  Finished finished_;
  Seconds tail_;
  std::vector<std::vector<int>> remaining_;    // per endpoint, per phase: transfers not yet ended
  std::size_t left_ = 0;                       // transfers not yet ended
};

}  // namespace dtsim::sim::flow
