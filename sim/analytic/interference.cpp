#include "sim/analytic/interference.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/collectives/collective.hpp"
#include "topology/error.hpp"
#include "topology/routing.hpp"

namespace dtsim::sim {
namespace {

using workloads::CollectiveKind;
using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::Group;
using workloads::SendOp;
using workloads::StepGraph;

constexpr double kChannelRate = 20e9;     // B/s per NCCL channel over NVLink (src/graph/topo.h, SM80_NVLINK_BW 20)
constexpr int kMostIntraBlocks = 24;      // NCCL's collective channels on 8-GPU A100 and H100 NVSwitch boards
constexpr int kNvlsBlocks = 16;           // NVLS_NCHANNELS_SM90 (src/transport/nvls.cc)
constexpr int kBlocksPerNicRing = 2;      // NCCL's ring channels doubled (ncclTopoDupChannels): 2 SMs per NIC
constexpr int kMostChannels = 32;         // MAXCHANNELS (src/include/device.h): a rack-scale NVLink domain's 72 NICs
                                          // give NCCL no more channels than that
constexpr int kSendBlocks = 2;            // a point-to-point send: NCCL's p2p channels per peer
constexpr int kTeRingExchangeBlocks = 1;  // Transformer Engine userbuffers: num_sm 1 for ring_exchange,
constexpr int kTeOtherBlocks = 16;        // 16 for the pipelined and bulk overlaps (module/base.py)
constexpr double kHbmPerWireByte = 3.0;   // HBM bytes an NCCL kernel moves per byte it sends (NVIDIA/nccl #1428)
constexpr double kMostShare = 0.9;        // a share of SMs or HBM an overlapping transfer is held to

// The narrowest hop, at line rate x efficiency, on the route between two GPUs.
double route_rate(topology::Router& router, const topology::Topology& topo, topology::NodeId a, topology::NodeId b) {
  double rate = INFINITY;
  for (const auto& h : router.route(a, b).hops) {
    const auto& l = topo.link(h.link);
    rate = std::min(rate, l.bandwidth.value() * l.efficiency);
  }
  return rate;
}

int nics_of(const topology::Topology& topo, int machine) {
  int n = 0;
  for (const topology::Node& node : topo.nodes()) n += node.kind == topology::NodeKind::Nic && node.machine == machine;
  return n;
}

struct Overlapping {   // one communication op as it loads the GPU
  Seconds start, end;
  double sm_share = 0;    // C / N
  double hbm_share = 0;   // its HBM traffic over the GPU's bandwidth
};

// The factor (minus one) a compute op of streaming share m runs slower by beside `c`.
double slowdown(const Overlapping& c, double m) {
  const double sm = std::min(c.sm_share, kMostShare), hbm = std::min(c.hbm_share, kMostShare);
  const double by_sm = sm / (1.0 - sm), by_hbm = hbm / (1.0 - hbm);
  return (1.0 - m) * by_sm + m * std::max(by_sm, by_hbm);
}

class Loads {
 public:
  Loads(const StepGraph& g, const topology::Topology& topo, const topology::GpuSpec& gpu)
      : g_(g), topo_(topo), gpu_(gpu), router_(topo) {}

  // What op `i` of class `c` (at `t`) takes from the GPU, or nullopt for a compute op or a receive.
  std::optional<Overlapping> of(std::size_t c, std::size_t i, const OpTime& t) {
    const auto& body = g_.classes[c].ops[i].body;
    const Seconds duration = t.end - t.start;
    if (duration.value() <= 0) return std::nullopt;
    const int rank = g_.classes[c].ranks.front();
    double blocks = 0, wire = 0;
    if (const auto* coll = std::get_if<CollectiveOp>(&body)) {
      const auto [it, added] = groups_.try_emplace({c, static_cast<int>(coll->group), static_cast<int>(coll->kind)});
      if (added)
        it->second = {static_cast<int>(g_.group_ranks(rank, coll->group).size()),
                      collective_blocks(g_, rank, *coll, topo_, router_)};
      const auto [n, group_blocks] = it->second;
      if (n < 2) return std::nullopt;
      blocks = group_blocks;
      wire = coll->bytes.value() * bus_factor(coll->kind, n);
    } else if (const auto* send = std::get_if<SendOp>(&body)) {
      blocks = kSendBlocks;
      wire = send->bytes.value();
    } else {
      return std::nullopt;
    }
    return Overlapping{t.start, t.end, blocks / gpu_.sms,
                       kHbmPerWireByte * wire / duration.value() / gpu_.memory_bandwidth.value()};
  }

