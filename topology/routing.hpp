// Routing: shortest paths in hops over the topology graph, testable without SimGrid.
//
// Among the paths of fewest hops, the widest one wins (largest bottleneck bandwidth), so traffic between two
// GPUs of a node takes the NVSwitch, not a NIC they share. Where several such paths remain (the spines of a fat
// tree), the fabric's routing decides (cluster.routing):
//   single    the path through the lowest node and link ids, for every pair (one spine carries everything);
//   dmodk     destination-based static routing (D-mod-K): the destination's switch-port number, read digit by
//             digit in the successive fan-outs, picks the path, as fat-tree routing programs InfiniBand
//             forwarding tables (indexed by destination LID); a ring's shifts across leaves never share a link;
//   ecmp      a hash of (source, destination) per fan-out, as Ethernet switches hash each flow's 5-tuple: each
//             pair keeps one path, and pairs collide on a link by chance;
//   adaptive  every packet takes the least loaded of the equal paths (InfiniBand adaptive routing, packet
//             spraying): in a flow model, each flow spread evenly over all of them, so the equal hops of one
//             fan-out act as one trunk of their summed capacity (route_layers).
#pragma once

#include <cstddef>
#include <list>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "topology/topology.hpp"

namespace dtsim::topology {

enum class Routing { Single, Ecmp, DModK, Adaptive };
std::string_view to_string(Routing r);
std::optional<Routing> parse_routing(std::string_view name);
inline constexpr std::string_view kRoutingNames = "single, ecmp, dmodk, adaptive";

// What a fabric's switches do when a scenario names no routing: D-mod-K where every link between two switches
// is InfiniBand (Link::by_destination), a flow hash (ECMP) otherwise; single where no pair has two paths.
Routing default_routing(const Topology& topo);

struct Route {
  std::vector<Hop> hops;           // in order from source to destination
  Seconds latency;                 // sum of the links' latencies
  BytesPerSecond bottleneck;       // least link bandwidth on the way (line rate)
};

class Router {
 public:
  explicit Router(const Topology& topo, Routing routing = Routing::Single);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The route from `src` to `dst` (node ids); throws std::logic_error if unreachable (graphs are checked
  // connected on input).
  [[nodiscard]] Route route(NodeId src, NodeId dst);
  // The same route as `route`, found by a search from both ends that visits only the nodes near them and the
  // shortest paths between them, not a tree over the whole graph: what `route` uses on large graphs (more than
  // kPairSearchAbove nodes) for a source whose tree it does not hold.
  [[nodiscard]] Route pair_route(NodeId src, NodeId dst);
  static constexpr std::size_t kPairSearchAbove = 4096;
  // Hops on the shortest path; -1 if unreachable.
  [[nodiscard]] int hops(NodeId src, NodeId dst);
  // All equal-cost (fewest hops, widest) routes, up to `limit`, in deterministic order.
  [[nodiscard]] std::vector<Route> equal_cost_routes(NodeId src, NodeId dst, std::size_t limit);
  // The route as the traffic crosses it, one layer per hop count from the source: under adaptive routing every
  // hop of the equal-cost paths between the pair at that distance (a layer of several hops is a trunk), under
  // the other routings the one hop of `route`. Hops of a layer in deterministic order.
  [[nodiscard]] std::vector<std::vector<Hop>> route_layers(NodeId src, NodeId dst);
  [[nodiscard]] Routing routing() const { return routing_; }

 private:
  struct Tree {   // shortest-path DAG from one source, flat: no allocation per node
    std::vector<int> dist;
    std::vector<std::uint32_t> first;   // per node, its hops in `preds`: [first[v], first[v + 1])
    std::vector<Hop> preds;             // hops arriving at each node on a best path, sorted
    [[nodiscard]] std::span<const Hop> into(NodeId v) const { return {preds.data() + first[v], preds.data() + first[v + 1]}; }
  };
  const Tree& tree(NodeId src);
  Route make_route(std::vector<Hop> reversed) const;
  static constexpr std::uint64_t kNoPort = ~std::uint64_t{0};
  struct Digits {   // D-mod-K's destination number, consumed one fan-out at a time
    std::uint64_t value = 0;
    bool set = false;
    void note(std::uint64_t port);   // takes the first endpoint port met walking back from the destination
  };
  std::size_t pick(std::span<const Hop> hops, std::uint64_t salt, Digits& digits, NodeId v) const;
  template <class Use>
  auto pair_search(NodeId src, NodeId dst, Use use);
  template <class Best>
  std::vector<Hop> walk_back(NodeId src, NodeId dst, Best best) const;
  template <class Best>
  std::vector<std::vector<Hop>> layers_back(NodeId src, NodeId dst, Best best) const;

  struct Arc {   // a link arriving at a node: from `peer`, over `link` (forward when the node is its b end)
    NodeId peer;
    LinkId link;
    bool forward;
    double bandwidth;
  };
  const Topology& topo_;
  Routing routing_;
  std::vector<std::uint32_t> arc_first_;   // per node, its arcs sorted by (peer, link): [arc_first_[v], arc_first_[v + 1])
  std::vector<Arc> arcs_;
  std::vector<std::uint64_t> port_index_;   // per node, its D-mod-K number on an InfiniBand switch; kNoPort if none
  std::unordered_map<NodeId, Tree> trees_;
  struct Scratch {   // pair_route's per-node state, reset node by node after each search
    std::vector<int> from_src, to_dst;    // hops, -1 = not reached
    std::vector<char> on_path;            // on a shortest path between the pair
    std::vector<double> width;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> best;   // range of its best hops in `hops`
    std::vector<Hop> hops;
    std::vector<NodeId> touched;
  };
  Scratch scratch_;
  std::list<NodeId> order_;   // least recently computed first; bounded cache
};

}  // namespace dtsim::topology
