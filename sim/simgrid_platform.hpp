// Private to dtsim_simgrid: one SimGrid simulation over a Topology, behind an interface free of SimGrid types,
// so that the StepGraph player and the collective runner never include SimGrid.
//
// Platform: one FullZone; a host per GPU and per other node a transfer starts or ends at; a split-duplex link
// per topology link (bandwidth x efficiency per direction, the link's latency) that a route uses; per node with
// a finite switching capacity (the star's hub) one SHARED link of that capacity, crossed once by every route
// that visits the node; per rate cap (NVLS) one FATPIPE link of that rate, which caps each flow on it alone.
// Routes come from topology::Router and are added, each direction on its own, only for the pairs in RouteNeeds.
//
// Activities are started just in time: `compute`, `transfer` and `after` call back when they end, and the
// callbacks start what follows (../shared/SIMGRID.md §5).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "topology/topology.hpp"
#include "topology/units.hpp"

namespace dtsim::sim::flow {

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

class Simulation {
 public:
  using Done = std::function<void(Seconds start, Seconds end)>;

  // Creates the process's SimGrid engine (one per process), configures the textbook network model and builds
  // the platform with the routes of `needs`.
  Simulation(const topology::Topology& topology, const RouteNeeds& needs, bool ecmp);
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
