#include "topology/topology.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "topology/name_table.hpp"

namespace dtsim::topology {
namespace {
constexpr NameTable<NodeKind, 5> kNodeKindNames = {{
    {NodeKind::Gpu, "gpu"},
    {NodeKind::Switch, "switch"},
    {NodeKind::PcieSwitch, "pcie-switch"},
    {NodeKind::Cpu, "cpu"},
    {NodeKind::Nic, "nic"},
}};
}  // namespace

std::string_view to_string(NodeKind k) { return name_of(kNodeKindNames, k); }
std::optional<NodeKind> parse_node_kind(std::string_view name) { return value_of(kNodeKindNames, name); }

NodeId Topology::add_node(Node node) {
  const auto id = static_cast<NodeId>(nodes_.size());
  if (node.kind == NodeKind::Gpu) gpus_.push_back(id);
  nodes_.push_back(std::move(node));
  incident_.emplace_back();
  return id;
}

LinkId Topology::add_link(Link link) {
  DTSIM_ASSERT(link.a < nodes_.size() && link.b < nodes_.size() && link.a != link.b, "link endpoints");
  DTSIM_ASSERT(link.bandwidth.value() > 0, "link bandwidth must be positive");
  const auto id = static_cast<LinkId>(links_.size());
  incident_[link.a].push_back(id);
  incident_[link.b].push_back(id);
  links_.push_back(std::move(link));
  return id;
}

NodeId Topology::other_end(LinkId l, NodeId from) const {
  const Link& lk = links_.at(l);
  DTSIM_ASSERT(lk.a == from || lk.b == from, "node is not an end of the link");
  return lk.a == from ? lk.b : lk.a;
}

std::optional<NodeId> Topology::find_node(std::string_view name) const {
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.name == name; });
  if (it == nodes_.end()) return std::nullopt;
  return static_cast<NodeId>(it - nodes_.begin());
}

std::size_t Topology::count(NodeKind kind) const {
  return static_cast<std::size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.kind == kind; }));
}

namespace {
// A class the catalog does not know (a scenario's inline link) is written as "custom": the explicit bandwidth,
// latency and efficiency beside it say everything.
std::string_view catalog_class(const std::string& name) {
  for (const LinkSpec& l : link_catalog())
    if (l.name == name) return name;
  return "custom";
}
}  // namespace

// Writes every attribute the user-graph reader needs, at full precision, so a dumped topology reads back as the
// same graph (tests/topology/user_graph_test.cpp checks the round trip).
std::string to_dot(const Topology& topo) {
  std::string out = "graph dtsim {\n  node [fontname=\"Helvetica\"];\n";
  for (const Node& n : topo.nodes()) {
    const char* shape = n.kind == NodeKind::Gpu ? "box" : n.kind == NodeKind::Nic ? "diamond" : "ellipse";
    out += fmt::format("  \"{}\" [kind=\"{}\", shape={}", n.name, to_string(n.kind), shape);
    if (n.machine >= 0) out += fmt::format(", machine={}", n.machine);
    if (n.capacity) out += fmt::format(", capacity_GBps={}", to_gigabytes_per_second(*n.capacity));
    out += "];\n";
  }
  for (const Link& l : topo.links())
    out += fmt::format(
        "  \"{}\" -- \"{}\" [label=\"{:g} GB/s\", link=\"{}\", bandwidth_GBps={}, latency_us={}, efficiency={}];\n",
        topo.node(l.a).name, topo.node(l.b).name, to_gigabytes_per_second(l.bandwidth), catalog_class(l.link_class),
        to_gigabytes_per_second(l.bandwidth), to_microseconds(l.latency), l.efficiency);
  out += "}\n";
  return out;
}

}  // namespace dtsim::topology
