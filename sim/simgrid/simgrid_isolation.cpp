#include "sim/simgrid/simgrid_isolation.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace dtsim::sim::flow {

using topology::NodeId;
using workloads::CollectiveOp;
using workloads::Op;
using workloads::SendOp;
using workloads::StepGraph;

std::vector<int> members_of(const StepGraph& g, int rank, workloads::Group group) {
  std::vector<int> m = g.group_ranks(rank, group);
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  return m;
}

std::vector<NodeId> gpus_of(const topology::Topology& topo, const std::vector<int>& ranks) {
  std::vector<NodeId> gpus;
  gpus.reserve(ranks.size());
  for (int r : ranks) gpus.push_back(topo.gpus().at(static_cast<std::size_t>(r)));
  return gpus;
}

// The step's traffic over every rank: each group instance's members, plans and pairs; each send's pair.
Traffic collect_traffic(const StepGraph& g, const topology::Topology& topo, PlanCache& plans, const Sites& sites) {
  Traffic traffic;
  std::set<std::tuple<std::size_t, int, double, int>> seen;   // (group, kind, bytes, first member)
  for (const auto& c : g.classes) {
    std::set<std::tuple<std::size_t, int, double>> collectives;
    std::set<int> peers;
    for (const Op& op : c.ops) {
      if (const auto* coll = std::get_if<CollectiveOp>(&op.body))
        collectives.emplace(static_cast<std::size_t>(coll->group), static_cast<int>(coll->kind), coll->bytes.value());
      if (const auto* send = std::get_if<SendOp>(&op.body)) peers.insert(send->peer_stage);
    }
    for (int r : c.ranks) {
      for (const auto& [group, kind, bytes] : collectives) {
        std::vector<int> members = members_of(g, r, static_cast<workloads::Group>(group));
        if (!seen.emplace(group, kind, bytes, members.front()).second) continue;
        const std::vector<NodeId> gpus = gpus_of(topo, members);
        auto plan = plans.get(static_cast<workloads::CollectiveKind>(kind), Bytes(bytes), sites.layout(gpus));
        const std::vector<NodeId> nodes = sites.endpoint_nodes(*plan, gpus);
        auto& instance = traffic.instances[GroupInstance{group, members.front()}];
        if (instance.members.empty()) instance.members = std::move(members);
        instance.plans.insert(plan.get());
        for (const CollectivePlan::Ends& e : plan->ends)
          if (nodes[e.src] != nodes[e.dst]) instance.pairs.emplace(nodes[e.src], nodes[e.dst]);
      }
      for (int stage : peers) {
        const int peer = g.peer_rank(r, stage);
        traffic.sends.emplace(std::pair{r, peer}, RouteNeeds::Pair{topo.gpus().at(static_cast<std::size_t>(r)),
                                                                   topo.gpus().at(static_cast<std::size_t>(peer))});
      }
    }
  }
  return traffic;
}

// The pairs the played ranks send between (all ranks when `representative` is null): every transfer of the
// group instances they are in (but memoized ones), and their sends.
RouteNeeds route_needs(const Traffic& traffic, const topology::Topology& topo, const Sites& sites,
                       const std::vector<int>* representative, const std::set<GroupInstance>* timers) {
  const auto played = [representative](int r) {
    return representative == nullptr || (*representative)[static_cast<std::size_t>(r)] == r;
  };
  RouteNeeds needs;
  for (const auto& [instance, data] : traffic.instances) {
    if (std::none_of(data.members.begin(), data.members.end(), played)) continue;
    if (timers != nullptr && timers->count(instance) > 0) continue;
    const std::vector<NodeId> gpus = gpus_of(topo, data.members);
    for (const CollectivePlan* plan : data.plans) add_routes(needs, *plan, sites.endpoint_nodes(*plan, gpus));
  }
  for (const auto& [ranks, pair] : traffic.sends)
    if (played(ranks.first)) needs.add(pair.first, pair.second);
  return needs;
}


