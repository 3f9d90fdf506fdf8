#include "topology/cluster.hpp"

#include "topology/name_table.hpp"

namespace dtsim::topology {
namespace {
constexpr NameTable<IntraKind, 5> kIntra = {{
    {IntraKind::NvSwitch, "nvswitch"},
    {IntraKind::FullMesh, "full-mesh"},
    {IntraKind::Ring, "ring"},
    {IntraKind::Star, "star"},
    {IntraKind::Pcie, "pcie"},
}};
constexpr NameTable<InterKind, 4> kInter = {{
    {InterKind::None, "none"},
    {InterKind::Switch, "switch"},
    {InterKind::FatTree, "fat-tree"},
    {InterKind::RailOptimized, "rail-optimized"},
}};
}  // namespace

std::string_view to_string(IntraKind k) { return name_of(kIntra, k); }
std::string_view to_string(InterKind k) { return name_of(kInter, k); }
std::optional<IntraKind> parse_intra_kind(std::string_view name) { return value_of(kIntra, name); }
std::optional<InterKind> parse_inter_kind(std::string_view name) { return value_of(kInter, name); }

int ClusterSpec::effective_links_per_gpu() const {
  if (links_per_gpu > 0) return links_per_gpu;
  return intra_link.name == gpu.gpu_link ? gpu.gpu_link_count : 1;
}

bool valid_pcie_lanes(int lanes) { return lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16; }

int ClusterSpec::effective_sockets() const {
  if (pcie.sockets > 0) return pcie.sockets;
  return gpus_per_node / pcie.gpus_per_switch >= 4 ? 2 : 1;
}

BytesPerSecond ClusterSpec::gpu_budget() const {
  return intra_link.bandwidth * static_cast<double>(effective_links_per_gpu());
}

Routing ClusterSpec::effective_routing() const {
  if (routing) return *routing;
  if (inter != InterKind::FatTree && inter != InterKind::RailOptimized) return Routing::Single;
  const long long ports = fabric.leaf_ports;
  const long long nics = static_cast<long long>(nodes) * effective_nics_per_node();
  const long long leaves = inter == InterKind::FatTree ? (nics + ports - 1) / ports
                                                       : effective_nics_per_node() * ((nodes + ports - 1) / ports);
  if (leaves < 2) return Routing::Single;
  return destination_routed(inter_link.family) ? Routing::DModK : Routing::Ecmp;
}

ClusterSpec default_cluster(std::string_view gpu, IntraKind intra, int nodes, int gpus_per_node) {
  ClusterSpec spec;
  spec.gpu = find_gpu(gpu);
  spec.nodes = nodes;
  spec.gpus_per_node = gpus_per_node;
  spec.intra = intra;
  spec.intra_link = find_link(intra == IntraKind::Pcie ? spec.gpu.host_link : spec.gpu.gpu_link);
  spec.nic_link = find_link(spec.gpu.host_link, "cluster.nic_link");
  spec.inter_link = default_inter_link(spec.gpu);
  spec.pcie.cpu = default_cpu(spec.gpu.host_link).name;
  spec.pcie.socket_link = find_link(find_cpu(spec.pcie.cpu).socket_link, "cluster.pcie.socket_link");
  spec.pcie.root_complex = pcie_root_complex_throughput();
  spec.pcie.bridge_link = find_link("nvlink-bridge", "cluster.pcie.bridge_link");
  return spec;
}

}  // namespace dtsim::topology
