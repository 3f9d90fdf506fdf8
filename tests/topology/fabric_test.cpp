// Multi-node fabrics: counts, bisection and diameter against values worked out by hand.
#include <doctest/doctest.h>

#include "topology/builders.hpp"
#include "topology/error.hpp"
#include "topology/properties.hpp"

using namespace dtsim;
using namespace dtsim::topology;

namespace {
ClusterSpec cluster(const char* gpu, IntraKind intra, int nodes, int per_node, InterKind inter, const char* nic) {
  ClusterSpec c = default_cluster(gpu, intra, nodes, per_node);
  c.inter = inter;
  c.inter_link = find_link(nic, "cluster.inter_link");
  return c;
}
double gbps(BytesPerSecond b) { return to_gigabytes_per_second(b); }
}  // namespace

TEST_CASE("two DGX A100 nodes on one InfiniBand switch: the cut crosses 8 HDR ports") {
  auto c = cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 2, 8, InterKind::Switch, "ib-hdr");
  auto p = describe(build_cluster(c));
  CHECK(p.gpus == 16);
  CHECK(p.nics == 16);
  CHECK(p.switches == 3);              // two NVSwitches and the fabric switch
  CHECK(p.links == 16 + 16 + 16);      // GPU-NVSwitch, GPU-NIC (PCIe), NIC-switch
  CHECK(gbps(p.bisection) == doctest::Approx(8 * 25));   // 8 x 200 Gb/s
  CHECK(p.bisection_exact);
  CHECK(p.diameter_hops == 4);         // gpu, nic, switch, nic, gpu
  CHECK(gbps(p.injection_per_gpu) == doctest::Approx(300 + 31.5));
}

TEST_CASE("8 single-GPU nodes on 100 Gb/s Ethernet: 12.5 GB/s per port, 4 ports cut") {
  auto c = cluster("a100-pcie-80gb", IntraKind::Pcie, 8, 1, InterKind::Switch, "eth-100g");
  auto p = describe(build_cluster(c));
  CHECK(p.links == 8 + 8);
  CHECK(gbps(p.bisection) == doctest::Approx(4 * 12.5));
  CHECK(p.diameter_hops == 4);
}

TEST_CASE("fat tree: oversubscription thins the uplinks, and the bisection with them") {
  auto c = cluster("a100-pcie-80gb", IntraKind::Pcie, 4, 1, InterKind::FatTree, "eth-100g");
  c.fabric.leaf_ports = 2;
  auto p = describe(build_cluster(c));
  CHECK(p.switches == 2 + 2);                 // 2 leaves, 2 spines
  CHECK(p.links == 4 + 4 + 4);                // GPU-NIC, NIC-leaf, leaf-spine
  CHECK(gbps(p.bisection) == doctest::Approx(2 * 12.5));
  CHECK(p.diameter_hops == 6);
  c.oversubscription = 2.0;
  CHECK(gbps(describe(build_cluster(c)).bisection) == doctest::Approx(12.5));
  c.oversubscription = 4.0;
  CHECK(gbps(describe(build_cluster(c)).bisection) == doctest::Approx(6.25));
}

TEST_CASE("fat tree with one leaf is a single switch") {
  auto c = cluster("a100-pcie-80gb", IntraKind::Pcie, 4, 1, InterKind::FatTree, "eth-100g");
  auto p = describe(build_cluster(c));
  CHECK(p.switches == 1);
  CHECK(p.diameter_hops == 4);
}

TEST_CASE("rail-optimized: NIC j of every node on rail j, rails joined by spines") {
  auto c = cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 2, 4, InterKind::RailOptimized, "ib-hdr");
  c.fabric.spines = 2;
  BuiltTopology b = build_cluster(c);
  auto p = describe(b);
  CHECK(p.switches == 2 + 4 + 2);             // NVSwitches, rail leaves, spines
  CHECK(p.links == 8 + 8 + 8 + 4 * 2);
  CHECK(gbps(p.bisection) == doctest::Approx(4 * 25));
  const Topology& t = b.topology;
  auto rail1 = t.find_node("rail1");
  REQUIRE(rail1);
  for (LinkId l : t.incident(*rail1)) {
    const Node& other = t.node(t.other_end(l, *rail1));
    if (other.kind == NodeKind::Nic) CHECK(other.name.ends_with("nic1"));
  }
}

TEST_CASE("one NIC per node hangs off every GPU of the node, or off a PCIe switch in a PCIe box") {
  auto c = cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 2, 8, InterKind::Switch, "eth-100g");
  c.nics_per_node = 1;
  auto p = describe(build_cluster(c));
  CHECK(p.nics == 2);
  CHECK(gbps(p.bisection) == doctest::Approx(12.5));
  auto box = cluster("a100-pcie-80gb", IntraKind::Pcie, 2, 8, InterKind::Switch, "eth-100g");
  box.nics_per_node = 4;   // one per PCIe switch
  BuiltTopology b = build_cluster(box);
  auto nic = b.topology.find_node("n0-nic1");
  REQUIRE(nic);
  const auto& links = b.topology.incident(*nic);
  REQUIRE(links.size() == 2);
  CHECK(b.topology.node(b.topology.other_end(links[0], *nic)).name == "n0-psw1");
}

TEST_CASE("NICs that do not split a node's GPUs evenly are an input error") {
  auto c = cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 2, 8, InterKind::Switch, "ib-hdr");
  c.nics_per_node = 3;
  CHECK_THROWS_WITH_AS(build_cluster(c), doctest::Contains("cluster.nics_per_node"), InputError);
}

TEST_CASE("an odd number of nodes is reported as candidate splits, not exact") {
  auto c = cluster("a100-pcie-80gb", IntraKind::Pcie, 3, 2, InterKind::Switch, "eth-100g");
  auto p = describe(build_cluster(c));
  CHECK_FALSE(p.bisection_exact);
  CHECK(p.bisection_candidates > 1);
  CHECK(gbps(p.bisection) > 0);
}
