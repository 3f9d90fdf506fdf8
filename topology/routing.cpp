#include "topology/routing.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

#include "topology/error.hpp"

namespace dtsim::topology {
namespace {

constexpr std::size_t kMaxCachedTrees = 256;

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                    boost::property<boost::edge_index_t, LinkId>>;

Graph to_boost(const Topology& topo) {
  Graph g(topo.nodes().size());
  for (LinkId l = 0; l < topo.links().size(); ++l) boost::add_edge(topo.link(l).a, topo.link(l).b, l, g);
  return g;
}

// splitmix64: a stateless mix so that ECMP choices are spread and reproducible.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Fills dist (hops from src) and returns the nodes in BFS order.
struct LayerVisitor : boost::default_bfs_visitor {
  std::vector<int>* dist;
  std::vector<NodeId>* order;
  void discover_vertex(std::size_t v, const Graph&) const { order->push_back(static_cast<NodeId>(v)); }
  void tree_edge(Graph::edge_descriptor e, const Graph& g) const {
    (*dist)[boost::target(e, g)] = (*dist)[boost::source(e, g)] + 1;
  }
};

}  // namespace

struct Router::BoostGraph {
  Graph graph;
};

Router::Router(const Topology& topo, bool ecmp)
    : topo_(topo), ecmp_(ecmp), graph_(std::make_unique<BoostGraph>(BoostGraph{to_boost(topo)})) {}
Router::~Router() = default;

const Router::Tree& Router::tree(NodeId src) {
  if (auto it = trees_.find(src); it != trees_.end()) return it->second;
  if (trees_.size() >= kMaxCachedTrees) {
    trees_.erase(order_.front());
    order_.pop_front();
  }
  const auto n = topo_.nodes().size();
  Tree t{std::vector<int>(n, -1), std::vector<double>(n, 0.0), std::vector<std::vector<Hop>>(n)};
  t.dist[src] = 0;
  std::vector<NodeId> order;
  LayerVisitor vis;
  vis.dist = &t.dist;
  vis.order = &order;
  boost::breadth_first_search(graph_->graph, src, boost::visitor(vis));
  t.width[src] = std::numeric_limits<double>::infinity();
  for (NodeId v : order) {   // BFS order: every predecessor's width is final before v is looked at
    if (v == src) continue;
    for (LinkId l : topo_.incident(v)) {
      const NodeId u = topo_.other_end(l, v);
      if (t.dist[u] != t.dist[v] - 1) continue;
      const double w = std::min(t.width[u], topo_.link(l).bandwidth.value());
      if (w > t.width[v] * (1 + 1e-12)) {
        t.width[v] = w;
        t.preds[v].clear();
      }
      if (w >= t.width[v] * (1 - 1e-12)) t.preds[v].push_back(Hop{l, topo_.link(l).b == v});
    }
    std::sort(t.preds[v].begin(), t.preds[v].end(), [&](const Hop& a, const Hop& b) {
      const NodeId ua = topo_.other_end(a.link, v);
      const NodeId ub = topo_.other_end(b.link, v);
      return ua != ub ? ua < ub : a.link < b.link;
    });
  }
  order_.push_back(src);
  return trees_.emplace(src, std::move(t)).first->second;
}

Route Router::make_route(std::vector<Hop> reversed) const {
  std::reverse(reversed.begin(), reversed.end());
  Route r{std::move(reversed), Seconds(0), BytesPerSecond(std::numeric_limits<double>::infinity())};
  for (const Hop& h : r.hops) {
    r.latency += topo_.link(h.link).latency;
    r.bottleneck = std::min(r.bottleneck, topo_.link(h.link).bandwidth);
  }
  return r;
}

Route Router::route(NodeId src, NodeId dst) {
  const Tree& t = tree(src);
  if (t.dist[dst] < 0) throw std::logic_error(fmt::format("no route from node {} to node {}", src, dst));
  const std::uint64_t salt = mix((static_cast<std::uint64_t>(src) << 32) | dst);
  std::vector<Hop> hops;
  for (NodeId v = dst; v != src;) {
    const auto& preds = t.preds[v];
    const Hop h = ecmp_ ? preds[mix(salt ^ v) % preds.size()] : preds.front();
    hops.push_back(h);
    v = topo_.other_end(h.link, v);
  }
  return make_route(std::move(hops));
}

int Router::hops(NodeId src, NodeId dst) { return tree(src).dist[dst]; }

std::vector<Route> Router::equal_cost_routes(NodeId src, NodeId dst, std::size_t limit) {
  const Tree& t = tree(src);
  std::vector<Route> out;
  if (t.dist[dst] < 0) return out;
  std::vector<Hop> stack;
  std::function<void(NodeId)> walk = [&](NodeId v) {
    if (out.size() >= limit) return;
    if (v == src) {
      out.push_back(make_route(stack));
      return;
    }
    for (const Hop& h : t.preds[v]) {
      stack.push_back(h);
      walk(topo_.other_end(h.link, v));
      stack.pop_back();
    }
  };
  walk(dst);
  return out;
}

}  // namespace dtsim::topology
