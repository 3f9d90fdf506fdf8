// The order in which a ring visits the GPUs of one machine, as NCCL's ring search chooses it
// (src/graph/search.cc): the search charges every ring edge's bandwidth to each link on its path and keeps the
// ring whose busiest link still gives the most bandwidth, trying the widest, then nearest, peers first, so
// NVLink-bridged pairs sit next to each other and the ring crosses a slow link (a socket interconnect, an x8
// slot) as few times as it can.
//
// Here a ring's bandwidth is that of its most loaded resource: over every directed link (line rate x
// efficiency) and every device with a switching capacity on the ring's routes, the capacity divided by the ring
// edges that cross it; ties go to the least total latency, then to the machine's own order (the identity), so a
// machine where every order is alike (NVSwitch, a full mesh) keeps its GPUs in order. Exhaustive up to
// kExhaustiveUpTo GPUs, greedy (widest, then fewest hops, then lowest index, from the first GPU) beyond.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "topology/routing.hpp"
#include "topology/topology.hpp"

namespace dtsim::topology {

class RingOrders {
 public:
  explicit RingOrders(const Topology& topo);

  // The positions of `gpus` (one machine's, in any order) in the order the ring visits them: gpus[p[0]],
  // gpus[p[1]], ...; p[0] is always 0.
  [[nodiscard]] const std::vector<std::size_t>& order(std::span<const NodeId> gpus);

  static constexpr std::size_t kExhaustiveUpTo = 8;

 private:
  struct Edge {               // the route between two of the GPUs: its resources and latency
    std::vector<std::size_t> resources;
    double latency = 0;
    double widest = 0;        // its least resource capacity
    int hops = 0;
  };
  struct Score {
    double bandwidth = 0;
    double latency = 0;
  };
  std::vector<Edge> edges(std::span<const NodeId> gpus);
  Score score(const std::vector<Edge>& edges, std::size_t n, std::span<const std::size_t> order);
  std::vector<std::size_t> search(const std::vector<Edge>& edges, std::size_t n);

  const Topology& topo_;
  Router router_;
  std::vector<double> capacity_;   // per resource: 2 per link (by direction), then one per node
  std::vector<int> uses_;          // scratch, per resource
  std::map<std::vector<NodeId>, std::vector<std::size_t>> cache_;
};

}  // namespace dtsim::topology