 private:
  const StepGraph& g_;
  const topology::Topology& topo_;
  const topology::GpuSpec& gpu_;
  topology::Router router_;
  std::map<std::tuple<std::size_t, int, int>, std::pair<int, int>> groups_;   // (class, group, kind): size, blocks
};

}  // namespace

int collective_blocks(const StepGraph& g, int rank, const CollectiveOp& op, const topology::Topology& topology,
                      topology::Router& router) {
  const auto& t = *g.workload.training;
  if (op.group == Group::Tp && t.tp_comm_overlap)
    return op.kind == CollectiveKind::AllGather ? kTeRingExchangeBlocks : kTeOtherBlocks;
  const std::vector<int> members = g.group_ranks(rank, op.group);
  std::map<int, int> per_machine;
  for (int r : members) ++per_machine[topology.node(topology.gpus().at(static_cast<std::size_t>(r))).machine];
  if (per_machine.size() > 1) {   // a ring per NIC the machine's ranks leave through (at most one per rank)
    int most = 0;
    for (const auto& [machine, k] : per_machine) most = std::max(most, std::min(k, nics_of(topology, machine)));
    return std::min(kBlocksPerNicRing * std::max(1, most), kMostChannels);
  }
  const topology::NodeId me = topology.gpus().at(static_cast<std::size_t>(rank));
  if (op.kind == CollectiveKind::AllReduce)
    for (auto l : topology.incident(me))
      if (topology.link(l).link_class == topology.link(topology.incident(me).front()).link_class &&
          topology.node(topology.other_end(l, me)).kind == topology::NodeKind::Switch) {
        if (topology.link(l).switch_reduction) return kNvlsBlocks;   // an NVSwitch that reduces (NVLS)
      }
  double rate = INFINITY;
  for (int r : members)
    if (r != rank) rate = std::min(rate, route_rate(router, topology, me, topology.gpus().at(static_cast<std::size_t>(r))));
  const int channels = std::max(1, static_cast<int>(std::lround(rate / kChannelRate)));
  return std::min(2 * channels, kMostIntraBlocks);
}

std::vector<std::vector<Seconds>> interference(const StepGraph& g, const Timeline& t, const topology::Topology& topology,
                                               const topology::GpuSpec& gpu) {
  std::vector<std::vector<Seconds>> out(g.classes.size());
  for (std::size_t c = 0; c < g.classes.size(); ++c) out[c].assign(g.classes[c].ops.size(), Seconds(0));
  if (gpu.sms <= 0) return out;
  Loads loads(g, topology, gpu);
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    const auto& ops = g.classes[c].ops;
    const auto& times = t.classes[c].ops;
    // Compute ops run one at a time in list order: their intervals ascend and do not overlap.
    std::vector<std::size_t> computes;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (const auto* comp = std::get_if<ComputeOp>(&ops[i].body); comp && comp->duration.value() > 0)
        computes.push_back(i);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto comm = loads.of(c, i, times[i]);
      if (!comm) continue;
      auto k = std::ranges::partition_point(computes, [&](std::size_t j) { return times[j].end <= comm->start; });
      for (; k != computes.end() && times[*k].start < comm->end; ++k) {
        const OpTime& op = times[*k];
        const Seconds overlap = std::min(op.end, comm->end) - std::max(op.start, comm->start);
        if (overlap.value() <= 0) continue;
        const auto& comp = std::get<ComputeOp>(ops[*k].body);
        out[c][*k] += overlap * slowdown(*comm, comp.memory_time / comp.duration);
      }
    }
  }
  return out;
}

Timeline with_interference(const StepGraph& g, Timeline t, const topology::Topology& topology,
                           const topology::GpuSpec& gpu) {
  const auto lost = interference(g, t, topology, gpu);
  bool any = false;
  for (const auto& c : lost) any = any || std::ranges::any_of(c, [](Seconds s) { return s.value() > 0; });
  if (!any) return t;
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    Seconds total(0);
    for (const Seconds l : lost[c]) total += l;
    t.classes[c].interference = total;
  }
  // Each op keeps the duration the engine played (compute ops their own, lengthened by what they lost). A
  // collective keeps what it added to its communicator's busy time: from the later of its start and the end of
  // the group's previous collective (played as lanes, a rank's collectives on one group may overlap), so that
  // timed again without losses the step is the engine's.
  std::vector<std::vector<Seconds>> comm(g.classes.size());
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    const auto& ops = g.classes[c].ops;
    const auto& times = t.classes[c].ops;
    comm[c].assign(ops.size(), Seconds(0));
    std::map<int, Seconds> group_end;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (std::holds_alternative<ComputeOp>(ops[i].body)) continue;
      Seconds from = times[i].start;
      if (const auto* coll = std::get_if<CollectiveOp>(&ops[i].body)) {
        Seconds& previous = group_end[static_cast<int>(coll->group)];
        from = std::max(from, previous);
        previous = std::max(previous, times[i].end);
      }
      comm[c][i] = std::max(Seconds(0), times[i].end - from);
    }
  }
  const OpDuration duration = [&](std::size_t c, std::size_t i) {
    if (const auto* comp = std::get_if<ComputeOp>(&g.classes[c].ops[i].body)) return comp->duration + lost[c][i];
    return comm[c][i];
  };
  Timeline again = replay_analytic(g, duration);
  for (std::size_t c = 0; c < again.classes.size(); ++c) {
    t.classes[c].ops = std::move(again.classes[c].ops);
    t.classes[c].end = again.classes[c].end;
  }
  t.step_time = again.step_time;
  // Every played rank of a class takes the class's timeline again: its first played rank holds it, the others
  // name that rank.
  std::vector<int> holder(g.classes.size(), -1);
  for (RankTimeline& r : t.ranks) {
    if (r.same_as >= 0) continue;
    const auto c = static_cast<std::size_t>(&g.class_of(r.rank) - g.classes.data());
    if (holder[c] < 0) {
      holder[c] = r.rank;
      r.ops = t.classes[c].ops;
      continue;
    }
    r.ops.clear();
    r.ops.shrink_to_fit();
    r.same_as = holder[c];
  }
  for (RankTimeline& r : t.ranks)   // a rank that named one of those names its class's holder
    while (r.same_as >= 0 && t.ranks.at(static_cast<std::size_t>(r.same_as)).same_as >= 0)
      r.same_as = t.ranks[static_cast<std::size_t>(r.same_as)].same_as;
  return t;
}

}  // namespace dtsim::sim
