#include "topology/builders.hpp"

#include <fmt/format.h>
#include <numeric>

#include "topology/error.hpp"
#include "topology/user_graph.hpp"

namespace dtsim::topology {
namespace {

std::string prefix(const ClusterSpec& spec, int machine) {
  return spec.nodes > 1 ? fmt::format("n{}-", machine) : std::string();
}

NodeId add_device(Topology& topo, NodeKind kind, std::string name, int machine) {
  return topo.add_node(Node{kind, std::move(name), machine, std::nullopt});
}

[[noreturn]] void bad_count(const ClusterSpec& spec, std::string_view why, std::string allowed) {
  throw InputError("cluster.gpus_per_node", std::to_string(spec.gpus_per_node),
                   fmt::format("{} cannot take this many GPUs ({})", to_string(spec.intra), why),
                   std::move(allowed));
}

// Hub-and-spoke: each GPU gives its whole budget to one device. A switch is non-blocking; a star's hub can
// switch only one GPU's budget in each direction.
void build_hub(Topology& topo, const ClusterSpec& spec, const MachineDevices& m, int machine, bool limited) {
  const std::string name = prefix(spec, machine) + (limited ? "hub" : "nvswitch");
  std::optional<BytesPerSecond> capacity;
  if (limited) capacity = spec.gpu_budget();
  NodeId hub = topo.add_node(Node{NodeKind::Switch, name, machine, capacity});
  // A link class's latency is GPU to GPU (NCCL's per-hop figure is measured through the NVSwitch), so each of
  // the two links a GPU-to-GPU route crosses here carries half of it.
  for (NodeId g : m.gpus) {
    Link link = make_link(g, hub, spec.intra_link, spec.gpu_budget());
    link.latency = link.latency / 2.0;
    topo.add_link(link);
  }
}

void build_full_mesh(Topology& topo, const ClusterSpec& spec, const MachineDevices& m) {
  const auto n = m.gpus.size();
  const BytesPerSecond per_peer = spec.gpu_budget() / static_cast<double>(n - 1);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) topo.add_link(make_link(m.gpus[i], m.gpus[j], spec.intra_link, per_peer));
}

void build_ring(Topology& topo, const ClusterSpec& spec, const MachineDevices& m) {
  const auto n = m.gpus.size();
  if (n < 3) bad_count(spec, "a ring needs 3 or more; use full-mesh for 2", "3 or more");
  for (std::size_t i = 0; i < n; ++i)
    topo.add_link(make_link(m.gpus[i], m.gpus[(i + 1) % n], spec.intra_link, spec.gpu_budget() / 2.0));
}

void check_pcie(const ClusterSpec& spec) {
  const int per_switch = spec.pcie.gpus_per_switch;
  if (spec.gpus_per_node % per_switch != 0)
    bad_count(spec, fmt::format("{} GPUs per PCIe switch", per_switch), fmt::format("a multiple of {}", per_switch));
  const int switches = spec.gpus_per_node / per_switch;
  const int sockets = spec.effective_sockets();
  if (switches % sockets != 0)
    throw InputError("cluster.pcie.sockets", std::to_string(sockets),
                     fmt::format("{} PCIe switches do not split evenly over", switches),
                     fmt::format("a divisor of {}", switches));
  std::vector<int> bridged(static_cast<std::size_t>(spec.gpus_per_node), 0);
  for (const auto& [a, b] : spec.pcie.bridges) {
    const auto pair = fmt::format("[{}, {}]", a, b);
    if (a < 0 || b < 0 || a >= spec.gpus_per_node || b >= spec.gpus_per_node || a == b)
      throw InputError("cluster.pcie.bridges", pair, "a bridge joins two different GPUs of the node, not",
                       fmt::format("two GPU indices in 0..{}", spec.gpus_per_node - 1));
    if (++bridged[static_cast<std::size_t>(a)] > 1 || ++bridged[static_cast<std::size_t>(b)] > 1)
      throw InputError("cluster.pcie.bridges", pair, "a GPU has one NVLink bridge connector; it is bridged twice in",
                       "pairs that share no GPU");
  }
}

// The rate of a PCIe link of `lanes` lanes of the slot generation `x16` (x16's rate per direction).
BytesPerSecond lanes_of(const LinkSpec& x16, int lanes) { return x16.bandwidth * (lanes / 16.0); }

// Sockets (root complexes) joined by the socket interconnect; PCIe switches under each socket, each on an
// x`uplink_lanes` root port; GPUs in the switches' x`slot_lanes` slots, at the intra link's generation; NVLink
// bridges between the listed GPU pairs.
void build_pcie(Topology& topo, const ClusterSpec& spec, MachineDevices& m, int machine) {
  check_pcie(spec);
  const std::string pre = prefix(spec, machine);
  const int sockets = spec.effective_sockets();
  const int switches = spec.gpus_per_node / spec.pcie.gpus_per_switch;
  const BytesPerSecond slot = lanes_of(spec.intra_link, spec.pcie.slot_lanes);
  const BytesPerSecond uplink = lanes_of(spec.intra_link, spec.pcie.uplink_lanes);
  std::optional<BytesPerSecond> root_complex;
  if (spec.pcie.root_complex.value() > 0) root_complex = spec.pcie.root_complex;
  for (int s = 0; s < sockets; ++s)
    m.cpus.push_back(topo.add_node(Node{NodeKind::Cpu, fmt::format("{}cpu{}", pre, s), machine, root_complex}));
  const BytesPerSecond between = spec.pcie.socket_link.bandwidth * static_cast<double>(spec.pcie.socket_links);
  for (int s = 1; s < sockets; ++s)
    topo.add_link(make_link(m.cpus[static_cast<std::size_t>(s - 1)], m.cpus[static_cast<std::size_t>(s)],
                            spec.pcie.socket_link, between));
  for (int w = 0; w < switches; ++w) {
    NodeId sw = add_device(topo, NodeKind::PcieSwitch, fmt::format("{}psw{}", pre, w), machine);
    m.pcie_switches.push_back(sw);
    topo.add_link(make_link(sw, m.cpus[static_cast<std::size_t>(w / (switches / sockets))], spec.intra_link, uplink));
  }
  for (std::size_t g = 0; g < m.gpus.size(); ++g)
    topo.add_link(make_link(m.gpus[g], m.pcie_switches[g / static_cast<std::size_t>(spec.pcie.gpus_per_switch)],
                            spec.intra_link, slot));
  const BytesPerSecond bridge = spec.pcie.bridge_link.bandwidth * static_cast<double>(spec.pcie.bridge_links);
  for (const auto& [a, b] : spec.pcie.bridges)
    topo.add_link(make_link(m.gpus[static_cast<std::size_t>(a)], m.gpus[static_cast<std::size_t>(b)],
                            spec.pcie.bridge_link, bridge));
}

}  // namespace

