#include "sim/analytic/analytic_costs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "topology/error.hpp"

namespace dtsim::sim {
namespace {

using topology::NodeId;
using topology::Topology;

// What a lone transfer gets on a route given as layers (Router::route_layers): the narrowest layer (a layer's
// links together, at line rate x efficiency), and no more than the capacity of a device it crosses (the star's
// hub); its latency, the slowest link of each layer.
PairPaths::Path layered_path(const std::vector<std::vector<topology::Hop>>& layers, const Topology& topo) {
  PairPaths::Path p{Seconds(0), BytesPerSecond(1e300)};
  if (!layers.empty() && !layers.front().empty()) p.first = layers.front().front().link;
  if (!layers.empty() && !layers.back().empty()) p.last = layers.back().front().link;
  for (const auto& layer : layers) {
    BytesPerSecond width(0);
    Seconds latency(0);
    for (const auto& hop : layer) {
      const auto& link = topo.link(hop.link);
      width += link.bandwidth * link.efficiency;
      latency = std::max(latency, link.latency);
      for (NodeId n : {link.a, link.b})
        if (const auto& cap = topo.node(n).capacity) p.rate = std::min(p.rate, *cap);
    }
    p.rate = std::min(p.rate, width);
    p.latency += latency;
  }
  return p;
}

// The switch of `machine` that its GPUs hang off (NVLS endpoints).
NodeId machine_switch(const Topology& topo, NodeId gpu) {
  for (auto l : topo.incident(gpu)) {
    const NodeId other = topo.other_end(l, gpu);
    if (topo.node(other).kind == topology::NodeKind::Switch) return other;
  }
  throw InputError("simulation.collective_algo", "nvls", "needs GPUs attached to an NVSwitch:", "another algorithm");
}

NodeId endpoint(int e, int machine_hint, const std::vector<NodeId>& gpus, const Topology& topo,
                const std::vector<int>& machine_first) {
  if (e != kSwitch) return gpus[static_cast<std::size_t>(e)];
  return machine_switch(topo, gpus[static_cast<std::size_t>(machine_first.at(static_cast<std::size_t>(machine_hint)))]);
}

// The advance d of every endpoint from the previous step's end to this step's, when it is the same for all (to a
// relative 1e-12) and the same endpoints took part in both; nullopt otherwise.
std::optional<Seconds> uniform_advance(const std::vector<std::size_t>& touched, const std::vector<std::size_t>& before,
                                       const std::vector<Seconds>& now, const std::vector<Seconds>& then) {
  if (touched.size() != before.size() || touched.empty()) return std::nullopt;
  const Seconds d = now[touched.front()] - then[touched.front()];
  for (std::size_t e : touched) {
    if (then[e] < Seconds(0)) return std::nullopt;
    const Seconds here = now[e] - then[e];
    if (std::abs((here - d).value()) > 1e-12 * now[e].value()) return std::nullopt;
  }
  return d;
}

}  // namespace

BytesPerSecond nvls_port_rate(NodeId gpu, const Topology& topology) {
  for (const topology::LinkId l : topology.incident(gpu)) {
    if (topology.node(topology.other_end(l, gpu)).kind != topology::NodeKind::Switch) continue;
    if (topology.link(l).switch_reduction) return topology.link(l).switch_port_rate;
  }
  return BytesPerSecond(0);
}

std::pair<BytesPerSecond, Seconds> nvls_switch_path(NodeId gpu, const Topology& topology) {
  BytesPerSecond rate(0);
  Seconds latency(0);
  for (const topology::LinkId l : topology.incident(gpu)) {
    const auto& link = topology.link(l);
    if (topology.node(topology.other_end(l, gpu)).kind != topology::NodeKind::Switch || !link.switch_reduction) continue;
    rate += link.bandwidth * link.efficiency;
    latency = std::max(latency, link.latency);
  }
  return {rate, 2.0 * latency};
}


bool fully_linked(const std::vector<NodeId>& gpus, const Topology& topology) {
  if (gpus.size() < 3) return false;   // two GPUs: ring and direct are the same
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::vector<NodeId> peers;
    for (auto l : topology.incident(gpus[i])) peers.push_back(topology.other_end(l, gpus[i]));
    for (std::size_t j = i + 1; j < gpus.size(); ++j)
      if (std::find(peers.begin(), peers.end(), gpus[j]) == peers.end()) return false;
  }
  return true;
}

