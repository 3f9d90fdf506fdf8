#include "sim/simgrid/simgrid_symmetry.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <variant>

#include <fmt/format.h>

namespace dtsim::sim::flow {
namespace {

using Pair = RouteNeeds::Pair;
using topology::NodeId;
using workloads::Axis;
using workloads::Group;

constexpr std::size_t kTp = static_cast<std::size_t>(Group::Tp);

class Refused {
 public:
  explicit Refused(std::string why) : why_(std::move(why)) {}
  [[nodiscard]] const std::string& why() const { return why_; }

 private:
  std::string why_;
};

// sigma_k on ranks and on the node pairs between their GPUs.
class Shift {
 public:
  Shift(const workloads::StepGraph& g, const topology::Topology& topo)
      : placement_(g.placement), topo_(topo), tp_(g.placement.size(Axis::Tp)), rank_of_(topo.nodes().size(), -1) {
    for (int r = 0; r < placement_.ranks(); ++r) rank_of_.at(gpu(r)) = r;
  }
  [[nodiscard]] int tp() const { return tp_; }
  [[nodiscard]] int operator()(int rank, int k) const {
    workloads::RankCoord c = placement_.coord(rank);
    c.tp = (c.tp + k) % tp_;
    return placement_.rank(c);
  }
  [[nodiscard]] bool first(int rank) const { return placement_.coord(rank).tp == 0; }
  [[nodiscard]] NodeId gpu(int rank) const { return topo_.gpus().at(static_cast<std::size_t>(rank)); }
  // The image of a pair between two ranks' GPUs; nullopt when an end is not a rank's GPU (a switch).
  [[nodiscard]] std::optional<Pair> operator()(const Pair& p, int k) const {
    const int a = rank_of_.at(p.first), b = rank_of_.at(p.second);
    if (a < 0 || b < 0) return std::nullopt;
    return Pair{gpu((*this)(a, k)), gpu((*this)(b, k))};
  }

