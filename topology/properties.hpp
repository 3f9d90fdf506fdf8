// What a topology offers, in the terms of DESIGN.md's `topo` JSON: counts, diameter, injection and bisection
// bandwidth (one direction, line rate).
#pragma once

#include <cstddef>
#include <vector>

#include "topology/builders.hpp"

namespace dtsim::topology {

struct TopologyProperties {
  std::size_t gpus = 0;
  std::size_t switches = 0;   // NVSwitch, star hub, PCIe switches, fabric leaves and spines
  std::size_t nics = 0;
  std::size_t cpus = 0;
  std::size_t links = 0;
  int diameter_hops = 0;                 // largest GPU-to-GPU route, in links
  BytesPerSecond injection_per_gpu;      // least, over GPUs, of the sum of a GPU's link bandwidths
  BytesPerSecond bisection;              // least cut capacity over the candidate balanced splits
  bool bisection_exact = true;           // the candidates provably contain the worst split
  std::size_t bisection_candidates = 0;  // how many splits were evaluated
};

TopologyProperties describe(const BuiltTopology& built);

// Capacity of the least cut that separates GPU ranks `side_a` from every other GPU (max-flow, one direction,
// line rate). Switch capacities (Node::capacity) count as cuttable.
BytesPerSecond min_cut(const Topology& topo, const std::vector<std::size_t>& side_a);

// The stated candidate splits for a graph with no known symmetry: the first half of the ranks, even/odd ranks,
// and `random_splits` more drawn with a fixed seed.
std::vector<std::vector<std::size_t>> candidate_splits(std::size_t gpus, std::size_t random_splits = 8);

}  // namespace dtsim::topology
