#include "topology/routing.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

#include "topology/error.hpp"

namespace dtsim::topology {
namespace {

// A tree holds about 20 bytes per node (a 16,384-GPU fabric: about 1 MB); callers mostly ask for routes grouped
// by source.
constexpr std::size_t kMaxCachedTrees = 64;

// splitmix64: a stateless mix so that ECMP choices are spread and reproducible.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Router::Router(const Topology& topo, bool ecmp) : topo_(topo), ecmp_(ecmp) {
  for (NodeId v = 0; v < topo.nodes().size(); ++v) {
    arc_first_.push_back(static_cast<std::uint32_t>(arcs_.size()));
    for (LinkId l : topo.incident(v)) {
      const Link& link = topo.link(l);
      arcs_.push_back(Arc{topo.other_end(l, v), l, link.b == v, link.bandwidth.value()});
    }
    std::sort(arcs_.begin() + arc_first_.back(), arcs_.end(),
              [](const Arc& a, const Arc& b) { return a.peer != b.peer ? a.peer < b.peer : a.link < b.link; });
  }
  arc_first_.push_back(static_cast<std::uint32_t>(arcs_.size()));
}
Router::~Router() = default;

// Breadth-first layers from `src`, then per node in that order its best arriving hops: from the previous layer,
// of the widest bottleneck (every predecessor's width is final before a node is looked at). Arcs are sorted by
// (peer, link), so the hops come out in the order the tie-break wants.
const Router::Tree& Router::tree(NodeId src) {
  if (auto it = trees_.find(src); it != trees_.end()) return it->second;
  Tree t;
  if (trees_.size() >= kMaxCachedTrees) {   // reuse the evicted tree's storage
    auto evicted = trees_.extract(order_.front());
    order_.pop_front();
    t = std::move(evicted.mapped());
  }
  const auto n = topo_.nodes().size();
  t.dist.assign(n, -1);
  t.first.assign(n + 1, 0);
  t.preds.clear();
  std::vector<NodeId> order;
  order.reserve(n);
  t.dist[src] = 0;
  order.push_back(src);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const NodeId u = order[i];
    for (std::uint32_t a = arc_first_[u]; a < arc_first_[u + 1]; ++a)
      if (t.dist[arcs_[a].peer] < 0) {
        t.dist[arcs_[a].peer] = t.dist[u] + 1;
        order.push_back(arcs_[a].peer);
      }
  }
  std::vector<double> width(n, 0.0);
  width[src] = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> range(n, {0, 0});
  std::vector<Hop> found;
  found.reserve(n + n / 2);
  for (NodeId v : order) {
    if (v == src) continue;
    const auto begin = static_cast<std::uint32_t>(found.size());
    for (std::uint32_t a = arc_first_[v]; a < arc_first_[v + 1]; ++a) {
      const Arc& arc = arcs_[a];
      if (t.dist[arc.peer] != t.dist[v] - 1) continue;
      const double w = std::min(width[arc.peer], arc.bandwidth);
      if (w > width[v] * (1 + 1e-12)) {
        width[v] = w;
        found.resize(begin);
      }
      if (w >= width[v] * (1 - 1e-12)) found.push_back(Hop{arc.link, arc.forward});
    }
    range[v] = {begin, static_cast<std::uint32_t>(found.size())};
  }
  // Laid out by node id, so that into(v) is one contiguous range.
  t.preds.reserve(found.size());
  for (NodeId v = 0; v < n; ++v) {
    t.first[v] = static_cast<std::uint32_t>(t.preds.size());
    t.preds.insert(t.preds.end(), found.begin() + range[v].first, found.begin() + range[v].second);
  }
  t.first[n] = static_cast<std::uint32_t>(t.preds.size());
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
    const auto preds = t.into(v);
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
    for (const Hop& h : t.into(v)) {
      stack.push_back(h);
      walk(topo_.other_end(h.link, v));
      stack.pop_back();
    }
  };
  walk(dst);
  return out;
}

}  // namespace dtsim::topology
