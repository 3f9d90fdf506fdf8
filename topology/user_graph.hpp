// User-defined topologies, for layouts the builders do not know: a Graphviz DOT file or a YAML edge list.
//
// YAML edge list:
//   nodes:                                   # in rank order for GPUs
//     - {name: gpu0, kind: gpu}              # kind: gpu | switch | pcie-switch | cpu | nic
//     - {name: sw, kind: switch, capacity_GBps: 300}   # optional switching capacity per direction
//   links:
//     - {a: gpu0, b: sw, link: nvlink3, count: 12}     # catalog link class times count, or:
//     - {a: gpu1, b: sw, bandwidth_GBps: 300, latency_us: 0.7, efficiency: 0.8}   # or bandwidth_Gbps
//
// DOT: the same attributes on nodes and edges:
//   graph g { gpu0 [kind=gpu]; sw [kind=switch]; gpu0 -- sw [link=nvlink3, count=12]; }
//
// Every error (unknown kind or link class, non-positive bandwidth, a link to an undeclared node, a graph with no
// GPU, a graph whose GPUs are not all connected) throws InputError naming the file (and line where known).
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.hpp"

namespace dtsim::topology {

// Reads `path`; the format follows the extension: .dot or .gv for DOT, .yaml or .yml for the edge list.
// `key` is the scenario key that named the file (for the error message).
Topology read_user_graph(const std::string& path, std::string_view key = "cluster.graph");

// Parse from text; `origin` names the source in error messages (a file path).
Topology parse_dot_graph(std::string_view text, std::string_view origin);
Topology parse_yaml_graph(std::string_view text, std::string_view origin);

// Throws InputError unless every GPU can reach every other GPU.
void require_connected(const Topology& topo, std::string_view origin);

}  // namespace dtsim::topology
