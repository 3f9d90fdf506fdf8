#include "sim/simgrid_isolation.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "topology/routing.hpp"

namespace dtsim::sim::flow {

using topology::NodeId;

// The group instances whose resources (directed links, switch capacities) no other instance and no send uses.
std::set<GroupInstance> isolated_instances(const Traffic& traffic, const topology::Topology& topo, bool ecmp) {
  topology::Router router(topo, ecmp);
  const std::uint64_t links = topo.links().size();
  // The resources a pair's route crosses, as Simulation builds it: each hop's link in its direction, and the
  // capacity of every node visited.
  auto resources = [&](const RouteNeeds::Pair& pair) {
    std::vector<std::uint64_t> out;
    NodeId at = pair.first;
    if (topo.node(at).capacity) out.push_back(2 * links + at);
    for (const topology::Hop& hop : router.route(pair.first, pair.second).hops) {
      out.push_back(2 * static_cast<std::uint64_t>(hop.link) + (hop.forward ? 1 : 0));
      at = topo.other_end(hop.link, at);
      if (topo.node(at).capacity) out.push_back(2 * links + at);
    }
    return out;
  };
  constexpr int kShared = -1, kSends = -2;
  std::unordered_map<std::uint64_t, int> owner;   // resource -> its only user, or kShared
  auto use = [&](std::uint64_t resource, int user) {
    auto [it, added] = owner.emplace(resource, user);
    if (!added && it->second != user) it->second = kShared;
  };
  for (const auto& pair : traffic.sends)
    for (std::uint64_t r : resources(pair)) use(r, kSends);
  std::vector<std::pair<GroupInstance, std::vector<std::uint64_t>>> used;
  for (const auto& [instance, pairs] : traffic.instances) {
    const int id = static_cast<int>(used.size());
    auto& mine = used.emplace_back(instance, std::vector<std::uint64_t>{}).second;
    for (const auto& pair : pairs)
      for (std::uint64_t r : resources(pair)) {
        use(r, id);
        mine.push_back(r);
      }
  }
  std::set<GroupInstance> isolated;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const auto& mine = used[i].second;
    if (std::all_of(mine.begin(), mine.end(), [&](std::uint64_t r) { return owner.at(r) == static_cast<int>(i); }))
      isolated.insert(used[i].first);
  }
  return isolated;
}

}  // namespace dtsim::sim::flow
