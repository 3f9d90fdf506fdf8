// The embedded default scenario of `./dtsim run`: the founding article's headline comparison (claims S15-S17
// of ../shared/seed/CLAIMS.md), 8 A100s for GPT-3 175B on six interconnects. Each YAML document is one
// configuration; the workload sections join as their issues land.
#include "sim/cli/scenario.hpp"

namespace dtsim::cli {

const std::string& default_scenario_text() {
  static const std::string text = R"(name: 8xa100-nvswitch
cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}
---
name: 8xa100-full-mesh
cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra: full-mesh}
---
name: 8xa100-ring
cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra: ring}
---
name: 8xa100-star
cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra: star}
---
name: 8xa100-pcie4-server
cluster: {gpu: a100-pcie-80gb, nodes: 1, gpus_per_node: 8, intra: pcie}
---
name: 8xa100-100gbe
cluster: {gpu: a100-pcie-80gb, nodes: 8, gpus_per_node: 1, inter: switch, inter_link: eth-100g, nics_per_node: 1}
)";
  return text;
}

}  // namespace dtsim::cli
