// The ring search inside one machine (topology/ring_order.hpp): NVLink-bridged pairs side by side, the socket
// interconnect crossed as few times as possible, and the machine's own order kept where no order is better.
#include <doctest/doctest.h>

#include <vector>

#include "topology/builders.hpp"
#include "topology/ring_order.hpp"

using namespace dtsim;
using namespace dtsim::topology;

namespace {

std::vector<std::size_t> order_of(const ClusterSpec& spec) {
  const BuiltTopology built = build_cluster(spec);
  RingOrders rings(built.topology);
  const auto& gpus = built.topology.gpus();
  return rings.order(std::vector<NodeId>(gpus.begin(), gpus.end()));
}

std::vector<std::size_t> identity(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

// Four PCIe cards, one per root port, two per socket (GPUs 0, 1 on socket 0).
ClusterSpec two_sockets_of_two() {
  ClusterSpec spec = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 4);
  spec.pcie.gpus_per_switch = 1;
  spec.pcie.sockets = 2;
  return spec;
}

}  // namespace

TEST_CASE("ring order: a switch and a full mesh keep the machine's order") {
  CHECK(order_of(default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 1, 8)) == identity(8));
  CHECK(order_of(default_cluster("a100-sxm4-80gb", IntraKind::FullMesh, 1, 4)) == identity(4));
  CHECK(order_of(default_cluster("a100-sxm4-80gb", IntraKind::Ring, 1, 8)) == identity(8));
}

TEST_CASE("ring order: the PCIe box's own order already crosses the sockets once each way") {
  CHECK(order_of(default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 8)) == identity(8));
  CHECK(order_of(two_sockets_of_two()) == identity(4));
}

TEST_CASE("ring order: bridges across the sockets put each bridged pair side by side and no edge on the socket link") {
  ClusterSpec spec = two_sockets_of_two();
  spec.pcie.bridges = {{0, 2}, {1, 3}};
  const auto order = order_of(spec);
  // By hand: 0 -> 1 on socket 0, 1 = 3 over the bridge, 3 -> 2 on socket 1, 2 = 0 over the bridge; the
  // identity (0 1 2 3) would cross the sockets twice, at 12.7 GB/s.
  CHECK(order == std::vector<std::size_t>{0, 1, 3, 2});
  // Bridged within each socket, the machine's order already uses both bridges.
  spec.pcie.bridges = {{0, 1}, {2, 3}};
  CHECK(order_of(spec) == identity(4));
}

TEST_CASE("ring order: past the exhaustive size the greedy walk still pairs the bridges") {
  ClusterSpec spec = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 10);
  spec.pcie.gpus_per_switch = 1;
  spec.pcie.sockets = 2;   // GPUs 0-4 on socket 0, 5-9 on socket 1
  spec.pcie.bridges = {{0, 5}, {1, 6}, {2, 7}, {3, 8}, {4, 9}};
  const auto order = order_of(spec);
  REQUIRE(order.size() == 10);
  int bridged = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t a = order[k], b = order[(k + 1) % order.size()];
    bridged += (a + 5 == b || b + 5 == a) ? 1 : 0;
  }
  CHECK(bridged >= 4);
}
