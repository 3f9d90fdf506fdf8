// Single-node builders: counts, link bandwidths and bisection against values worked out by hand.
// A100 SXM4: 12 NVLink3 links of 25 GB/s per direction, so a budget B = 300 GB/s per GPU.
#include <doctest/doctest.h>

#include <vector>

#include "topology/builders.hpp"
#include "topology/error.hpp"
#include "topology/properties.hpp"

using namespace dtsim;
using namespace dtsim::topology;

namespace {
struct Expect {
  IntraKind intra;
  int gpus;
  std::size_t links, switches;
  double link_GBps;      // bandwidth of the GPU's first link
  double bisection_GBps;
  int diameter;
};

TopologyProperties check_builder(const Expect& e, const char* gpu = "a100-sxm4-80gb") {
  CAPTURE(to_string(e.intra));
  CAPTURE(e.gpus);
  ClusterSpec spec = default_cluster(gpu, e.intra, 1, e.gpus);
  BuiltTopology built = build_cluster(spec);
  const Topology& t = built.topology;
  TopologyProperties p = describe(built);
  CHECK(p.gpus == static_cast<std::size_t>(e.gpus));
  CHECK(p.links == e.links);
  CHECK(p.switches == e.switches);
  CHECK(to_gigabytes_per_second(t.link(t.incident(t.gpus()[0]).front()).bandwidth) == doctest::Approx(e.link_GBps));
  CHECK(to_gigabytes_per_second(p.bisection) == doctest::Approx(e.bisection_GBps));
  CHECK(p.bisection_exact);
  CHECK(p.diameter_hops == e.diameter);
  return p;
}
}  // namespace

TEST_CASE("nvswitch: every GPU gives its whole budget to a non-blocking switch") {
  check_builder({IntraKind::NvSwitch, 4, 4, 1, 300, 2 * 300, 2});
  auto p = check_builder({IntraKind::NvSwitch, 8, 8, 1, 300, 4 * 300, 2});
  CHECK(to_gigabytes_per_second(p.injection_per_gpu) == doctest::Approx(300));
}

TEST_CASE("full-mesh: the budget split over n-1 peers") {
  check_builder({IntraKind::FullMesh, 4, 6, 0, 100, 4 * 100, 1});        // 2x2 links cross, 100 GB/s each
  check_builder({IntraKind::FullMesh, 8, 28, 0, 300.0 / 7, 16 * 300.0 / 7, 1});
}

TEST_CASE("ring: the budget split over two neighbours, a balanced cut crosses two links") {
  check_builder({IntraKind::Ring, 4, 4, 0, 150, 2 * 150, 2});
  check_builder({IntraKind::Ring, 8, 8, 0, 150, 2 * 150, 4});
}

TEST_CASE("star: the hub switches one GPU's budget, so bisection is one budget whatever n") {
  check_builder({IntraKind::Star, 4, 4, 1, 300, 300, 2});
  check_builder({IntraKind::Star, 8, 8, 1, 300, 300, 2});
}

TEST_CASE("pcie: the 8-GPU box is cut at the socket interconnect, the 4-GPU box at a switch uplink") {
  // 8 GPUs: 2 sockets x 2 switches x 2 GPUs; the default CPU of a PCIe 4.0 card (Ice Lake) passes 12.7 GB/s of
  // GPU traffic between its sockets (NCCL's 10 x 28/22) < 2 uplinks x 31.5 = 63 GB/s.
  auto p8 = check_builder({IntraKind::Pcie, 8, 8 + 4 + 1, 4, 31.5, 10 * 28.0 / 22, 5}, "a100-pcie-80gb");
  CHECK(p8.cpus == 2);
  // 4 GPUs: 1 socket, 2 switches; the cut crosses one x16 uplink.
  auto p4 = check_builder({IntraKind::Pcie, 4, 4 + 2, 2, 31.5, 31.5, 4}, "a100-pcie-80gb");
  CHECK(p4.cpus == 1);
}

