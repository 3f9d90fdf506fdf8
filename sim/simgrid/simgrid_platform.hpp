// Private to dtsim_simgrid: one SimGrid simulation over a Topology, behind an interface free of SimGrid types,
// so that the StepGraph player and the collective runner never include SimGrid.
//
// Platform: one zone of dtsim's own keeping the routes in a hash table (SimGrid's FullZone keeps hosts x hosts
// slots); a host per node a transfer starts or ends at; per topology link and
// direction a route uses, one SHARED link (bandwidth x efficiency, the link's latency); per node with
// a finite switching capacity (the star's hub) one SHARED link of that capacity, crossed once by every route
// that visits the node; per rate cap (NVLS) one FATPIPE link of that rate, which caps each flow on it alone.
// Routes come from topology::Router and are added, each direction on its own, only for the pairs in RouteNeeds.
//
// Activities are started just in time: `compute`, `transfer` and `after` call back when they end, and the
// callbacks start what follows (../shared/SIMGRID.md §5). `compute` and `after` are kernel timers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topology/routing.hpp"
#include "topology/topology.hpp"
#include "topology/units.hpp"

namespace dtsim::sim::flow {

// A resource SimGrid shares between flows: a topology link in one direction (2 x link + 1 forward, 2 x link
// backward), a device's switching capacity (2 x links + node), or, under adaptive routing, a trunk: the equal
// hops of one fan-out taken together (2 x links + nodes + trunk).
using Resource = std::uint64_t;
// Resources whose capacity a simulation divides: each flow played on them stands for that many (symmetry).
using Shares = std::unordered_map<Resource, double>;

// The directed node pairs a simulation sends between, each with the rate cap its transfers carry (if any).
class RouteNeeds {
 public:
  using Pair = std::pair<topology::NodeId, topology::NodeId>;
  // A pair seen twice must carry the same cap both times (one route per pair).
  void add(topology::NodeId src, topology::NodeId dst, std::optional<BytesPerSecond> rate = std::nullopt);
  [[nodiscard]] const std::map<Pair, std::optional<BytesPerSecond>>& pairs() const { return pairs_; }

 private:
  std::map<Pair, std::optional<BytesPerSecond>> pairs_;
};

// The resources of each pair's route (topology::Router's route layers), memoized per pair.
class RouteResources {
 public:
  RouteResources(const topology::Topology& topo, topology::Routing routing);
  const std::vector<Resource>& operator()(const RouteNeeds::Pair& pair);
  // What a resource offers: bandwidth x efficiency and latency of a link, a node's capacity (latency 0), a
  // trunk's links together (their summed bandwidth x efficiency, the slowest one's latency).
  [[nodiscard]] std::pair<double, double> offer(Resource r) const;
  [[nodiscard]] bool is_capacity(Resource r) const;
  [[nodiscard]] bool is_trunk(Resource r) const;

 private:
  Resource trunk(const std::vector<topology::Hop>& hops);

  const topology::Topology& topo_;
  topology::Router router_;
  std::unordered_map<std::uint64_t, std::vector<Resource>> routes_;
  std::map<std::vector<std::pair<topology::LinkId, bool>>, Resource> trunk_ids_;
  std::vector<std::pair<double, double>> trunks_;        // per trunk: bandwidth x efficiency, latency
  std::unordered_map<Resource, Resource> trunk_of_link_;   // each link direction in a trunk: which one
};

class Simulation {
 public:
  using Done = std::function<void(Seconds start, Seconds end)>;

  // Creates the process's SimGrid engine (one per process), configures the textbook network model and builds
  // the platform with the routes of `needs` (from `routes`), each resource in `shares` at 1/share of its
  // capacity. Hosts are the nodes of `needs` only.
  Simulation(const topology::Topology& topology, const RouteNeeds& needs, RouteResources& routes,
             const Shares& shares = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs `duration` of work on `node` (a GPU); the caller keeps one running per GPU.
  void compute(topology::NodeId node, Seconds duration, Done done);
  // Sends `bytes` from `src` to `dst` (a pair given in RouteNeeds); ends when the last byte arrives.
  void transfer(topology::NodeId src, topology::NodeId dst, Bytes bytes, Done done);
  // Calls `then` `delay` from now.
  void after(Seconds delay, std::function<void()> then);
  [[nodiscard]] Seconds now() const;

  // Runs until nothing is left to do. An exception thrown by a callback stops further callbacks and is
  // rethrown here.
  void run();

  // What Timeline::network_model says.
  static std::string_view network_model();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtsim::sim::flow
