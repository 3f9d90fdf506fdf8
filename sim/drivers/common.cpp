#include "sim/drivers/common.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <string>

#include "sim/analytic/analytic_costs.hpp"
#include "topology/user_graph.hpp"

namespace dtsim::drivers {

int cluster_gpus(const scenario::Scenario& s) {
  if (!s.cluster.graph) return s.cluster.gpus();
  return located(s, [&] { return static_cast<int>(topology::read_user_graph(*s.cluster.graph).gpus().size()); });
}

sim::CommCosts scenario_costs(const scenario::Scenario& s, const topology::Topology& topo) {
  const auto reduces = [](const topology::ClusterSpec& c) {
    return c.intra == topology::IntraKind::NvSwitch && c.intra_link.switch_reduction;
  };
  const bool nvls = s.cluster.groups.empty() ? reduces(s.cluster) : std::ranges::all_of(s.cluster.groups, reduces);
  return sim::analytic_costs(topo, s.simulation.collective_algo, nvls, s.cluster.effective_routing(), s.simulation.max_channels);
}

void check_count(std::string_view key, int value, int least) {
  if (value < least)
    throw InputError(std::string(key), std::to_string(value), "out of range", fmt::format("an integer >= {}", least));
}

}  // namespace dtsim::drivers
