// Multi-node fabrics: machines joined through NICs.
//
// switch                      fat-tree (leaf-spine)                 rail-optimized
//   [   fabric switch   ]        [spine0] [spine1] ...                [spine0] ... [spineS]
//    |    |    |    |             |  \    /  |                          |      \       |
//   nic  nic  nic  nic          [leaf0]   [leaf1]   uplinks sized      [rail0]  [rail1] ...   NIC j of every
//    |    |    |    |            | | |     | | |    by oversubscription  | | |    | | |       node on rail j
//   node0 node1 ...              NICs      NICs                         nic0s    nic1s
//
// NICs: `nics_per_node` per machine (one per GPU by default); NIC j serves a contiguous block of GPUs, each GPU
// reaching it over its host link (PCIe). In a PCIe box the NIC sits in the PCIe switch of its GPUs instead.
// Each leaf has `leaf_ports` NIC-facing ports; a leaf's uplinks carry leaf_ports × NIC rate / oversubscription
// in total, spread over `spines` links, one to each spine.
#include <fmt/format.h>

#include "topology/builders.hpp"
#include "topology/error.hpp"

namespace dtsim::topology {
namespace {

void check_nics(const ClusterSpec& spec) {
  const int k = spec.effective_nics_per_node();
  if (k < 1 || spec.gpus_per_node % k != 0)
    throw InputError("cluster.nics_per_node", std::to_string(k), "NICs must split the GPUs of a node evenly",
                     fmt::format("a divisor of gpus_per_node ({})", spec.gpus_per_node));
}

// Adds machine `m`'s NICs and their host-side links; returns them in NIC order.
std::vector<NodeId> add_nics(Topology& topo, const ClusterSpec& spec, const MachineDevices& dev, int m) {
  const int k = spec.effective_nics_per_node();
  const auto per_nic = static_cast<std::size_t>(spec.gpus_per_node / k);
  std::vector<NodeId> nics;
  for (int j = 0; j < k; ++j) {
    const std::string name = spec.nodes > 1 ? fmt::format("n{}-nic{}", m, j) : fmt::format("nic{}", j);
    NodeId nic = topo.add_node(Node{NodeKind::Nic, name, m, std::nullopt});
    nics.push_back(nic);
    const std::size_t first = static_cast<std::size_t>(j) * per_nic;
    if (dev.pcie_switches.empty()) {
      for (std::size_t g = first; g < first + per_nic; ++g)
        topo.add_link(make_link(dev.gpus[g], nic, spec.nic_link, spec.nic_link.bandwidth));
      continue;
    }
    const auto per_switch = static_cast<std::size_t>(spec.pcie.gpus_per_switch);
    const bool one_switch = per_nic <= per_switch && first / per_switch == (first + per_nic - 1) / per_switch;
    NodeId host = one_switch ? dev.pcie_switches[first / per_switch] : dev.cpus[first * dev.cpus.size() / dev.gpus.size()];
    topo.add_link(make_link(host, nic, spec.nic_link, spec.nic_link.bandwidth));
  }
  return nics;
}

NodeId add_switch(Topology& topo, std::string name) {
  return topo.add_node(Node{NodeKind::Switch, std::move(name), -1, std::nullopt});
}

// Leaves get NICs in order, `leaf_ports` each; spines join every leaf. Returns nothing: links go into topo.
void build_leaf_spine(Topology& topo, const ClusterSpec& spec, const std::vector<std::vector<NodeId>>& groups,
                      const std::vector<std::string>& group_names) {
  const auto ports = static_cast<std::size_t>(spec.fabric.leaf_ports);
  std::vector<NodeId> leaves;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::size_t count = (groups[g].size() + ports - 1) / ports;
    for (std::size_t l = 0; l < count; ++l) {
      const std::string name = count == 1 ? group_names[g] : fmt::format("{}-{}", group_names[g], l);
      NodeId leaf = add_switch(topo, name);
      leaves.push_back(leaf);
      for (std::size_t i = l * ports; i < std::min(groups[g].size(), (l + 1) * ports); ++i)
        topo.add_link(make_link(groups[g][i], leaf, spec.inter_link, spec.inter_link.bandwidth));
    }
  }
  if (leaves.size() < 2) return;
  const int spines = spec.effective_spines();
  if (static_cast<long long>(leaves.size()) * spines > kMaxFabricLinks)
    throw InputError("cluster.fabric.spines", std::to_string(spines),
                     fmt::format("{} leaves x this many spines is more leaf-spine links than dtsim takes with",
                                 leaves.size()),
                     fmt::format("leaves x spines <= {}", kMaxFabricLinks));
  const BytesPerSecond uplink =
      spec.inter_link.bandwidth * (static_cast<double>(ports) / (spec.oversubscription * spines));
  for (int s = 0; s < spines; ++s) {
    NodeId spine = add_switch(topo, fmt::format("spine{}", s));
    for (NodeId leaf : leaves) topo.add_link(make_link(leaf, spine, spec.inter_link, uplink));
  }
}

}  // namespace