std::vector<int> walk_order(const std::vector<NodeId>& gpus, const Topology& topology, topology::RingOrders& rings) {
  std::map<int, std::vector<std::size_t>> places;   // per machine, the group positions of its GPUs
  for (std::size_t i = 0; i < gpus.size(); ++i) places[topology.node(gpus[i]).machine].push_back(i);
  std::vector<int> order(gpus.size());
  bool moved = false;
  for (const auto& [machine, at] : places) {
    std::vector<NodeId> local;
    for (std::size_t i : at) local.push_back(gpus[i]);
    const std::vector<std::size_t>& ring = rings.order(local);
    for (std::size_t k = 0; k < at.size(); ++k) {
      order[at[k]] = static_cast<int>(at[ring[k]]);
      moved = moved || ring[k] != k;
    }
  }
  if (!moved) return {};
  return order;
}

GroupLayout group_layout(const std::vector<int>& group, const Topology& topology, bool nvls, topology::RingOrders* rings) {
  GroupLayout layout;
  layout.nvls = nvls;
  if (nvls && !group.empty()) {
    const NodeId gpu = topology.gpus()[static_cast<std::size_t>(group.front())];
    layout.nvls_rate = nvls_port_rate(gpu, topology);
    std::tie(layout.switch_path_rate, layout.switch_path_latency) = nvls_switch_path(gpu, topology);
  }
  for (int r : group) layout.machine.push_back(topology.node(topology.gpus()[static_cast<std::size_t>(r)]).machine);
  std::vector<NodeId> gpus;
  for (int r : group) gpus.push_back(topology.gpus()[static_cast<std::size_t>(r)]);
  layout.direct_links = fully_linked(gpus, topology);
  std::optional<topology::RingOrders> own;
  if (rings == nullptr) rings = &own.emplace(topology);
  layout.order = walk_order(gpus, topology, *rings);
  return layout;
}

// The step rule: a transfer of step k from endpoint e starts when every transfer of step k-1 into or out of e
// has ended, plus the step latency; step 0 starts after the collective's latency.
PairPaths::PairPaths(const Topology& topology, topology::Routing routing) : topology_(topology), router_(topology, routing) {}

const PairPaths::Path& PairPaths::path(NodeId src, NodeId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  if (auto it = paths_.find(key); it != paths_.end()) return it->second;
  return paths_.emplace(key, layered_path(router_.route_layers(src, dst), topology_)).first->second;
}