 private:
  const workloads::Placement& placement_;
  const topology::Topology& topo_;
  int tp_;
  std::vector<int> rank_of_;   // by node: the rank on that GPU, or -1
};

std::string group_name(std::size_t group) {
  switch (static_cast<Group>(group)) {
    case Group::Tp: return "tp";
    case Group::Dp: return "dp";
    case Group::Embedding: return "embedding";
    case Group::Ep: return "ep";
    case Group::ExpertTp: return "etp";
    case Group::ExpertDp: return "edp";
    case Group::EpNode: return "ep-node";
    case Group::EpRail: return "ep-rail";
    case Group::Cp: return "cp";
    case Group::Shard: return "shard";
    case Group::Replica: return "replica";
  }
  return "?";
}

// (2): the images of the played ranks' group instances and sends; returns the played ranks' pairs.
std::set<Pair> played_pairs(const Traffic& traffic, const Shift& shift) {
  std::set<Pair> played;
  for (const auto& [instance, data] : traffic.instances) {
    if (instance.first == kTp || !shift.first(instance.second)) continue;
    for (int k = 1; k < shift.tp(); ++k) {
      auto it = traffic.instances.find(GroupInstance{instance.first, shift(instance.second, k)});
      std::vector<int> members;
      for (int r : data.members) members.push_back(shift(r, k));
      if (it == traffic.instances.end() || it->second.members != members || it->second.plans != data.plans)
        throw Refused(fmt::format("the {} group of rank {} and its image {} places along TP run different "
                                  "collectives",
                                  group_name(instance.first), instance.second, k));
    }
    for (const Pair& p : data.pairs) {
      if (!shift(p, 1)) throw Refused(fmt::format("a {} collective reduces in a switch", group_name(instance.first)));
      played.insert(p);
    }
  }
  for (const auto& [ranks, pair] : traffic.sends) {
    if (!shift.first(ranks.first)) continue;
    for (int k = 1; k < shift.tp(); ++k) {
      auto it = traffic.sends.find({shift(ranks.first, k), shift(ranks.second, k)});
      if (it == traffic.sends.end())
        throw Refused(fmt::format("rank {}'s pipeline send has no image {} places along TP", ranks.first, k));
    }
    if (pair.first != pair.second) played.insert(pair);
  }
  return played;
}

// (3): for each k one resource map pi_k, with route(sigma_{j+k} p) = pi_k(route(sigma_j p)) for every played
// pair p and every j, keeping what each resource offers.
void check_routes(const std::set<Pair>& played, const Shift& shift, RouteResources& resources) {
  const auto tp = static_cast<std::size_t>(shift.tp());
  std::vector<std::unordered_map<Resource, Resource>> pi(tp), inverse(tp);
  std::vector<std::vector<Resource>> routes(tp);
  for (const Pair& p : played) {
    for (std::size_t j = 0; j < tp; ++j) routes[j] = resources(*shift(p, static_cast<int>(j)));
    for (std::size_t j = 0; j < tp; ++j)
      for (std::size_t k = 1; k < tp; ++k) {
        const auto& from = routes[j];
        const auto& to = routes[(j + k) % tp];
        if (from.size() != to.size())
          throw Refused(fmt::format("the routes from node {} to {} and of its images along TP differ in length",
                                    p.first, p.second));
        for (std::size_t i = 0; i < from.size(); ++i) {
          auto [a, fresh_a] = pi[k].emplace(from[i], to[i]);
          auto [b, fresh_b] = inverse[k].emplace(to[i], from[i]);
          if (a->second != to[i] || b->second != from[i] || (fresh_a && resources.offer(from[i]) != resources.offer(to[i])))
            throw Refused(fmt::format("the routes of the pair from node {} to {} and of its images along TP do not "
                                      "map onto each other link by link",
                                      p.first, p.second));
        }
      }
  }
}

// (4): per resource a played flow crosses, the flows crossing it in the full run are m images of each played
// flow that crosses it; returns the resources with m > 1.
std::unordered_map<Resource, double> check_shares(const std::set<Pair>& played, const Shift& shift,
                                                  RouteResources& resources) {
  std::unordered_map<Resource, std::map<Pair, int>> crossings;
  for (const Pair& p : played)
    for (int k = 0; k < shift.tp(); ++k)
      for (Resource r : resources(*shift(p, k))) ++crossings[r][p];
  std::unordered_map<Resource, double> shares;
  for (const Pair& p : played)
    for (Resource r : resources(p)) {
      const auto& by_pair = crossings.at(r);
      const int m = by_pair.begin()->second;
      for (const auto& [q, n] : by_pair) {
        const auto& route = resources(q);
        if (n != m || std::find(route.begin(), route.end(), r) == route.end())
          throw Refused(fmt::format("resource {} is shared unevenly by the images along TP of the flows that cross "
                                    "it",
                                    r));
      }
      if (m > 1) shares[r] = m;
    }
  return shares;
}

// Lanes: every send and every collective but a TP one starts at the same time on every lane. A pipeline
// receive, a send or such a collective ends at a time of its lane ("lane-timed"); so does what follows it, until
// a TP collective, which waits for every lane. An op's start is the latest end among its predecessors (its deps,
// and for a compute or host op its stream's previous op); a lane-timed predecessor that is an ancestor of a TP
// collective among them ends before that collective starts, on every lane, and does not decide the start.
class LaneCheck {
 public:
  explicit LaneCheck(const workloads::RankClass& cls) : cls_(cls), timed_(cls.ops.size(), 0), stream_pred_(cls.ops.size(), -1) {
    std::int64_t previous = -1, previous_host = -1;
    for (std::size_t i = 0; i < cls.ops.size(); ++i) {
      if (std::holds_alternative<workloads::ComputeOp>(cls.ops[i].body)) {
        stream_pred_[i] = previous;
        previous = static_cast<std::int64_t>(i);
      }
      if (std::holds_alternative<workloads::HostOp>(cls.ops[i].body)) {   // the host thread: a stream of its own
        stream_pred_[i] = previous_host;
        previous_host = static_cast<std::int64_t>(i);
      }
    }
  }

  void run() {
    for (std::size_t i = 0; i < cls_.ops.size(); ++i) {
      const workloads::Op& op = cls_.ops[i];
      std::vector<std::uint32_t> preds(op.deps.begin(), op.deps.end());
      if (stream_pred_[i] >= 0) preds.push_back(static_cast<std::uint32_t>(stream_pred_[i]));
      bool start = false;
      for (std::uint32_t p : preds)
        if (timed_[p] != 0 && !covered(p, preds)) start = true;
      if (std::holds_alternative<workloads::ComputeOp>(op.body) || std::holds_alternative<workloads::HostOp>(op.body)) {
        timed_[i] = start;
        continue;
      }
      if (const auto* c = std::get_if<workloads::CollectiveOp>(&op.body); c != nullptr && c->group == Group::Tp) {
        sync_.insert(static_cast<std::uint32_t>(i));
        continue;
      }
      if (start && !std::holds_alternative<workloads::RecvOp>(op.body))
        throw Refused(fmt::format("the routes of the images along TP do not map, and stage {}'s op {} (a send or "
                                  "collective) may start at different times on the images: it follows a transfer "
                                  "with no TP collective between them",
                                  cls_.stage, i));
      timed_[i] = 1;
    }
  }

