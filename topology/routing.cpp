#include "topology/routing.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

#include "topology/error.hpp"
#include "topology/name_table.hpp"

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

constexpr NameTable<Routing, 4> kRoutings{{{Routing::Single, "single"},
                                          {Routing::Ecmp, "ecmp"},
                                          {Routing::DModK, "dmodk"},
                                          {Routing::Adaptive, "adaptive"}}};

}  // namespace

std::string_view to_string(Routing r) { return name_of(kRoutings, r); }
std::optional<Routing> parse_routing(std::string_view name) { return value_of(kRoutings, name); }

Routing default_routing(const Topology& topo) {
  bool fabric = false;
  for (const Link& l : topo.links()) {
    if (topo.node(l.a).kind != NodeKind::Switch || topo.node(l.b).kind != NodeKind::Switch) continue;
    fabric = true;
    if (!l.by_destination) return Routing::Ecmp;
  }
  return fabric ? Routing::DModK : Routing::Single;
}

Router::Router(const Topology& topo, Routing routing) : topo_(topo), routing_(routing) {
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
  // D-mod-K numbers each endpoint by its port on a fabric switch (one outside every machine, or one reached over
  // InfiniBand): the switch's ordinal among those with endpoint ports times its port count, plus the port's
  // position, in link order (the builders attach NICs to a leaf in order). A machine's NVSwitch numbers nothing.
  port_index_.assign(topo.nodes().size(), kNoPort);
  std::uint64_t leaves = 0;
  for (NodeId v = 0; v < topo.nodes().size(); ++v) {
    if (topo.node(v).kind != NodeKind::Switch) continue;
    std::vector<NodeId> ports;
    for (LinkId l : topo.incident(v)) {
      const NodeId end = topo.other_end(l, v);
      const bool fabric = topo.node(v).machine < 0 || topo.link(l).by_destination;
      if (fabric && topo.node(end).kind != NodeKind::Switch) ports.push_back(end);
    }
    if (ports.empty()) continue;
    for (std::size_t p = 0; p < ports.size(); ++p)
      if (port_index_[ports[p]] == kNoPort) port_index_[ports[p]] = leaves * ports.size() + p;
    ++leaves;
  }
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

// The choice among the equal best hops into `v`, walking back from the destination. D-mod-K: the destination's
// switch-port number (the first endpoint met on the way back that has one; else its node id), read as digits in
// the successive fan-outs, so every flow to one destination takes one path and the ports of one leaf take
// different spines, as fat-tree routing fills InfiniBand forwarding tables. ECMP: a hash of (source,
// destination) mixed with the fan-out's node. Single (and adaptive's one representative path): the first.
std::size_t Router::pick(std::span<const Hop> hops, std::uint64_t salt, Digits& digits, NodeId v) const {
  if (hops.size() == 1) return 0;
  switch (routing_) {
    case Routing::Single:
    case Routing::Adaptive: return 0;
    case Routing::DModK: {
      digits.set = true;   // no endpoint port on the way: the destination's node id
      const std::size_t i = digits.value % hops.size();
      digits.value /= hops.size();
      return i;
    }
    case Routing::Ecmp: return mix(salt ^ v) % hops.size();
  }
  DTSIM_ASSERT(false, "routing missing from Router::pick");
}

// One path back from `dst` to `src`, each node's hop picked among `best(v)` (its best arriving hops).
template <class Best>
std::vector<Hop> Router::walk_back(NodeId src, NodeId dst, Best best) const {
  const std::uint64_t salt = mix((static_cast<std::uint64_t>(src) << 32) | dst);
  std::vector<Hop> hops;
  Digits digits{dst};
  for (NodeId v = dst; v != src;) {
    digits.note(port_index_[v]);
    const std::span<const Hop> preds = best(v);
    const Hop h = preds[pick(preds, salt, digits, v)];
    hops.push_back(h);
    v = topo_.other_end(h.link, v);
  }
  return hops;
}

// Every best hop between the pair, layer by layer back from `dst`: the hops into the current frontier, whose far
// ends make the next one. Returned from the source's side.
template <class Best>
std::vector<std::vector<Hop>> Router::layers_back(NodeId src, NodeId dst, Best best) const {
  std::vector<std::vector<Hop>> layers;
  std::vector<NodeId> frontier{dst};
  while (!(frontier.size() == 1 && frontier.front() == src)) {
    std::vector<Hop> layer;
    std::vector<NodeId> next;
    for (NodeId v : frontier)
      for (const Hop& h : best(v)) {
        layer.push_back(h);
        next.push_back(topo_.other_end(h.link, v));
      }
    DTSIM_ASSERT(!layer.empty(), "a node on a shortest path has no best hop");
    std::ranges::sort(layer, [](const Hop& a, const Hop& b) { return a.link != b.link ? a.link < b.link : a.forward < b.forward; });
    std::ranges::sort(next);
    next.erase(std::unique(next.begin(), next.end()), next.end());
    layers.push_back(std::move(layer));
    frontier = std::move(next);
  }
  std::reverse(layers.begin(), layers.end());
  return layers;
}

void Router::Digits::note(std::uint64_t port) {
  if (!set && port != kNoPort) *this = {port, true};
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

// Breadth-first from both ends, one whole layer at a time on the smaller side, until a layer reaches a node the
// other side has reached: then every such node is at distance D = (forward depth) + (backward depth), and
// every node on a shortest path is within the forward depth of src or the backward depth of dst. Marking the
// shortest-path nodes back from that meeting layer on each side, then the widest best hops forward from src
// over them alone, gives each node on the way the same hops `tree` gives it (its best hops come from the
// previous layer, all of whose nodes on a shortest path to it lie on one to dst as well).
template <class Use>
auto Router::pair_search(NodeId src, NodeId dst, Use use) {
  Scratch& s = scratch_;
  const auto n = topo_.nodes().size();
  if (s.from_src.size() != n) {
    s.from_src.assign(n, -1);
    s.to_dst.assign(n, -1);
    s.on_path.assign(n, 0);
    s.width.assign(n, 0.0);
    s.best.assign(n, {0, 0});
  }
  const auto reach = [&](std::vector<int>& dist, NodeId v, int d) {
    if (s.from_src[v] < 0 && s.to_dst[v] < 0) s.touched.push_back(v);
    dist[v] = d;
  };
  std::vector<std::vector<NodeId>> forward{{src}}, backward{{dst}};
  reach(s.from_src, src, 0);
  reach(s.to_dst, dst, 0);
  bool met = false;
  while (!met) {
    const bool ahead = forward.back().size() <= backward.back().size();
    auto& layers = ahead ? forward : backward;
    auto& mine = ahead ? s.from_src : s.to_dst;
    const auto& theirs = ahead ? s.to_dst : s.from_src;
    std::vector<NodeId> next;
    const int depth = static_cast<int>(layers.size());
    for (NodeId u : layers.back())
      for (std::uint32_t a = arc_first_[u]; a < arc_first_[u + 1]; ++a) {
        const NodeId v = arcs_[a].peer;
        if (mine[v] >= 0) continue;
        reach(mine, v, depth);
        next.push_back(v);
        met = met || theirs[v] >= 0;
      }
    if (next.empty()) {
      for (NodeId v : s.touched) s.from_src[v] = s.to_dst[v] = -1;
      s.touched.clear();
      throw std::logic_error(fmt::format("no route from node {} to node {}", src, dst));
    }
    layers.push_back(std::move(next));
  }
  const int fa = static_cast<int>(forward.size()) - 1, fb = static_cast<int>(backward.size()) - 1;
  const int total = fa + fb;
  // Shortest-path nodes: the meeting nodes, then back layer by layer on each side.
  for (NodeId v : forward[static_cast<std::size_t>(fa)]) s.on_path[v] = s.to_dst[v] == fb;
  for (NodeId v : backward[static_cast<std::size_t>(fb)]) s.on_path[v] = s.from_src[v] == fa;
  const auto mark = [&](const std::vector<std::vector<NodeId>>& layers, const std::vector<int>& dist) {
    for (std::size_t k = layers.size() - 1; k-- > 0;)
      for (NodeId v : layers[k])
        for (std::uint32_t a = arc_first_[v]; a < arc_first_[v + 1]; ++a) {
          const NodeId w = arcs_[a].peer;
          if (dist[w] == static_cast<int>(k) + 1 && s.on_path[w]) {
            s.on_path[v] = 1;
            break;
          }
        }
  };
  mark(forward, s.from_src);
  mark(backward, s.to_dst);
  // Distance from src of a node on a shortest path.
  const auto depth_of = [&](NodeId v) { return s.from_src[v] >= 0 ? s.from_src[v] : total - s.to_dst[v]; };
  // Widest best hops, in order of distance from src: the forward layers, then the backward ones from the far end.
  std::vector<NodeId> order;
  for (const auto& layer : forward)
    for (NodeId v : layer)
      if (s.on_path[v]) order.push_back(v);
  for (std::size_t k = backward.size(); k-- > 0;)
    for (NodeId v : backward[k])
      if (s.on_path[v] && s.from_src[v] < 0) order.push_back(v);
  s.width[src] = std::numeric_limits<double>::infinity();
  for (NodeId v : order) {
    if (v == src) continue;
    const int dv = depth_of(v);
    const auto begin = static_cast<std::uint32_t>(s.hops.size());
    for (std::uint32_t a = arc_first_[v]; a < arc_first_[v + 1]; ++a) {
      const Arc& arc = arcs_[a];
      if (!s.on_path[arc.peer] || depth_of(arc.peer) != dv - 1) continue;
      const double w = std::min(s.width[arc.peer], arc.bandwidth);
      if (w > s.width[v] * (1 + 1e-12)) {
        s.width[v] = w;
        s.hops.resize(begin);
      }
      if (w >= s.width[v] * (1 - 1e-12)) s.hops.push_back(Hop{arc.link, arc.forward});
    }
    s.best[v] = {begin, static_cast<std::uint32_t>(s.hops.size())};
  }
  auto result = use([&](NodeId v) {
    const auto [first, last] = s.best[v];
    return std::span<const Hop>(s.hops.data() + first, last - first);
  });
  for (NodeId v : s.touched) {
    s.from_src[v] = s.to_dst[v] = -1;
    s.on_path[v] = 0;
    s.width[v] = 0.0;
  }
  s.touched.clear();
  s.hops.clear();
  return result;
}

Route Router::pair_route(NodeId src, NodeId dst) {
  if (src == dst) return make_route({});
  return make_route(pair_search(src, dst, [&](const auto& best) { return walk_back(src, dst, best); }));
}

Route Router::route(NodeId src, NodeId dst) {
  if (topo_.nodes().size() > kPairSearchAbove && trees_.count(src) == 0) return pair_route(src, dst);
  const Tree& t = tree(src);
  if (t.dist[dst] < 0) throw std::logic_error(fmt::format("no route from node {} to node {}", src, dst));
  return make_route(walk_back(src, dst, [&](NodeId v) { return t.into(v); }));
}

std::vector<std::vector<Hop>> Router::route_layers(NodeId src, NodeId dst) {
  if (routing_ != Routing::Adaptive) {
    std::vector<std::vector<Hop>> layers;
    for (const Hop& h : route(src, dst).hops) layers.push_back({h});
    return layers;
  }
  if (src == dst) return {};
  if (topo_.nodes().size() > kPairSearchAbove && trees_.count(src) == 0)
    return pair_search(src, dst, [&](const auto& best) { return layers_back(src, dst, best); });
  const Tree& t = tree(src);
  if (t.dist[dst] < 0) throw std::logic_error(fmt::format("no route from node {} to node {}", src, dst));
  return layers_back(src, dst, [&](NodeId v) { return t.into(v); });
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