Seconds lowered_time(const Lowered& lowered, const std::vector<NodeId>& gpus, const Topology& topology,
                     PairPaths& paths, int repeats) {
  if (lowered.transfers.empty()) return Seconds(0);
  // The first group rank on each machine, to find that machine's switch.
  std::vector<int> machine_first;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto m = static_cast<std::size_t>(topology.node(gpus[i]).machine);
    if (machine_first.size() <= m) machine_first.resize(m + 1, -1);
    if (machine_first[m] < 0) machine_first[m] = static_cast<int>(i);
  }
  DTSIM_ASSERT(repeats == 1 || lowered.transfers.back().step == 0, "only a single step is repeated");
  // Per endpoint, dense: a group rank, or after them a machine's switch; the end of its transfers in the previous
  // and in this step (negative: none).
  const std::size_t ranks = gpus.size();
  const auto slot = [ranks](const Transfer& t, int e) {
    return e != kSwitch ? static_cast<std::size_t>(e) : ranks + static_cast<std::size_t>(t.machine);
  };
  std::vector<Seconds> previous_step_end(ranks + machine_first.size(), Seconds(-1));
  std::vector<Seconds> this_step_end = previous_step_end;
  std::vector<std::size_t> touched, previous_touched;   // the slots each has set
  // Within a step, until when each (endpoint, link) is busy sending (the link it leaves by) or receiving.
  std::map<std::pair<std::size_t, topology::LinkId>, Seconds> sending, receiving;
  const auto next_step = [&] {   // this step becomes the previous one; the one before is forgotten
    for (std::size_t e : previous_touched) previous_step_end[e] = Seconds(-1);
    std::swap(previous_step_end, this_step_end);
    std::swap(previous_touched, touched);
    touched.clear();
    sending.clear();
    receiving.clear();
  };
  int step = 0;
  Seconds end = lowered.latency;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    for (const Transfer& t : lowered.transfers) {
      if (t.step + repeat != step) {
        next_step();
        step = t.step + repeat;
      }
      const NodeId src = endpoint(t.src, t.machine, gpus, topology, machine_first);
      const NodeId dst = endpoint(t.dst, t.machine, gpus, topology, machine_first);
      const std::size_t a = slot(t, t.src), b = slot(t, t.dst);
      Seconds start = previous_step_end[a] >= Seconds(0) ? previous_step_end[a] : lowered.latency;
      start += lowered.step_latency;
      const auto& path = paths.path(src, dst);
      BytesPerSecond rate = path.rate;
      if (t.rate) rate = std::min(rate, *t.rate);
      Seconds& sent = sending.try_emplace({a, path.first}, start).first->second;
      Seconds& received = receiving.try_emplace({b, path.last}, start).first->second;
      sent = std::max(start, sent) + t.bytes / rate;
      received = std::max(start, received) + t.bytes / rate;
      const Seconds finish = std::max(sent, received) + path.latency;
      for (std::size_t e : {a, b}) {
        if (this_step_end[e] < Seconds(0)) touched.push_back(e);
        this_step_end[e] = std::max(this_step_end[e], finish);
      }
      end = std::max(end, finish);
    }
    // The step rule maps one step's ends to the next's by max and + alone, so it commutes with adding a constant
    // to every end: once a step advances every endpoint by the same d, each later step does too.
    if (repeat + 1 < repeats && repeat > 0)
      if (const auto d = uniform_advance(touched, previous_touched, this_step_end, previous_step_end))
        return end + *d * static_cast<double>(repeats - 1 - repeat);
  }
  return end;
}

CommCosts analytic_costs(const Topology& topology, Algorithm algorithm, bool nvls, topology::Routing routing, int max_channels) {
  auto paths = std::make_shared<PairPaths>(topology, routing);
  auto rings = std::make_shared<topology::RingOrders>(topology);
  const auto gpus_of = [&topology](const std::vector<int>& group) {
    std::vector<NodeId> out;
    for (int r : group) out.push_back(topology.gpus()[static_cast<std::size_t>(r)]);
    return out;
  };
  CommCosts costs;
  // A step repeats the same collective on the same group (each layer, each micro-batch): each is timed once.
  using Key = std::tuple<int, double, std::vector<int>>;
  auto timed = std::make_shared<std::map<Key, Seconds>>();
  costs.collective = [&topology, paths, rings, timed, algorithm, nvls, gpus_of, tuning = collective_tuning(max_channels)](
                         const workloads::CollectiveOp& op, const std::vector<int>& group) {
    auto [it, added] = timed->try_emplace(Key{static_cast<int>(op.kind), op.bytes.value(), group}, Seconds(0));
    if (!added) return it->second;
    const auto lowered = lower_periodic(op.kind, op.bytes, group_layout(group, topology, nvls, rings.get()), algorithm,
                                        Protocol::Auto, tuning);
    it->second = lowered_time(lowered, gpus_of(group), topology, *paths, lowered.periodic ? lowered.steps : 1);
    return it->second;
  };
  costs.transfer = [&topology, paths](const workloads::SendOp& op, int from, int to) {
    const auto& path = paths->path(topology.gpus()[static_cast<std::size_t>(from)], topology.gpus()[static_cast<std::size_t>(to)]);
    return path.latency + op.bytes / path.rate;
  };
  return costs;
}

}  // namespace dtsim::sim
