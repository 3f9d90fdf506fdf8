#include "topology/ring_order.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "topology/error.hpp"

namespace dtsim::topology {
namespace {

constexpr double kRelativeTie = 1e-9;

bool better(double a, double b) { return a > b * (1.0 + kRelativeTie); }

}  // namespace

RingOrders::RingOrders(const Topology& topo) : topo_(topo), router_(topo, Routing::Single) {
  for (const Link& l : topo.links()) capacity_.insert(capacity_.end(), 2, l.bandwidth.value() * l.efficiency);
  for (const Node& n : topo.nodes()) capacity_.push_back(n.capacity ? n.capacity->value() : 0.0);
  uses_.assign(capacity_.size(), 0);
}

// Every ordered pair's route, as the resources it loads: its directed links and the devices with a switching
// capacity it passes through.
std::vector<RingOrders::Edge> RingOrders::edges(std::span<const NodeId> gpus) {
  const std::size_t n = gpus.size();
  const std::size_t first_node = 2 * topo_.links().size();
  std::vector<Edge> out(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const Route route = router_.route(gpus[i], gpus[j]);
      Edge& e = out[i * n + j];
      e.latency = route.latency.value();
      e.hops = static_cast<int>(route.hops.size());
      for (const Hop& h : route.hops) {
        const Link& l = topo_.link(h.link);
        e.resources.push_back(2 * h.link + (h.forward ? 0 : 1));
        const NodeId to = h.forward ? l.b : l.a;
        if (topo_.node(to).capacity) e.resources.push_back(first_node + to);
      }
      e.widest = std::numeric_limits<double>::infinity();
      for (std::size_t r : e.resources) e.widest = std::min(e.widest, capacity_[r]);
    }
  return out;
}

RingOrders::Score RingOrders::score(const std::vector<Edge>& edges, std::size_t n, std::span<const std::size_t> order) {
  Score s{std::numeric_limits<double>::infinity(), 0.0};
  for (std::size_t k = 0; k < n; ++k) {
    const Edge& e = edges[order[k] * n + order[(k + 1) % n]];
    s.latency += e.latency;
    for (std::size_t r : e.resources) ++uses_[r];
  }
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t r : edges[order[k] * n + order[(k + 1) % n]].resources) {
      if (uses_[r] == 0) continue;
      s.bandwidth = std::min(s.bandwidth, capacity_[r] / uses_[r]);
      uses_[r] = 0;
    }
  return s;
}

std::vector<std::size_t> RingOrders::search(const std::vector<Edge>& edges, std::size_t n) {
  std::vector<std::size_t> best(n);
  std::iota(best.begin(), best.end(), std::size_t{0});
  Score top = score(edges, n, best);
  const auto consider = [&](const std::vector<std::size_t>& candidate) {
    const Score s = score(edges, n, candidate);
    if (better(s.bandwidth, top.bandwidth) ||
        (!better(top.bandwidth, s.bandwidth) && s.latency < top.latency * (1.0 - kRelativeTie))) {
      top = s;
      best = candidate;
    }
  };
  if (n <= kExhaustiveUpTo) {
    std::vector<std::size_t> p = best;
    while (std::next_permutation(p.begin() + 1, p.end())) consider(p);
    return best;
  }
  std::vector<std::size_t> greedy{0};
  std::vector<char> used(n, 0);
  used[0] = 1;
  while (greedy.size() < n) {
    const std::size_t from = greedy.back();
    std::size_t pick = n;
    for (std::size_t j = 0; j < n; ++j) {
      if (used[j]) continue;
      const Edge& e = edges[from * n + j];
      if (pick == n) {
        pick = j;
        continue;
      }
      const Edge& b = edges[from * n + pick];
      if (better(e.widest, b.widest) || (!better(b.widest, e.widest) && e.hops < b.hops)) pick = j;
    }
    used[pick] = 1;
    greedy.push_back(pick);
  }
  consider(greedy);
  return best;
}

namespace {

// Every GPU's one link inside its machine (NIC links aside) goes to the same switch, alike, and the switch has
// no capacity of its own (an NVSwitch board): every order is the same ring.
bool on_one_switch(const Topology& topo, std::span<const NodeId> gpus) {
  std::optional<NodeId> hub;
  std::optional<std::pair<double, double>> shape;
  for (NodeId g : gpus) {
    std::optional<LinkId> only;
    for (LinkId l : topo.incident(g)) {
      if (topo.node(topo.other_end(l, g)).kind == NodeKind::Nic) continue;
      if (only) return false;
      only = l;
    }
    if (!only) return false;
    const Link& l = topo.link(*only);
    const NodeId other = topo.other_end(*only, g);
    const std::pair<double, double> s{l.bandwidth.value() * l.efficiency, l.latency.value()};
    if (hub && (*hub != other || *shape != s)) return false;
    hub = other;
    shape = s;
  }
  return hub && topo.node(*hub).kind == NodeKind::Switch && !topo.node(*hub).capacity;
}

}  // namespace

const std::vector<std::size_t>& RingOrders::order(std::span<const NodeId> gpus) {
  std::vector<NodeId> key(gpus.begin(), gpus.end());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const std::size_t n = gpus.size();
  std::vector<std::size_t> identity(n);
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  if (n < 3 || on_one_switch(topo_, gpus)) return cache_.emplace(std::move(key), std::move(identity)).first->second;
  const std::vector<Edge> all = edges(gpus);
  // Where the identity already gives every GPU its widest edge and every pair is as near as every other (a
  // switch, a full mesh), no order is better: skip the search.
  double bound = std::numeric_limits<double>::infinity();
  bool alike = true;
  for (std::size_t i = 0; i < n; ++i) {
    double widest = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      widest = std::max(widest, all[i * n + j].widest);
      alike = alike && all[i * n + j].latency == all[1].latency;
    }
    bound = std::min(bound, widest);
  }
  if (alike && !better(bound, score(all, n, identity).bandwidth))
    return cache_.emplace(std::move(key), std::move(identity)).first->second;
  return cache_.emplace(std::move(key), search(all, n)).first->second;
}

}  // namespace dtsim::topology
