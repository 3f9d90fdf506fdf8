#include "sim/simgrid_isolation.hpp"

#include <algorithm>

namespace dtsim::sim::flow {

std::set<GroupInstance> isolated_instances(const Traffic& traffic, RouteResources& resources) {
  {   // routes by source, so that the router builds each source's tree once
    std::set<RouteNeeds::Pair> pairs;
    for (const auto& [ranks, pair] : traffic.sends) pairs.insert(pair);
    for (const auto& [instance, data] : traffic.instances) pairs.insert(data.pairs.begin(), data.pairs.end());
    for (const auto& pair : pairs)
      if (pair.first != pair.second) resources(pair);
  }
  constexpr int kShared = -1, kSends = -2;
  std::unordered_map<Resource, int> owner;   // resource -> its only user, or kShared
  auto use = [&](Resource resource, int user) {
    auto [it, added] = owner.emplace(resource, user);
    if (!added && it->second != user) it->second = kShared;
  };
  for (const auto& [ranks, pair] : traffic.sends)
    if (pair.first != pair.second)
      for (Resource r : resources(pair)) use(r, kSends);
  std::vector<std::pair<GroupInstance, std::vector<Resource>>> used;
  for (const auto& [instance, data] : traffic.instances) {
    const int id = static_cast<int>(used.size());
    auto& mine = used.emplace_back(instance, std::vector<Resource>{}).second;
    for (const auto& pair : data.pairs)
      for (Resource r : resources(pair)) {
        use(r, id);
        mine.push_back(r);
      }
  }
  std::set<GroupInstance> isolated;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const auto& mine = used[i].second;
    if (std::all_of(mine.begin(), mine.end(), [&](Resource r) { return owner.at(r) == static_cast<int>(i); }))
      isolated.insert(used[i].first);
  }
  return isolated;
}

}  // namespace dtsim::sim::flow
