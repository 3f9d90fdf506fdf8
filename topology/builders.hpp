// Topology builders: a ClusterSpec in, a Topology out. Every builder spends the same per-GPU link budget B
// (ClusterSpec::gpu_budget(), one direction) so that layouts compare fairly (DESIGN.md).
//
// nvswitch (DGX/HGX)          full-mesh                 ring                     star
//   g0  g1  g2  g3              g0 ─── g1                g0 ─── g1                g0  g1  g2  g3
//    \   \  /   /               │ ╲  ╱ │                 │       │                 \   \  /   /
//     [ NVSwitch ]              │  ╳   │                 g3 ─── g2                  (  hub  )   hub capacity = B
//   each link B                 g3 ─── g2               each link B/2             each link B
//   (non-blocking)              each link B/(n-1)
//
// pcie (the PCIe box of ../shared/calibration/hardware.md)
//        CPU0 ════ UPI ════ CPU1             root complexes joined by the socket interconnect
//        /   \              /   \            one x16 uplink per PCIe switch
//     psw0   psw1        psw2   psw3
//     /  \   /  \        /  \   /  \         one x16 slot per GPU
//    g0  g1 g2  g3      g4  g5 g6  g7
//
// Multi-node fabrics (fabric_builders.cpp) join nodes of any of the above through NICs.
#pragma once

#include <vector>

#include "topology/cluster.hpp"
#include "topology/topology.hpp"

namespace dtsim::topology {

// What a builder knows of its own symmetry: balanced GPU splits (GPU ranks on side A) among which the worst
// bisection cut lies, and GPUs from which every eccentricity is seen. User graphs get a stated candidate set.
struct Symmetry {
  std::vector<std::vector<std::size_t>> cut_candidates;
  bool exact = true;
  std::vector<std::size_t> eccentricity_sources;
};

struct BuiltTopology {
  Topology topology;
  Symmetry symmetry;
};

// The largest cluster the builders take (16x the 16,384-GPU target of DESIGN.md, "Scale").
inline constexpr long long kMaxGpus = 262'144;
// The most leaf-to-spine links a fabric may have.
inline constexpr long long kMaxFabricLinks = 4'194'304;

// Builds the whole cluster: nodes of `spec.intra`, joined by `spec.inter`; or the user graph `spec.graph`.
// Throws InputError (key "cluster.<field>") for a GPU count or layout a builder cannot take.
BuiltTopology build_cluster(const ClusterSpec& spec);

// One machine's devices, added to `topo`; returns its GPUs in rank order. `machine` names and tags nodes.
struct MachineDevices {
  std::vector<NodeId> gpus;
  std::vector<NodeId> pcie_switches;   // pcie only: the switch each pair of GPUs hangs off
  std::vector<NodeId> cpus;            // pcie only: root complexes
};
MachineDevices build_machine(Topology& topo, const ClusterSpec& spec, int machine);

// A link of class `cls` carrying `bandwidth` per direction (a bundle of several links of the class, or a share).
Link make_link(NodeId a, NodeId b, const LinkSpec& cls, BytesPerSecond bandwidth);
// GPU ranks 0 .. n/2-1: the first half of a balanced split.
std::vector<std::size_t> first_half(std::size_t n);

// Single-node symmetry: the worst balanced cut and the eccentricity sources of one machine of `spec.intra`.
Symmetry machine_symmetry(const ClusterSpec& spec);

// Multi-node fabric (fabric_builders.cpp).
// `machine_specs`: each machine's spec (its NICs'); the fabric is `spec`'s.
void build_fabric(Topology& topo, const ClusterSpec& spec, const std::vector<MachineDevices>& machines,
                  const std::vector<const ClusterSpec*>& machine_specs);
Symmetry fabric_symmetry(const ClusterSpec& spec);

}  // namespace dtsim::topology