Link make_link(NodeId a, NodeId b, const LinkSpec& cls, BytesPerSecond bandwidth) {
  return Link{a,        b, bandwidth, cls.latency, cls.efficiency, cls.name, destination_routed(cls.family),
              cls.switch_reduction, cls.switch_port_rate};
}

std::vector<std::size_t> first_half(std::size_t n) {
  std::vector<std::size_t> side(n / 2);
  std::iota(side.begin(), side.end(), std::size_t{0});
  return side;
}

MachineDevices build_machine(Topology& topo, const ClusterSpec& spec, int machine) {
  MachineDevices m;
  const std::string pre = prefix(spec, machine);
  for (int g = 0; g < spec.gpus_per_node; ++g)
    m.gpus.push_back(add_device(topo, NodeKind::Gpu, fmt::format("{}gpu{}", pre, g), machine));
  if (spec.gpus_per_node == 1) return m;   // a single GPU has no intra-node fabric, whatever `intra` says
  switch (spec.intra) {
    case IntraKind::NvSwitch: build_hub(topo, spec, m, machine, false); break;
    case IntraKind::Star: build_hub(topo, spec, m, machine, true); break;
    case IntraKind::FullMesh: build_full_mesh(topo, spec, m); break;
    case IntraKind::Ring: build_ring(topo, spec, m); break;
    case IntraKind::Pcie: build_pcie(topo, spec, m, machine); break;
  }
  return m;
}

// Every single-node builder is symmetric under GPU relabelling that keeps its structure (the switch and the
// hub see every GPU alike; the mesh is complete; the ring is cut least by a contiguous arc; the PCIe box is
// cut least between its sockets, or between its switches when it has one socket), so the contiguous half is
// the worst balanced cut and GPU 0 sees the largest eccentricity.
Symmetry machine_symmetry(const ClusterSpec& spec) {
  return Symmetry{{first_half(static_cast<std::size_t>(spec.gpus()))}, true, {0}};
}

BuiltTopology build_cluster(const ClusterSpec& spec) {
  if (spec.graph) {
    Topology topo = read_user_graph(*spec.graph);
    Symmetry sym;
    sym.exact = false;
    return BuiltTopology{std::move(topo), sym};
  }
  if (spec.gpus_per_node < 1) bad_count(spec, "needs at least one", "1 or more");
  const long long gpus = static_cast<long long>(spec.nodes) * spec.gpus_per_node;
  if (spec.nodes < 1 || gpus > kMaxGpus)
    throw InputError("cluster.nodes", std::to_string(spec.nodes),
                     fmt::format("{} GPUs per node on this many nodes make {} GPUs, more than dtsim simulates, with",
                                 spec.gpus_per_node, gpus),
                     fmt::format("nodes x gpus_per_node <= {}", kMaxGpus));
  if (spec.nodes > 1 && spec.inter == InterKind::None)
    throw InputError("cluster.inter", "none", fmt::format("{} nodes need a fabric between them, not", spec.nodes),
                     std::string(kInterNames.substr(6)));
  BuiltTopology built;
  std::vector<MachineDevices> machines;
  std::vector<const ClusterSpec*> specs;   // each machine's
  // A group's machines are named by their place in the whole cluster ("n12-gpu0"): its spec with the cluster's nodes.
  std::vector<ClusterSpec> groups = spec.groups;
  for (ClusterSpec& g : groups) g.nodes = spec.nodes;
  if (groups.empty()) {
    for (int m = 0; m < spec.nodes; ++m) specs.push_back(&spec);
  } else {
    for (std::size_t i = 0; i < groups.size(); ++i)
      for (int m = 0; m < spec.groups[i].nodes; ++m) specs.push_back(&groups[i]);
  }
  for (int m = 0; m < static_cast<int>(specs.size()); ++m)
    machines.push_back(build_machine(built.topology, *specs[static_cast<std::size_t>(m)], m));
  if (spec.inter == InterKind::None) {
    built.symmetry = machine_symmetry(spec);
    return built;
  }
  build_fabric(built.topology, spec, machines, specs);
  built.symmetry = fabric_symmetry(spec);
  // Machines of different kinds: the halves the fabric's symmetry names are a candidate cut, not the worst for certain.
  if (!spec.groups.empty()) built.symmetry.exact = false;
  return built;
}

}  // namespace dtsim::topology
