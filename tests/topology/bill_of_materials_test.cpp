// The bill of materials (topology/bill_of_materials.hpp): switch counts of folded Clos fabrics worked out by
// hand, cables and optics by where the links run, prices summed, and what the catalog cannot price said so.
#include <doctest/doctest.h>

#include <algorithm>

#include "topology/bill_of_materials.hpp"
#include "topology/builders.hpp"

using namespace dtsim;
using namespace dtsim::topology;

namespace {

ClusterSpec fabric(int nodes, const char* link, InterKind inter, double oversubscription) {
  ClusterSpec spec = default_cluster("h100-sxm5-80gb", IntraKind::NvSwitch, nodes, 8);
  spec.inter = inter;
  spec.inter_link = find_link(link);
  spec.oversubscription = oversubscription;
  return spec;
}

BillOfMaterials bom_of(const ClusterSpec& spec) { return bill_of_materials(spec, build_cluster(spec).topology); }

}  // namespace

TEST_CASE("bill of materials: a 1,024-GPU two-tier fat tree of 64-port NDR switches at 1:1 and 2:1, by hand") {
  // 1:1: a leaf gives 32 ports to NICs and 32 up; 1,024 NICs / 32 = 32 leaves; 32 x 32 = 1,024 uplinks / 64 ports
  // = 16 spines (NVIDIA's DGX SuperPOD reference architecture for 1,024 GPUs: 32 leaves, 16 spines).
  const auto full = bom_of(fabric(128, "ib-ndr", InterKind::FatTree, 1.0));
  CHECK(full.switch_tiers == 2);
  CHECK(full.count(PartKind::Switch, "leaf") == 32);
  CHECK(full.count(PartKind::Switch, "spine") == 16);
  CHECK(full.count(PartKind::Nic) == 1024);
  CHECK(full.count(PartKind::Gpu) == 1024);
  CHECK(full.count(PartKind::Server) == 128);
  // A leaf's 32 NICs are 4 servers, one rack: copper. The 1,024 leaf-spine links are optical, a module each end.
  CHECK(full.count(PartKind::Cable, "NIC to leaf, in the rack") == 1024);
  CHECK(full.count(PartKind::Cable, "between switch tiers") == 1024);
  CHECK(full.count(PartKind::Transceiver) == 2048);
  // 2:1 with the simulated fabric's default leaves (cluster.fabric.leaf_ports 32): 32 leaves, ceil(32 / 2) = 16 up
  // each, 512 uplinks / 64 = 8 spines.
  const auto half_default = bom_of(fabric(128, "ib-ndr", InterKind::FatTree, 2.0));
  CHECK(half_default.count(PartKind::Switch, "leaf") == 32);
  CHECK(half_default.count(PartKind::Switch, "spine") == 8);
  // 2:1 with leaves using what the switch gives: floor(64 x 2/3) = 42 ports to NICs, ceil(42 / 2) = 21 up;
  // ceil(1,024 / 42) = 25 leaves; 25 x 21 = 525 uplinks / 64 = 9 spines (8.2 rounded up). A leaf's 42 NICs come
  // from 6 servers, more than a rack: optical.
  auto spec = fabric(128, "ib-ndr", InterKind::FatTree, 2.0);
  spec.fabric.leaf_ports = 64;   // more than a 64-port switch gives at 2:1: capped at 42, and said so
  const auto half = bom_of(spec);
  CHECK(half.count(PartKind::Switch, "leaf") == 25);
  CHECK(half.count(PartKind::Switch, "spine") == 9);
  CHECK(half.count(PartKind::Transceiver) == 2 * (1024 + 525));
  CHECK(std::ranges::any_of(half.notes, [](const std::string& n) { return n.find("leaf_ports 64") != std::string::npos; }));
  CHECK(folded_clos(1024, 64, 2.0, 42)[0].switches == 25);
  // Hosts that fit on one leaf: one switch, no spine.
  CHECK(folded_clos(32, 64, 1.0, 32).size() == 1);
  // Prices: the sum of count x unit of the catalog parts.
  const double usd = 1024 * find_gpu("h100-sxm5-80gb").price.value() + 128 * find_part("hgx-8gpu-server").price.value() +
                     1024 * find_part("connectx-7-400g").price.value() + 48 * find_part("quantum-2-qm9700").price.value() +
                     1024 * find_part("dac-400g").price.value() + 1024 * find_part("fiber-patch").price.value() +
                     2048 * find_part("optic-400g").price.value();
  CHECK(full.complete());
  CHECK(full.total().value() == doctest::Approx(usd));
  // Power in service: switches, NICs, optics and copper.
  const double watts = 48 * 747.0 + 1024 * 25.0 + 2048 * 8.0 + 1024 * 0.2;
  CHECK(full.network_power().value() == doctest::Approx(watts));
}

TEST_CASE("bill of materials: the fewest tiers that reach every host") {
  // 16,384 NICs on 64-port switches at 1:1: two tiers reach 32 x 64 = 2,048; three reach 32 x 32 x 64 = 65,536.
  // 512 leaves, 512 x 32 / 32 = 512 in the middle, 512 x 32 / 64 = 256 at the core (a k-ary fat tree's 5k^2/4
  // switches scaled to a quarter of its hosts: 1,280).
  const auto tiers = folded_clos(16384, 64, 1.0);
  REQUIRE(tiers.size() == 3);
  CHECK(tiers[0].switches == 512);
  CHECK(tiers[1].switches == 512);
  CHECK(tiers[2].switches == 256);
  CHECK(tiers[2].up == 0);
  CHECK(folded_clos(2048, 64, 1.0).size() == 2);
  CHECK(folded_clos(2049, 64, 1.0).size() == 3);
  // HDR's 40-port switch: 20 down, 20 up.
  const auto hdr = folded_clos(256, 40, 1.0);
  CHECK(hdr[0].switches == 13);
  CHECK(hdr[1].switches == 7);   // 13 x 20 = 260 uplinks / 40
}

TEST_CASE("bill of materials: one switch for two servers over copper, rail leaves span racks, a part the catalog lacks") {
  const auto two = bom_of(fabric(2, "eth-100g", InterKind::Switch, 1.0));
  CHECK(two.count(PartKind::Switch) == 1);
  CHECK(two.switch_tiers == 1);
  CHECK(two.count(PartKind::Cable) == 16);
  CHECK(two.count(PartKind::Transceiver) == 0);
  const auto rail = bom_of(fabric(8, "ib-ndr", InterKind::RailOptimized, 1.0));
  CHECK(rail.count(PartKind::Transceiver) == 2 * (64 + 2 * 32));   // 64 NIC links; 2 leaves x 32 up, all optical
  const auto opa = bom_of(fabric(2, "opa-100", InterKind::Switch, 1.0));
  CHECK_FALSE(opa.complete());
  CHECK(opa.total().value() > 0);   // the GPUs and servers still priced
  // A single node without a fabric: GPUs and one server.
  const auto box = bom_of(default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 8));
  CHECK(box.items.size() == 2);
  CHECK(box.count(PartKind::Server) == 1);
  CHECK(box.items[1].name == "pcie-gpu-server");
}
