// `dtsim topo` and the topology comparison: properties as a table or as DESIGN.md's `topo` JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "topology/cluster.hpp"
#include "topology/properties.hpp"

namespace dtsim::results {

struct TopologyRow {
  std::string name;
  const topology::ClusterSpec* cluster;
  topology::TopologyProperties properties;
};

// "32x8 nvswitch (nvlink3) + fat-tree (ib-hdr)"
std::string cluster_layout(const topology::ClusterSpec& c);

nlohmann::json topology_json(const TopologyRow& row);
// One block per topology (`dtsim topo`).
std::string topology_table(const TopologyRow& row);
// One line per topology, side by side (`dtsim run` before the engine lands).
std::string topology_comparison(const std::vector<TopologyRow>& rows);

}  // namespace dtsim::results
