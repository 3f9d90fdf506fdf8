// Closed-form communication costs on a topology, for the analytic engine: each collective lowered exactly as
// the SimGrid engine lowers it (sim::lower), each transfer taking its route's latency plus bytes over the
// route's narrowest link (line rate x protocol efficiency), with no contention between transfers. On a
// contention-free case this is what the SimGrid engine computes.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/collectives/collective.hpp"
#include "topology/ring_order.hpp"
#include "topology/routing.hpp"

namespace dtsim::sim {

// True when every pair of `gpus` has a link of its own (a full mesh); false for fewer than three.
bool fully_linked(const std::vector<topology::NodeId>& gpus, const topology::Topology& topology);
// The NVLS reduction rate per GPU port of the switch `gpu` hangs from (its link class's switch_port_rate; 0 when
// the class gives none or is not in the catalog).
BytesPerSecond nvls_port_rate(topology::NodeId gpu, const topology::Topology& topology);
// What `gpu`'s links to its NVLS switch give a transfer to a GPU on the same switch (GroupLayout::switch_path_rate,
// switch_path_latency): their summed rate (line rate x efficiency) and two hops of their latency.
std::pair<BytesPerSecond, Seconds> nvls_switch_path(topology::NodeId gpu, const topology::Topology& topology);

// The order rings walk the GPUs `gpus` (GroupLayout::order): the GPUs of each machine in the order its ring
// search gives (`rings`), in the places the machine's GPUs hold in the group; empty when that is the group's own.
std::vector<int> walk_order(const std::vector<topology::NodeId>& gpus, const topology::Topology& topology,
                            topology::RingOrders& rings);

// The layout of the ranks `group` (indices into topology.gpus()): their machines, NVLS when `nvls`, and the walk
// order (`rings`: the searches' cache; null: searched here).
GroupLayout group_layout(const std::vector<int>& group, const topology::Topology& topology, bool nvls,
                         topology::RingOrders* rings = nullptr);

// A lone transfer's path between two devices: its latency and the rate it gets (narrowest link at line rate x
// efficiency, no more than a crossed device's capacity). Memoized per pair: a step plays the same pairs again
// and again, and the router's per-source cache cannot hold every source of a large cluster.
class PairPaths {
 public:
  PairPaths(const topology::Topology& topology, topology::Routing routing);
  struct Path {
    Seconds latency;
    BytesPerSecond rate;
    topology::LinkId first = 0;   // the link it leaves its source by, and the one it reaches its destination by
    topology::LinkId last = 0;
  };
  const Path& path(topology::NodeId src, topology::NodeId dst);

 private:
  const topology::Topology& topology_;
  topology::Router router_;
  std::unordered_map<std::uint64_t, Path> paths_;
};

// Duration of one lowered collective whose group rank i is GPU `gpus[i]`, played contention-free but for its own
// transfers: those of one step that leave one endpoint by the same link (or reach one by the same link) share it,
// one after another (a direct all-to-all's n - 1 sends through a GPU's one NVSwitch port). With
// `repeats` > 1, `lowered` is one step of a lowering whose steps are all alike (first_step), played that many
// times, as the whole lowering would be.
Seconds lowered_time(const Lowered& lowered, const std::vector<topology::NodeId>& gpus, const topology::Topology& topology,
                     PairPaths& paths, int repeats = 1);

// Costs for play_analytic on `topology` (rank r on topology.gpus()[r]). The costs keep a reference to
// `topology` and own a router.
CommCosts analytic_costs(const topology::Topology& topology, Algorithm algorithm, bool nvls, topology::Routing routing,
                         int max_channels = 0);

}  // namespace dtsim::sim