 private:
  // Whether `p` is an ancestor of a TP collective among `preds` (a bounded search back from it; not found within
  // the bound counts as not covered, which can only refuse).
  bool covered(std::uint32_t p, const std::vector<std::uint32_t>& preds) const {
    for (std::uint32_t s : preds) {
      if (s <= p || !sync_.count(s)) continue;
      std::vector<std::uint32_t> stack{s};
      std::set<std::uint32_t> seen;
      while (!stack.empty() && seen.size() < kSearch) {
        const std::uint32_t v = stack.back();
        stack.pop_back();
        if (!seen.insert(v).second) continue;
        const auto visit = [&](std::uint32_t u) {
          if (u == p) return true;
          if (u > p) stack.push_back(u);
          return false;
        };
        for (std::uint32_t d : cls_.ops[v].deps)
          if (visit(d)) return true;
        if (stream_pred_[v] >= 0 && visit(static_cast<std::uint32_t>(stream_pred_[v]))) return true;
      }
    }
    return false;
  }

  static constexpr std::size_t kSearch = 256;
  const workloads::RankClass& cls_;
  std::vector<char> timed_;                 // per op: its end may differ between lanes
  std::vector<std::int64_t> stream_pred_;   // per compute or host op: its stream's previous op, or -1
  std::set<std::uint32_t> sync_;            // TP collectives
};

void check_lanes(const workloads::StepGraph& g) {
  for (const auto& cls : g.classes) LaneCheck(cls).run();
}

}  // namespace

Symmetry find_symmetry(const workloads::StepGraph& g, const topology::Topology& topo, const Traffic& traffic,
                       const std::set<GroupInstance>& isolated, RouteResources& resources) {
  Symmetry s;
  try {
    const Shift shift(g, topo);
    if (shift.tp() < 2) throw Refused("tp is 1: there is no TP group to fold");
    std::vector<std::size_t> class_of(static_cast<std::size_t>(g.placement.ranks()));
    for (std::size_t c = 0; c < g.classes.size(); ++c)
      for (int r : g.classes[c].ranks) class_of.at(static_cast<std::size_t>(r)) = c;
    for (int r = 0; r < g.placement.ranks(); ++r)
      if (class_of[static_cast<std::size_t>(shift(r, 1))] != class_of[static_cast<std::size_t>(r)])
        throw Refused(fmt::format("ranks {} and {} of one TP group run different op lists", r, shift(r, 1)));
    for (const auto& [instance, data] : traffic.instances)
      if (instance.first == kTp && isolated.count(instance) == 0)
        throw Refused(fmt::format("the TP group of rank {} shares a link with other traffic", instance.second));
    const std::set<Pair> played = played_pairs(traffic, shift);
    try {
      check_routes(played, shift, resources);
      s.shares = check_shares(played, shift, resources);
    } catch (const Refused& r) {
      check_lanes(g);
      s.shares.clear();
      s.lanes = r.why();
    }
    s.images.resize(static_cast<std::size_t>(g.placement.ranks()));
    for (int r = 0; r < g.placement.ranks(); ++r) {
      workloads::RankCoord c = g.placement.coord(r);
      const bool first = c.tp == 0;
      c.tp = 0;
      s.representative.push_back(g.placement.rank(c));
      if (first)
        for (int k = 1; k < shift.tp(); ++k) s.images[static_cast<std::size_t>(r)].push_back(shift(r, k));
    }
  } catch (const Refused& r) {
    s = Symmetry{};
    s.refused = r.why();
  }
  return s;
}

void add_images(std::vector<TransferRecord>& transfers, const Symmetry& symmetry, const topology::Topology& topo) {
  std::vector<int> rank_of(topo.nodes().size(), -1);
  for (std::size_t r = 0; r < symmetry.representative.size(); ++r) rank_of.at(topo.gpus().at(r)) = static_cast<int>(r);
  const auto played = [&](NodeId n) {
    const int r = rank_of.at(n);
    return r >= 0 && symmetry.representative[static_cast<std::size_t>(r)] == r;
  };
  const std::size_t recorded = transfers.size();
  for (std::size_t i = 0; i < recorded; ++i) {
    const TransferRecord t = transfers[i];
    if (!played(t.src) || !played(t.dst)) continue;   // a TP collective's: recorded whole already
    const auto& src = symmetry.images[static_cast<std::size_t>(rank_of[t.src])];
    const auto& dst = symmetry.images[static_cast<std::size_t>(rank_of[t.dst])];
    for (std::size_t k = 0; k < src.size(); ++k)
      transfers.push_back(TransferRecord{topo.gpus().at(static_cast<std::size_t>(src[k])),
                                         topo.gpus().at(static_cast<std::size_t>(dst[k])), t.bytes, t.start, t.end});
  }
}

}  // namespace dtsim::sim::flow