void build_fabric(Topology& topo, const ClusterSpec& spec, const std::vector<MachineDevices>& machines,
                  const std::vector<const ClusterSpec*>& machine_specs) {
  check_nics(spec);
  std::vector<std::vector<NodeId>> nics;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    check_nics(*machine_specs[m]);
    nics.push_back(add_nics(topo, *machine_specs[m], machines[m], static_cast<int>(m)));
  }
  if (spec.inter == InterKind::Switch) {
    NodeId sw = add_switch(topo, "fabric");
    for (const auto& node_nics : nics)
      for (NodeId nic : node_nics) topo.add_link(make_link(nic, sw, spec.inter_link, spec.inter_link.bandwidth));
    return;
  }
  std::vector<std::vector<NodeId>> groups;
  std::vector<std::string> names;
  if (spec.inter == InterKind::FatTree) {
    groups.emplace_back();
    for (const auto& node_nics : nics) groups.back().insert(groups.back().end(), node_nics.begin(), node_nics.end());
    names.emplace_back("leaf");
  } else {   // rail-optimized: rail j holds NIC j of every machine
    for (std::size_t j = 0; j < nics.front().size(); ++j) {
      groups.emplace_back();
      for (const auto& node_nics : nics) groups.back().push_back(node_nics[j]);
      names.push_back(fmt::format("rail{}", j));
    }
  }
  build_leaf_spine(topo, spec, groups, names);
}

// Machines are alike and leaves hold contiguous NICs, so splitting the machines into a first and second half
// cuts the fabric where it is thinnest. The split is the worst one for certain when it does not cut a machine
// or a leaf in two; otherwise it is reported as a candidate, not as exact.
Symmetry fabric_symmetry(const ClusterSpec& spec) {
  const auto n = static_cast<std::size_t>(spec.gpus());
  const std::size_t per_leaf = static_cast<std::size_t>(spec.fabric.leaf_ports);
  const std::size_t nics = static_cast<std::size_t>(spec.nodes * spec.effective_nics_per_node());
  const std::size_t units = spec.inter == InterKind::RailOptimized ? static_cast<std::size_t>(spec.nodes) : nics;
  const std::size_t leaves = (units + per_leaf - 1) / per_leaf;
  const bool exact = spec.nodes % 2 == 0 && (spec.inter == InterKind::Switch || leaves == 1 ||
                                             (leaves % 2 == 0 && units % per_leaf == 0));
  std::vector<std::size_t> sources;
  for (int g = 0; g < spec.gpus_per_node; ++g) sources.push_back(static_cast<std::size_t>(g));
  sources.push_back(n - static_cast<std::size_t>(spec.gpus_per_node));
  return Symmetry{{first_half(n)}, exact, sources};
}

}  // namespace dtsim::topology
