#include "topology/properties.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "topology/catalog.hpp"
#include "topology/routing.hpp"

namespace dtsim::topology {
namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, long long,
                    boost::property<boost::edge_residual_capacity_t, long long,
                                    boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;

// Capacities in whole kB/s (at least 1 for any positive rate): with every link at most kMaxLinkBandwidth, sums
// over millions of links stay far below the range of long long.
constexpr double kFlowUnit = 1e3;
long long rate(BytesPerSecond b) { return std::max(1LL, std::llround(b.value() / kFlowUnit)); }

class FlowNetwork {
 public:
  explicit FlowNetwork(std::size_t vertices) : graph_(vertices) {}
  void arc(std::size_t from, std::size_t to, long long cap) {
    auto fwd = boost::add_edge(from, to, graph_).first;
    auto rev = boost::add_edge(to, from, graph_).first;
    boost::put(boost::edge_capacity, graph_, fwd, cap);
    boost::put(boost::edge_capacity, graph_, rev, 0);
    boost::put(boost::edge_reverse, graph_, fwd, rev);
    boost::put(boost::edge_reverse, graph_, rev, fwd);
  }
  long long max_flow(std::size_t s, std::size_t t) { return boost::push_relabel_max_flow(graph_, s, t); }

 private:
  FlowGraph graph_;
};

}  // namespace

// Node v becomes v_in = v and v_out = n + v; a capacity-limited switch gets an arc v_in -> v_out of its
// capacity, every other node an unlimited one. Each link direction is an arc out -> in of its bandwidth.
BytesPerSecond min_cut(const Topology& topo, const std::vector<std::size_t>& side_a) {
  const std::size_t n = topo.nodes().size();
  const std::size_t source = 2 * n;
  const std::size_t sink = 2 * n + 1;
  long long unlimited = 1;
  for (const Link& l : topo.links()) unlimited += 2 * rate(l.bandwidth);
  FlowNetwork net(2 * n + 2);
  for (std::size_t v = 0; v < n; ++v) {
    const auto& cap = topo.nodes()[v].capacity;
    net.arc(v, n + v, cap ? rate(*cap) : unlimited);
  }
  for (const Link& l : topo.links()) {
    net.arc(n + l.a, l.b, rate(l.bandwidth));
    net.arc(n + l.b, l.a, rate(l.bandwidth));
  }
  std::vector<bool> in_a(topo.gpus().size(), false);
  for (std::size_t r : side_a) in_a.at(r) = true;
  for (std::size_t r = 0; r < in_a.size(); ++r) {
    const NodeId g = topo.gpus()[r];
    if (in_a[r]) net.arc(source, g, unlimited);
    else net.arc(n + g, sink, unlimited);
  }
  return BytesPerSecond(static_cast<double>(net.max_flow(source, sink)) * kFlowUnit);
}

std::vector<std::vector<std::size_t>> candidate_splits(std::size_t gpus, std::size_t random_splits) {
  std::vector<std::size_t> ranks(gpus);
  std::iota(ranks.begin(), ranks.end(), std::size_t{0});
  std::vector<std::vector<std::size_t>> out;
  out.emplace_back(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(gpus / 2));
  std::vector<std::size_t> even;
  for (std::size_t r = 0; r < gpus; r += 2) even.push_back(r);
  even.resize(gpus / 2);
  out.push_back(even);
  std::mt19937_64 rng(20261129);
  for (std::size_t k = 0; k < random_splits; ++k) {
    std::shuffle(ranks.begin(), ranks.end(), rng);
    std::vector<std::size_t> side(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(gpus / 2));
    std::sort(side.begin(), side.end());
    out.push_back(side);
  }
  return out;
}

namespace {

BytesPerSecond least_injection(const Topology& topo) {
  BytesPerSecond least(std::numeric_limits<double>::infinity());
  for (NodeId g : topo.gpus()) {
    BytesPerSecond sum(0);
    for (LinkId l : topo.incident(g)) sum += topo.link(l).bandwidth;
    least = std::min(least, sum);
  }
  return least;
}

int diameter(const Topology& topo, const std::vector<std::size_t>& sources) {
  Router router(topo);
  int worst = 0;
  for (std::size_t s : sources)
    for (NodeId g : topo.gpus()) worst = std::max(worst, router.hops(topo.gpus()[s], g));
  return worst;
}

std::vector<std::size_t> all_ranks(std::size_t n) {
  std::vector<std::size_t> r(n);
  std::iota(r.begin(), r.end(), std::size_t{0});
  return r;
}

}  // namespace

TopologyProperties describe(const BuiltTopology& built) {
  const Topology& topo = built.topology;
  TopologyProperties p;
  p.gpus = topo.gpus().size();
  p.switches = topo.count(NodeKind::Switch) + topo.count(NodeKind::PcieSwitch);
  p.nics = topo.count(NodeKind::Nic);
  p.cpus = topo.count(NodeKind::Cpu);
  p.links = topo.links().size();
  const auto& sym = built.symmetry;
  p.diameter_hops = diameter(topo, sym.eccentricity_sources.empty() ? all_ranks(p.gpus) : sym.eccentricity_sources);
  p.injection_per_gpu = least_injection(topo);
  auto cuts = sym.cut_candidates;
  p.bisection_exact = sym.exact && !cuts.empty();
  if (!p.bisection_exact)
    for (auto& side : candidate_splits(p.gpus)) cuts.push_back(std::move(side));
  p.bisection_candidates = cuts.size();
  p.bisection = BytesPerSecond(std::numeric_limits<double>::infinity());
  if (p.gpus < 2) p.bisection = BytesPerSecond(0);
  for (const auto& side : cuts)
    if (p.gpus >= 2) p.bisection = std::min(p.bisection, min_cut(topo, side));
  return p;
}

}  // namespace dtsim::topology
