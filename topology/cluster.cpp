#include "topology/cluster.hpp"

#include <array>
#include <utility>

namespace dtsim::topology {
namespace {
constexpr std::array<std::pair<IntraKind, std::string_view>, 5> kIntra = {{
    {IntraKind::NvSwitch, "nvswitch"},
    {IntraKind::FullMesh, "full-mesh"},
    {IntraKind::Ring, "ring"},
    {IntraKind::Star, "star"},
    {IntraKind::Pcie, "pcie"},
}};
constexpr std::array<std::pair<InterKind, std::string_view>, 4> kInter = {{
    {InterKind::None, "none"},
    {InterKind::Switch, "switch"},
    {InterKind::FatTree, "fat-tree"},
    {InterKind::RailOptimized, "rail-optimized"},
}};

template <class Table, class E>
std::string_view name_of(const Table& table, E value) {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return "?";
}

template <class E, class Table>
std::optional<E> value_of(const Table& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}
}  // namespace

std::string_view to_string(IntraKind k) { return name_of(kIntra, k); }
std::string_view to_string(InterKind k) { return name_of(kInter, k); }
std::optional<IntraKind> parse_intra_kind(std::string_view name) { return value_of<IntraKind>(kIntra, name); }
std::optional<InterKind> parse_inter_kind(std::string_view name) { return value_of<InterKind>(kInter, name); }

int ClusterSpec::effective_links_per_gpu() const {
  if (links_per_gpu > 0) return links_per_gpu;
  return intra_link.name == gpu.gpu_link ? gpu.gpu_link_count : 1;
}

BytesPerSecond ClusterSpec::gpu_budget() const {
  return intra_link.bandwidth * static_cast<double>(effective_links_per_gpu());
}

ClusterSpec default_cluster(std::string_view gpu, IntraKind intra, int nodes, int gpus_per_node) {
  ClusterSpec spec;
  spec.gpu = find_gpu(gpu);
  spec.nodes = nodes;
  spec.gpus_per_node = gpus_per_node;
  spec.intra = intra;
  spec.intra_link = find_link(intra == IntraKind::Pcie ? spec.gpu.host_link : spec.gpu.gpu_link);
  spec.nic_link = find_link(spec.gpu.host_link, "cluster.nic_link");
  spec.inter_link = find_link("ib-hdr", "cluster.inter_link");
  spec.pcie.socket_link = find_link("upi", "cluster.socket_link");
  return spec;
}

}  // namespace dtsim::topology
