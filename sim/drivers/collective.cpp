#include "sim/drivers/collective.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <sstream>

#include "sim/analytic/analytic_costs.hpp"
#include "sim/process.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "topology/builders.hpp"

namespace dtsim::drivers {
namespace {

using workloads::CollectiveKind;

std::string serialize(const std::vector<Seconds>& times) {
  std::string out;
  for (auto t : times) out += fmt::format("{:.17g}\n", t.value());
  return out;
}

std::vector<Seconds> deserialize(const std::string& text) {
  std::vector<Seconds> out;
  std::istringstream in(text);
  for (double v; in >> v;) out.emplace_back(v);
  return out;
}

}  // namespace

std::vector<CollectiveTiming> collective_times(const topology::ClusterSpec& cluster, CollectiveKind kind,
                                               sim::Algorithm algorithm, const std::vector<Bytes>& points,
                                               int max_channels, int root) {
  const auto built = topology::build_cluster(cluster);
  const bool nvls = cluster.intra == topology::IntraKind::NvSwitch && cluster.intra_link.switch_reduction;
  std::vector<int> ranks(static_cast<std::size_t>(cluster.gpus()));
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
  // A broadcast chains (or trees) out of its group's first rank: the group listed from the root.
  if (kind == CollectiveKind::Broadcast && root > 0 && root < static_cast<int>(ranks.size()))
    std::rotate(ranks.begin(), ranks.begin() + root, ranks.end());
  const auto layout = sim::group_layout(ranks, built.topology, nvls);
  const sim::CollectiveTuning tuning = sim::collective_tuning(max_channels);
  std::vector<CollectiveTiming> out;
  for (const auto& s : points) {   // lowering first: an algorithm that cannot run here fails before any simulation
    const sim::Lowered l = sim::lower_periodic(kind, s, layout, algorithm, sim::Protocol::Auto, tuning);
    out.push_back({Seconds(0), std::string(sim::to_string(l.algorithm)), std::string(sim::to_string(l.protocol))});
  }
  const auto times = deserialize(sim::run_isolated(
      [&] { return serialize(sim::time_collectives(kind, points, ranks, built.topology, layout, algorithm,
                                                       cluster.effective_routing(), true, max_channels)); }));
  for (std::size_t i = 0; i < out.size(); ++i) out[i].time = times.at(i);
  return out;
}

}  // namespace dtsim::drivers