namespace {

// The least a route offers a flow alone: its narrowest resource.
double route_bottleneck(const std::vector<Resource>& route, const RouteResources& resources) {
  double rate = std::numeric_limits<double>::infinity();
  for (Resource r : route) rate = std::min(rate, resources.offer(r).first);
  return rate;
}

}  // namespace

// A resource's users: the instances (by index into `used`) and the sends crossing it, and a bound on the rate
// the traffic other than a TP instance's can take from it (each flow at most its route's narrowest resource).
std::set<GroupInstance> isolated_instances(const Traffic& traffic, RouteResources& resources) {
  {   // routes by source, so that the router builds each source's tree once
    std::set<RouteNeeds::Pair> pairs;
    for (const auto& [ranks, pair] : traffic.sends) pairs.insert(pair);
    for (const auto& [instance, data] : traffic.instances) pairs.insert(data.pairs.begin(), data.pairs.end());
    for (const auto& pair : pairs)
      if (pair.first != pair.second) resources(pair);
  }
  constexpr int kShared = -1, kSends = -2;
  std::unordered_map<Resource, int> owner;          // resource -> its only user, or kShared
  std::unordered_map<Resource, bool> tp_shared;     // resource -> crossed by two TP instances
  std::unordered_map<Resource, double> foreign;     // resource -> the rate non-TP flows can take from it
  std::unordered_map<Resource, int> tp_user;
  auto use = [&](Resource resource, int user) {
    auto [it, added] = owner.emplace(resource, user);
    if (!added && it->second != user) it->second = kShared;
  };
  // A non-TP flow's rate on average: what its route offers, and no more than the narrowest route of its
  // collective (a ring moves the same bytes over every hop in a step, at the pace of its slowest).
  const auto foreign_flow = [&](const RouteNeeds::Pair& pair, double pace) {
    const auto& route = resources(pair);
    const double rate = std::min(pace, route_bottleneck(route, resources));
    for (Resource r : route) foreign[r] += rate;
  };
  for (const auto& [ranks, pair] : traffic.sends)
    if (pair.first != pair.second) {
      for (Resource r : resources(pair)) use(r, kSends);
      foreign_flow(pair, std::numeric_limits<double>::infinity());
    }
  std::vector<std::pair<GroupInstance, std::vector<Resource>>> used;
  for (const auto& [instance, data] : traffic.instances) {
    const int id = static_cast<int>(used.size());
    const bool tp = instance.first == static_cast<std::size_t>(workloads::Group::Tp);
    auto& mine = used.emplace_back(instance, std::vector<Resource>{}).second;
    double pace = std::numeric_limits<double>::infinity();
    for (const auto& pair : data.pairs) {
      pace = std::min(pace, route_bottleneck(resources(pair), resources));
      for (Resource r : resources(pair)) {
        use(r, id);
        mine.push_back(r);
        if (!tp) continue;
        auto [it, added] = tp_user.emplace(r, id);
        if (!added && it->second != id) tp_shared[r] = true;
      }
    }
    if (!tp)
      for (const auto& pair : data.pairs) foreign_flow(pair, pace);
  }
  // Alone on its resources; or, for a TP instance, sharing them only with other groups' flows that are paced
  // elsewhere, at no more than kLightShare of what any shared resource offers.
  const auto alone = [&](std::size_t i) {
    return std::all_of(used[i].second.begin(), used[i].second.end(),
                       [&](Resource r) { return owner.at(r) == static_cast<int>(i); });
  };
  const auto lightly_shared = [&](std::size_t i) {
    if (used[i].first.first != static_cast<std::size_t>(workloads::Group::Tp)) return false;
    return std::all_of(used[i].second.begin(), used[i].second.end(), [&](Resource r) {
      if (tp_shared.count(r) > 0) return false;
      const auto f = foreign.find(r);
      return f == foreign.end() || f->second <= kLightShare * resources.offer(r).first;
    });
  };
  std::set<GroupInstance> isolated;
  for (std::size_t i = 0; i < used.size(); ++i)
    if (alone(i) || lightly_shared(i)) isolated.insert(used[i].first);
  return isolated;
}

}  // namespace dtsim::sim::flow
