// What a scenario's `cluster` section says, resolved: catalog entries copied in, every default filled.
// The scenario loader (sim/cli) fills it from YAML; builders (builders.hpp) turn it into a Topology.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/routing.hpp"

namespace dtsim::topology {

enum class IntraKind { NvSwitch, FullMesh, Ring, Star, Pcie };
enum class InterKind { None, Switch, FatTree, RailOptimized };
std::string_view to_string(IntraKind k);
std::string_view to_string(InterKind k);
std::optional<IntraKind> parse_intra_kind(std::string_view name);
std::optional<InterKind> parse_inter_kind(std::string_view name);
inline constexpr std::string_view kIntraNames = "nvswitch, full-mesh, ring, star, pcie";
inline constexpr std::string_view kInterNames = "none, switch, fat-tree, rail-optimized";

// The PCIe box: sockets, each with PCIe switches, each with GPUs; sockets joined by the CPU interconnect.
//
//   [cpu0]====socket link====[cpu1]        root ports: x`uplink_lanes` to each PCIe switch
//    |    \                   |    \       slots: x`slot_lanes` from each switch to each GPU
//  [psw0] [psw1]            [psw2] [psw3]   `gpus_per_switch` GPUs under a switch (1: a GPU on its own root port)
//   |  |   |  |              |  |   |  |
//  g0 g1  g2 g3             g4 g5  g6 g7    optional NVLink bridges between GPU pairs (g0=g1, g2=g3, ...)
struct PcieLayout {
  int gpus_per_switch = 2;
  int sockets = 0;          // 0 = two when there are 4 or more PCIe switches, else one
  std::string cpu;          // catalog CPU (its socket link); empty until resolved (default_cpu of the slots)
  LinkSpec socket_link;     // the socket interconnect as GPU traffic crosses it (the CPU's, unless overridden)
  int socket_links = 1;     // links of socket_link between the two sockets
  BytesPerSecond root_complex;   // GPU peer-to-peer throughput one socket's root complex sustains (CPU and
                                 // memory; both directions together); zero = unlimited
  int slot_lanes = 16;      // PCIe lanes of a GPU's slot (1, 2, 4, 8, 16): the slot runs at lanes/16 of x16
  int uplink_lanes = 16;    // PCIe lanes of a switch's uplink to its root port
  std::vector<std::pair<int, int>> bridges;   // GPU pairs (node-local indices) joined by an NVLink bridge
  LinkSpec bridge_link;     // one link of a bridge (nvlink-bridge)
  int bridge_links = 12;    // links per bridge (A100 and H100 PCIe bridges: 12, 600 GB/s both directions)
};

// PCIe lane counts a slot or an uplink may have.
inline constexpr std::string_view kPcieLaneNames = "1, 2, 4, 8, 16";
[[nodiscard]] bool valid_pcie_lanes(int lanes);

// Leaf-spine fabric for fat-tree and rail-optimized.
struct FabricLayout {
  int leaf_ports = 32;      // NIC-facing ports per leaf switch
  int spines = 0;           // 0 = as many as a leaf has NIC-facing ports (a full two-level fat tree)
};

struct ClusterSpec {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  IntraKind intra = IntraKind::NvSwitch;
  LinkSpec intra_link;      // default: the GPU's own GPU-to-GPU link
  int links_per_gpu = 0;    // links of intra_link per GPU; 0 = the GPU's count when intra_link is its own link, else 1
  InterKind inter = InterKind::None;
  LinkSpec inter_link;      // one NIC port
  LinkSpec nic_link;        // GPU to NIC (the GPU's host link)
  int nics_per_node = 0;    // 0 = one per GPU
  double oversubscription = 1.0;   // leaf downlink : uplink capacity
  PcieLayout pcie;
  FabricLayout fabric;
  std::optional<Routing> routing;   // how switches choose among equal paths; none = the fabric's default
  std::optional<std::string> graph;   // a user topology file, instead of the builders
  // A mixed cluster (`cluster.groups`): its machines in group order, each group's built with its own spec (its GPU,
  // node count and node layout); `gpu` is then their mean (mixed_gpu.hpp), `nodes` their sum, and the fabric this
  // spec's. Empty: one kind.
  std::vector<ClusterSpec> groups;
  // An NVLink domain that spans servers (`cluster.nvlink_domain`, an NVL72 rack): the loader folds each domain into
  // the node everything else sees (gpus_per_node its GPUs, nodes the domains, nics_per_node its servers' NICs), as
  // NCCL's multi-node NVLink treats the domain as one node; `server_gpus` keeps a server's own GPUs (a GB200 compute
  // tray's 4) for the bill, power and failures. 0: a node is a server.
  int server_gpus = 0;
  // The NVLink domain's own GPUs (the rack's 72), when a job's servers fill only part of it: Slurm's block
  // scheduling gives the job segments of servers each inside one domain (the folded node is a segment), and the
  // bill still counts the domain's switch trays. 0: the folded node is the whole domain.
  int domain_gpus = 0;

  [[nodiscard]] int gpus() const { return nodes * gpus_per_node; }
  [[nodiscard]] int servers_per_node() const { return server_gpus > 0 ? gpus_per_node / server_gpus : 1; }
  [[nodiscard]] int gpus_per_server() const { return server_gpus > 0 ? server_gpus : gpus_per_node; }
  [[nodiscard]] int servers() const { return nodes * servers_per_node(); }
  [[nodiscard]] int nvlink_domain_gpus() const { return domain_gpus > 0 ? domain_gpus : gpus_per_node; }
  // The link budget one GPU spends inside its node, per direction (DESIGN.md, "Comparing topologies fairly").
  [[nodiscard]] BytesPerSecond gpu_budget() const;
  [[nodiscard]] int effective_links_per_gpu() const;
  // Defaults that depend on other fields, resolved in one place for the builders and the resolved scenario.
  [[nodiscard]] int effective_nics_per_node() const { return nics_per_node > 0 ? nics_per_node : gpus_per_node; }
  [[nodiscard]] int effective_spines() const { return fabric.spines > 0 ? fabric.spines : fabric.leaf_ports; }
  [[nodiscard]] int effective_sockets() const;
  // `routing`, or what the builders' fabric does without one (routing.hpp's default_routing, told from the spec
  // without building it): D-mod-K over an InfiniBand leaf-spine fabric, ECMP over any other, single where no
  // pair of GPUs has two equal paths through switches (one switch, no fabric). Not for user graphs.
  [[nodiscard]] Routing effective_routing() const;
};

// A cluster with every default resolved from the catalog, for `gpu` on `intra` with `nodes` × `gpus_per_node`.
ClusterSpec default_cluster(std::string_view gpu, IntraKind intra, int nodes, int gpus_per_node);

}  // namespace dtsim::topology
