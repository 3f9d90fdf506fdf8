// Cluster presets (`cluster.preset`): named machines, as data. Each is the cluster keys of one scenario file in
// scenarios/topologies/ (where the sources are cited); the keys a scenario gives beside `preset` replace the
// preset's. Node counts are the scenario's to give (default 1).
#include "sim/scenario/cluster_presets.hpp"

#include <array>
#include <string>

#include <fmt/format.h>

#include "sim/scenario/yaml_reader.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

struct Preset {
  const char* name;
  const char* yaml;   // a flow map of cluster keys
};

// DGX A100 / H100: 8 GPUs on NVSwitch and 8 InfiniBand NICs per node (one per GPU), a non-blocking fat tree
// routed as InfiniBand fabrics are by default (D-mod-K: the routing default of an InfiniBand fabric). PCIe server:
// 8 A100 PCIe cards, two per PCIe switch, two sockets. 100 GbE: one A100 PCIe per node on a 100 Gb/s Ethernet
// switch, the commodity cluster. DGX B200: 8 B200 on NVLink 5 switches, 8 NDR NICs (DGX B200 user guide's 8 x 400
// Gb/s). GB200 / GB300 NVL72: 18 compute trays of 4 GPUs in one NVLink domain of 72 (9 NVLink Switch trays), one
// NIC a GPU (ConnectX-7 NDR for GB200: MLCommons' GB200 submissions list 4 a tray; ConnectX-8 XDR for GB300),
// racks: R for R domains (1 unless nodes or racks are given); GB300's 144-port XDR leaves take 72 NICs each at 1:1.
constexpr std::array kPresets = {
    Preset{"dgx-a100", "{gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, "
                       "inter_link: ib-hdr, nics_per_node: 8}"},
    Preset{"dgx-h100", "{gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, "
                       "inter_link: ib-ndr, nics_per_node: 8}"},
    Preset{"pcie-8xa100", "{gpu: a100-pcie-80gb, gpus_per_node: 8, intra: pcie, "
                          "pcie: {gpus_per_switch: 2, sockets: 2, cpu: icelake}}"},
    Preset{"dgx-b200", "{gpu: b200-sxm-180gb, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, "
                       "inter_link: ib-ndr, nics_per_node: 8}"},
    Preset{"gb200-nvl72", "{gpu: gb200, gpus_per_node: 4, nvlink_domain: 72, racks: 1, intra: nvswitch, "
                          "inter: fat-tree, inter_link: ib-ndr, nics_per_node: 4}"},
    Preset{"gb300-nvl72", "{gpu: gb300, gpus_per_node: 4, nvlink_domain: 72, racks: 1, intra: nvswitch, "
                          "inter: fat-tree, inter_link: ib-xdr, nics_per_node: 4, fabric: {leaf_ports: 72}}"},
    Preset{"ethernet-100g", "{gpu: a100-pcie-80gb, gpus_per_node: 1, inter: switch, inter_link: eth-100g, "
                            "nics_per_node: 1}"},
};

}  // namespace

std::string cluster_preset_names() {
  std::string out;
  for (const Preset& p : kPresets) out += fmt::format("{}{}", out.empty() ? "" : ", ", p.name);
  return out;
}

void apply_cluster_preset(YAML::Node cluster, const std::string& file) {
  if (!cluster.IsMap() || !cluster["preset"]) return;
  const YAML::Node given = cluster["preset"];
  const std::string name = given.IsScalar() ? given.Scalar() : "";
  const Preset* preset = nullptr;
  for (const Preset& p : kPresets)
    if (name == p.name) preset = &p;
  if (preset == nullptr)
    throw InputError("cluster.preset", name, "unknown cluster preset", cluster_preset_names(), location(file, given));
  const YAML::Node keys = YAML::Load(preset->yaml);
  for (const auto& kv : keys) {
    const std::string key = kv.first.as<std::string>();
    if (key == "racks" && cluster["nodes"]) continue;   // nodes given: they count the servers instead
    if (!cluster[key]) cluster[key] = YAML::Clone(kv.second);
  }
  cluster.remove("preset");
}

}  // namespace dtsim::scenario
