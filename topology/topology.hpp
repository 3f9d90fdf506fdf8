// A topology: devices (GPUs, switches, NICs, CPUs) joined by full-duplex links. A plain value built by the
// builders in builders.hpp or read from a user file (user_graph.hpp); algorithms over it (routing, bisection)
// use Boost.Graph internally and never expose it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/units.hpp"

namespace dtsim::topology {

using NodeId = std::uint32_t;
using LinkId = std::uint32_t;

enum class NodeKind { Gpu, Switch, PcieSwitch, Cpu, Nic };
std::string_view to_string(NodeKind k);
std::optional<NodeKind> parse_node_kind(std::string_view name);

struct Node {
  NodeKind kind = NodeKind::Gpu;
  std::string name;
  int machine = 0;                          // the node (server) it sits in; -1 for fabric switches
  std::optional<BytesPerSecond> capacity;   // switching capacity per direction; none = non-blocking
};

// A full-duplex connection between two devices, whatever its number of lanes: `bandwidth` in each direction.
struct Link {
  NodeId a = 0;
  NodeId b = 0;
  BytesPerSecond bandwidth;   // per direction, line rate
  Seconds latency;
  double efficiency = 1.0;
  std::string link_class;     // catalog name of the link class ("nvlink3", "ib-hdr", ...)
  // Switches forward by destination on this link (InfiniBand: forwarding tables indexed by destination LID), so
  // ECMP picks among such links by the destination alone (routing.hpp).
  bool by_destination = false;
  // Its link class's NVLink SHARP (LinkSpec::switch_reduction, switch_port_rate): a switch at its other end reduces
  // (NVLS) at this rate per GPU port. Carried on the link so that a class defined in a scenario keeps it.
  bool switch_reduction = false;
  BytesPerSecond switch_port_rate{};
};

// One traversal of a link: `forward` means from link.a to link.b.
struct Hop {
  LinkId link = 0;
  bool forward = true;
  friend bool operator==(const Hop&, const Hop&) = default;
};

class Topology {
 public:
  NodeId add_node(Node node);
  LinkId add_link(Link link);
  // A link's rate changed after building (a slow NIC's links, sim/drivers/stragglers.hpp).
  void set_bandwidth(LinkId id, BytesPerSecond bandwidth) { links_.at(id).bandwidth = bandwidth; }

  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_.at(id); }
  [[nodiscard]] const Link& link(LinkId id) const { return links_.at(id); }
  // GPUs in rank order (the order they were added).
  [[nodiscard]] const std::vector<NodeId>& gpus() const { return gpus_; }
  // Links incident to a node, in the order they were added.
  [[nodiscard]] const std::vector<LinkId>& incident(NodeId id) const { return incident_.at(id); }
  [[nodiscard]] NodeId other_end(LinkId l, NodeId from) const;
  [[nodiscard]] std::optional<NodeId> find_node(std::string_view name) const;
  [[nodiscard]] std::size_t count(NodeKind kind) const;

 private:
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<NodeId> gpus_;
  std::vector<std::vector<LinkId>> incident_;
};

// Graphviz DOT, renderable with `dot -Tsvg`; GPUs as boxes, switches as ellipses, edges labelled in GB/s.
std::string to_dot(const Topology& topo);

}  // namespace dtsim::topology