TEST_CASE("pcie: lanes scale the slots and uplinks, bridges join their pairs, the CPU sets the socket link") {
  ClusterSpec spec = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 8);
  spec.pcie.slot_lanes = 8;
  spec.pcie.uplink_lanes = 4;
  spec.pcie.bridges = {{0, 1}, {6, 7}};
  const BuiltTopology built = build_cluster(spec);
  const Topology& t = built.topology;
  std::vector<double> gpu_links, uplinks, bridges;
  for (const Link& l : t.links()) {
    const NodeKind a = t.node(l.a).kind, b = t.node(l.b).kind;
    const double gbps = to_gigabytes_per_second(l.bandwidth);
    if (a == NodeKind::Gpu && b == NodeKind::Gpu) bridges.push_back(gbps);
    else if (a == NodeKind::Gpu || b == NodeKind::Gpu) gpu_links.push_back(gbps);
    else if (a == NodeKind::PcieSwitch || b == NodeKind::PcieSwitch) uplinks.push_back(gbps);
  }
  CHECK(gpu_links == std::vector<double>(8, 31.5 / 2));
  CHECK(uplinks == std::vector<double>(4, 31.5 / 4));
  CHECK(bridges == std::vector<double>(2, 12 * 25.0));   // 12 NVLink3-class links of 25 GB/s
  CHECK(spec.pcie.cpu == "icelake");
  // Two AMD Genoa sockets pass 30.5 GB/s (NCCL's 24 x 28/22), still under two x16 uplinks (63 GB/s).
  ClusterSpec amd = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 8);
  amd.pcie.cpu = "genoa";
  amd.pcie.socket_link = find_link(find_cpu("genoa").socket_link);
  CHECK(to_gigabytes_per_second(describe(build_cluster(amd)).bisection) == doctest::Approx(24 * 28.0 / 22));
  CHECK(default_cluster("h100-pcie-80gb", IntraKind::Pcie, 1, 8).pcie.cpu == "sapphire-rapids");
}

TEST_CASE("every builder spends the same per-GPU budget") {
  for (IntraKind k : {IntraKind::NvSwitch, IntraKind::FullMesh, IntraKind::Ring, IntraKind::Star}) {
    ClusterSpec spec = default_cluster("h100-sxm5-80gb", k, 1, 8);
    BuiltTopology b = build_cluster(spec);
    CHECK(to_gigabytes_per_second(describe(b).injection_per_gpu) == doctest::Approx(450));
  }
}

TEST_CASE("the star's hub is the bottleneck, nvswitch beats ring beats star on bisection") {
  auto bis = [](IntraKind k) { return describe(build_cluster(default_cluster("a100-sxm4-80gb", k, 1, 8))).bisection; };
  CHECK(bis(IntraKind::NvSwitch) > bis(IntraKind::FullMesh));
  CHECK(bis(IntraKind::FullMesh) > bis(IntraKind::Ring));
  CHECK(bis(IntraKind::Ring) >= bis(IntraKind::Star));
}

TEST_CASE("min_cut agrees with a hand count on a split that is not the worst") {
  // Ring of 8, split {0,2,4,6}: every one of the 8 links crosses: 8 x 150 GB/s.
  BuiltTopology b = build_cluster(default_cluster("a100-sxm4-80gb", IntraKind::Ring, 1, 8));
  CHECK(to_gigabytes_per_second(min_cut(b.topology, {0, 2, 4, 6})) == doctest::Approx(8 * 150));
}

TEST_CASE("links_per_gpu overrides the budget") {
  ClusterSpec spec = default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 1, 8);
  spec.links_per_gpu = 4;
  CHECK(to_gigabytes_per_second(spec.gpu_budget()) == doctest::Approx(100));
  spec = default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 1, 8);
  spec.intra_link = find_link("pcie4");   // not the GPU's own link: one x16 slot
  CHECK(to_gigabytes_per_second(spec.gpu_budget()) == doctest::Approx(31.5));
}

TEST_CASE("GPU counts a builder cannot take are input errors") {
  CHECK_THROWS_WITH_AS(build_cluster(default_cluster("a100-sxm4-80gb", IntraKind::Ring, 1, 2)),
                       doctest::Contains("cluster.gpus_per_node"), InputError);
  ClusterSpec pcie = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 6);
  pcie.pcie.gpus_per_switch = 4;
  CHECK_THROWS_WITH_AS(build_cluster(pcie), doctest::Contains("a multiple of 4"), InputError);
  ClusterSpec multi = default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 2, 8);
  CHECK_THROWS_WITH_AS(build_cluster(multi), doctest::Contains("cluster.inter"), InputError);
}

TEST_CASE("a single-GPU node has no intra-node links") {
  BuiltTopology b = build_cluster(default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 1));
  CHECK(b.topology.links().empty());
  CHECK(describe(b).diameter_hops == 0);
}

TEST_CASE("DOT output names every device and link") {
  BuiltTopology b = build_cluster(default_cluster("a100-sxm4-80gb", IntraKind::Star, 1, 4));
  const std::string dot = to_dot(b.topology);
  CHECK(dot.find("\"gpu3\" -- \"hub\"") != std::string::npos);
  CHECK(dot.find("300 GB/s") != std::string::npos);
  // Graphviz IDs may not hold a hyphen unquoted: kinds like pcie-switch must be quoted to render.
  BuiltTopology box = build_cluster(default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 8));
  CHECK(to_dot(box.topology).find("kind=\"pcie-switch\"") != std::string::npos);
}
