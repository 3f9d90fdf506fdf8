// Routing: shortest paths in hops over the topology graph, testable without SimGrid.
//
// Among the paths of fewest hops, the widest one wins (largest bottleneck bandwidth), so traffic between two
// GPUs of a node takes the NVSwitch, not a NIC they share. Remaining ties: without ECMP the path through the
// lowest node and link ids; with ECMP one of the equal paths chosen by a hash of (source, destination), so
// different pairs spread over the spines of a fat tree while each pair keeps one path.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "topology/topology.hpp"

namespace dtsim::topology {

struct Route {
  std::vector<Hop> hops;           // in order from source to destination
  Seconds latency;                 // sum of the links' latencies
  BytesPerSecond bottleneck;       // least link bandwidth on the way (line rate)
};

class Router {
 public:
  explicit Router(const Topology& topo, bool ecmp = false);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The route from `src` to `dst` (node ids); throws std::logic_error if unreachable (graphs are checked
  // connected on input).
  [[nodiscard]] Route route(NodeId src, NodeId dst);
  // Hops on the shortest path; -1 if unreachable.
  [[nodiscard]] int hops(NodeId src, NodeId dst);
  // All equal-cost (fewest hops, widest) routes, up to `limit`, in deterministic order.
  [[nodiscard]] std::vector<Route> equal_cost_routes(NodeId src, NodeId dst, std::size_t limit);

 private:
  struct Tree {   // shortest-path DAG from one source
    std::vector<int> dist;
    std::vector<double> width;
    std::vector<std::vector<Hop>> preds;   // hops arriving at each node on a best path, sorted
  };
  const Tree& tree(NodeId src);
  Route make_route(std::vector<Hop> reversed) const;

  struct BoostGraph;
  const Topology& topo_;
  bool ecmp_;
  std::unique_ptr<BoostGraph> graph_;
  std::unordered_map<NodeId, Tree> trees_;
  std::list<NodeId> order_;   // least recently computed first; bounded cache
};

}  // namespace dtsim::topology
