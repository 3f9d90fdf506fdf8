#include <doctest/doctest.h>
#include <algorithm>
#include <map>
#include <set>

#include "topology/builders.hpp"
#include "topology/routing.hpp"

using namespace dtsim;
using namespace dtsim::topology;

namespace {
std::vector<std::string> names(const Topology& t, NodeId src, const Route& r) {
  std::vector<std::string> out{t.node(src).name};
  NodeId at = src;
  for (const Hop& h : r.hops) {
    CHECK(at == (h.forward ? t.link(h.link).a : t.link(h.link).b));
    at = t.other_end(h.link, at);
    out.push_back(t.node(at).name);
  }
  return out;
}

// 16 single-GPU machines on a leaf-spine fabric of `link`: 4 leaves, 4 spines.
BuiltTopology four_leaves(std::string_view link) {
  ClusterSpec c = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 16, 1);
  c.inter = InterKind::FatTree;
  c.inter_link = find_link(link);
  c.fabric.leaf_ports = 4;
  return build_cluster(c);
}
}  // namespace

TEST_CASE("nvswitch: two hops through the switch, up then down") {
  BuiltTopology b = build_cluster(default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 1, 8));
  Router router(b.topology);
  const auto& g = b.topology.gpus();
  Route r = router.route(g[0], g[5]);
  CHECK(names(b.topology, g[0], r) == std::vector<std::string>{"gpu0", "nvswitch", "gpu5"});
  CHECK(r.hops[0].forward);
  CHECK_FALSE(r.hops[1].forward);
  CHECK(to_microseconds(r.latency) == doctest::Approx(to_microseconds(find_link("nvlink3").latency)));   // one NVLink hop, GPU to GPU
  CHECK(to_gigabytes_per_second(r.bottleneck) == doctest::Approx(300));
}

TEST_CASE("ring: shortest way round, ties go the deterministic way, ECMP sees both") {
  BuiltTopology b = build_cluster(default_cluster("a100-sxm4-80gb", IntraKind::Ring, 1, 8));
  Router router(b.topology);
  const auto& g = b.topology.gpus();
  CHECK(names(b.topology, g[0], router.route(g[0], g[7])) == std::vector<std::string>{"gpu0", "gpu7"});
  CHECK(router.hops(g[0], g[3]) == 3);
  CHECK(names(b.topology, g[0], router.route(g[0], g[4])) ==
        std::vector<std::string>{"gpu0", "gpu1", "gpu2", "gpu3", "gpu4"});
  CHECK(router.route(g[0], g[4]).hops == router.route(g[0], g[4]).hops);
  CHECK(router.equal_cost_routes(g[0], g[4], 16).size() == 2);
}

TEST_CASE("GPUs of one node talk over NVSwitch, not through the NIC they share") {
  ClusterSpec c = default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 2, 8);
  c.inter = InterKind::Switch;
  c.nics_per_node = 1;
  BuiltTopology b = build_cluster(c);
  Router router(b.topology);
  const auto& g = b.topology.gpus();
  CHECK(names(b.topology, g[0], router.route(g[0], g[5])) == std::vector<std::string>{"n0-gpu0", "n0-nvswitch", "n0-gpu5"});
  CHECK(names(b.topology, g[0], router.route(g[0], g[13])) ==
        std::vector<std::string>{"n0-gpu0", "n0-nic0", "fabric", "n1-nic0", "n1-gpu5"});
}

TEST_CASE("fat tree: ECMP spreads pairs over the spines, each pair on one path") {
  BuiltTopology b = four_leaves("eth-100g");
  const auto& g = b.topology.gpus();
  Router plain(b.topology, Routing::Single);
  Router ecmp(b.topology, Routing::Ecmp);
  CHECK(plain.equal_cost_routes(g[0], g[8], 64).size() == 4);
  std::set<std::string> spines_plain, spines_ecmp;
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t d = 8; d < 12; ++d) {
      spines_plain.insert(names(b.topology, g[s], plain.route(g[s], g[d]))[3]);
      auto path = names(b.topology, g[s], ecmp.route(g[s], g[d]));
      CHECK(path.size() == 7);
      spines_ecmp.insert(path[3]);
      CHECK(ecmp.route(g[s], g[d]).hops == ecmp.route(g[s], g[d]).hops);
    }
  CHECK(spines_plain.size() == 1);
  CHECK(spines_ecmp.size() > 1);
}

TEST_CASE("fat tree over InfiniBand: D-mod-K routes by destination, so a ring's flows never share a link") {
  BuiltTopology b = four_leaves("ib-hdr");
  const auto& g = b.topology.gpus();
  Router ecmp(b.topology, Routing::DModK);
  // Every source reaches one destination through one spine; four destinations of a leaf use all four spines.
  std::set<std::string> spines;
  for (std::size_t d = 8; d < 12; ++d) {
    std::set<std::string> to_d;
    for (std::size_t s = 0; s < 4; ++s) to_d.insert(names(b.topology, g[s], ecmp.route(g[s], g[d]))[3]);
    CHECK(to_d.size() == 1);
    spines.insert(*to_d.begin());
  }
  CHECK(spines.size() == 4);
  // A ring's shift by k across leaves: each link direction carries at most one flow (a hash cannot promise it).
  for (const std::size_t shift : {std::size_t{1}, std::size_t{4}, std::size_t{5}}) {
    CAPTURE(shift);
    std::map<std::pair<LinkId, bool>, int> load;
    for (std::size_t i = 0; i < g.size(); ++i)
      for (const Hop& h : ecmp.route(g[i], g[(i + shift) % g.size()]).hops) ++load[{h.link, h.forward}];
    int most = 0;
    for (const auto& [link, flows] : load) most = std::max(most, flows);
    CHECK(most == 1);
  }
}

TEST_CASE("D-mod-K numbers destinations by switch port: 8-GPU nodes on fat-tree and rail-optimized fabrics") {
  // Node ids interleave each machine's GPUs with its NVSwitch and put NICs last, so D-mod-K must number a
  // destination by its NIC's leaf port, not its id: with ids, strides sharing a factor with the spine count
  // pile flows onto a few spines.
  for (const InterKind inter : {InterKind::FatTree, InterKind::RailOptimized}) {
    CAPTURE(to_string(inter));
    ClusterSpec c = default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 64, 8);
    c.inter = inter;
    c.inter_link = find_link("ib-hdr");
    c.fabric.leaf_ports = 32;
    const BuiltTopology b = build_cluster(c);
    const auto& g = b.topology.gpus();
    Router ecmp(b.topology, Routing::DModK);
    for (const std::size_t shift : {std::size_t{1}, std::size_t{4}, std::size_t{5}, std::size_t{32}}) {
      CAPTURE(shift);
      std::map<std::pair<LinkId, bool>, int> load;   // GPU j of node m to GPU j of node m + shift
      for (std::size_t i = 0; i < g.size(); ++i)
        for (const Hop& h : ecmp.route(g[i], g[(i + 8 * shift) % g.size()]).hops) ++load[{h.link, h.forward}];
      int most = 0;
      for (const auto& [link, flows] : load) most = std::max(most, flows);
      CHECK(most == 1);
    }
  }
}

// Flows per directed leaf-to-spine link when each GPU i of the 16 sends to GPU (i + 8) mod 16: 16 flows, each
// crossing one uplink of its leaf and one downlink into the other leaf. By hand: each leaf sends 4 flows up to
// 4 spines and takes 4 down; single puts all 4 of a leaf on spine0 (4 per link, the other 3 spines idle);
// D-mod-K gives the 4 destinations of a leaf 4 different spines (1 per link); adaptive spreads each flow over
// the 4 spines, a quarter of a flow per link (1 per link in total).
TEST_CASE("routing modes on a fat tree: flows per spine link, counted by hand") {
  BuiltTopology b = four_leaves("ib-hdr");
  const auto& g = b.topology.gpus();
  const auto spine_links = [&](Routing routing) {
    Router router(b.topology, routing);
    std::map<std::pair<LinkId, bool>, double> load;
    for (std::size_t i = 0; i < g.size(); ++i)
      for (const auto& layer : router.route_layers(g[i], g[(i + 8) % g.size()]))
        for (const Hop& h : layer)
          if (b.topology.node(b.topology.link(h.link).a).kind == NodeKind::Switch &&
              b.topology.node(b.topology.link(h.link).b).kind == NodeKind::Switch)
            load[{h.link, h.forward}] += 1.0 / static_cast<double>(layer.size());
    return load;
  };
  const auto single = spine_links(Routing::Single);
  CHECK(single.size() == 8);   // 4 leaves x (one uplink + one downlink), all through spine0
  for (const auto& [link, flows] : single) {
    CHECK(flows == 4.0);
    CHECK(b.topology.node(b.topology.link(link.first).b).name == "spine0");
  }
  for (Routing spread : {Routing::DModK, Routing::Adaptive}) {
    CAPTURE(to_string(spread));
    const auto load = spine_links(spread);
    CHECK(load.size() == 32);   // every leaf-spine link, both directions
    for (const auto& [link, flows] : load) CHECK(flows == doctest::Approx(1.0));
  }
  // Hashing spreads the pairs but promises nothing: every flow still crosses one spine link each way.
  const auto hashed = spine_links(Routing::Ecmp);
  double total = 0;
  for (const auto& [link, flows] : hashed) total += flows;
  CHECK(total == 32.0);
  CHECK(hashed.size() > 8);
}

TEST_CASE("adaptive routing: the equal hops of one fan-out form one layer, and a single path has none") {
  BuiltTopology b = four_leaves("ib-hdr");
  const auto& g = b.topology.gpus();
  Router adaptive(b.topology, Routing::Adaptive);
  const auto layers = adaptive.route_layers(g[0], g[8]);
  REQUIRE(layers.size() == 6);   // GPU, NIC link (PCIe box: GPU -> PCIe switch -> NIC), leaf, spines, leaf, ...
  std::vector<std::size_t> widths;
  for (const auto& l : layers) widths.push_back(l.size());
  CHECK(std::count(widths.begin(), widths.end(), 4) == 2);   // up to the 4 spines, down from them
  CHECK(adaptive.route_layers(g[0], g[8]) == layers);        // deterministic
  CHECK(adaptive.route_layers(g[0], g[1]).size() == Router(b.topology).route(g[0], g[1]).hops.size());
  // Within a leaf there is one path, so every routing gives the single route.
  for (const auto& l : adaptive.route_layers(g[0], g[1])) CHECK(l.size() == 1);
}

TEST_CASE("default routing follows the fabric: D-mod-K over InfiniBand, ECMP over Ethernet, single without spines") {
  CHECK(default_routing(four_leaves("ib-hdr").topology) == Routing::DModK);
  CHECK(default_routing(four_leaves("eth-100g").topology) == Routing::Ecmp);
  CHECK(default_routing(build_cluster(default_cluster("a100-sxm4-80gb", IntraKind::Ring, 1, 8)).topology) ==
        Routing::Single);
  // The spec's rule (told without building) agrees with the built fabric's, on every builder fabric.
  for (const char* link : {"ib-ndr", "eth-400g"})
    for (InterKind i : {InterKind::None, InterKind::Switch, InterKind::FatTree, InterKind::RailOptimized})
      for (int nodes : {1, 4, 16}) {
        if (i == InterKind::None && nodes > 1) continue;
        ClusterSpec c = default_cluster("h100-sxm5-80gb", IntraKind::NvSwitch, nodes, 8);
        c.inter = i;
        c.inter_link = find_link(link);
        c.fabric.leaf_ports = 16;
        CAPTURE(link);
        CAPTURE(to_string(i));
        CAPTURE(nodes);
        CHECK(c.effective_routing() == default_routing(build_cluster(c).topology));
      }
  ClusterSpec c = default_cluster("h100-sxm5-80gb", IntraKind::NvSwitch, 4, 8);
  c.routing = Routing::Adaptive;
  CHECK(c.effective_routing() == Routing::Adaptive);
  for (Routing r : {Routing::Single, Routing::Ecmp, Routing::DModK, Routing::Adaptive})
    CHECK(parse_routing(to_string(r)) == r);
  CHECK_FALSE(parse_routing("hash").has_value());
}

TEST_CASE("the route cache stays correct past its bound") {
  ClusterSpec c = default_cluster("a100-pcie-80gb", IntraKind::Pcie, 300, 1);
  c.inter = InterKind::Switch;
  BuiltTopology b = build_cluster(c);
  Router router(b.topology);
  const auto& g = b.topology.gpus();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(router.hops(g[i], g[(i + 1) % g.size()]) == 4);
  CHECK(router.hops(g[0], g[1]) == 4);
}

TEST_CASE("full mesh: one direct hop, star: through the hub, PCIe box: up the tree and across the sockets") {
  auto path = [](const char* gpu, IntraKind k, int n, std::size_t s, std::size_t d) {
    BuiltTopology b = build_cluster(default_cluster(gpu, k, 1, n));
    Router router(b.topology);
    const auto& g = b.topology.gpus();
    return names(b.topology, g[s], router.route(g[s], g[d]));
  };
  using V = std::vector<std::string>;
  CHECK(path("a100-sxm4-80gb", IntraKind::FullMesh, 4, 0, 3) == V{"gpu0", "gpu3"});
  CHECK(path("a100-sxm4-80gb", IntraKind::Star, 4, 1, 2) == V{"gpu1", "hub", "gpu2"});
  CHECK(path("a100-pcie-80gb", IntraKind::Pcie, 8, 0, 1) == V{"gpu0", "psw0", "gpu1"});
  CHECK(path("a100-pcie-80gb", IntraKind::Pcie, 8, 0, 3) == V{"gpu0", "psw0", "cpu0", "psw1", "gpu3"});
  CHECK(path("a100-pcie-80gb", IntraKind::Pcie, 8, 0, 6) == V{"gpu0", "psw0", "cpu0", "cpu1", "psw3", "gpu6"});
  BuiltTopology box = build_cluster(default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 8));
  Router router(box.topology);
  const Route r = router.route(box.topology.gpus()[0], box.topology.gpus()[6]);
  // The default CPU of a PCIe 4.0 card (Ice Lake) passes 12.7 GB/s between its sockets.
  CHECK(to_gigabytes_per_second(r.bottleneck) == doctest::Approx(10 * 28.0 / 22));
  CHECK(to_microseconds(r.latency) == doctest::Approx(4 * to_microseconds(find_link("pcie4").latency) +
                                                      to_microseconds(find_link("socket-skylake").latency)));
}

// pair_route (the search from both ends that route uses on large graphs) against the tree route, hop for hop,
// with and without ECMP, on every kind of node and fabric, between GPUs and to and from switches.
TEST_CASE("pair_route finds the tree's route on every topology kind, under every routing") {
  std::vector<ClusterSpec> specs;
  for (IntraKind k : {IntraKind::NvSwitch, IntraKind::FullMesh, IntraKind::Ring, IntraKind::Star, IntraKind::Pcie})
    for (InterKind i : {InterKind::None, InterKind::Switch, InterKind::FatTree, InterKind::RailOptimized}) {
      ClusterSpec c = default_cluster(k == IntraKind::Pcie ? "a100-pcie-80gb" : "a100-sxm4-80gb", k,
                                      i == InterKind::None ? 1 : 6, 4);
      c.inter = i;
      c.fabric.leaf_ports = 4;
      specs.push_back(c);
    }
  ClusterSpec narrow = specs.back();
  narrow.nics_per_node = 1;
  narrow.oversubscription = 2;
  specs.push_back(narrow);
  std::size_t compared = 0;
  for (const ClusterSpec& c : specs) {
    BuiltTopology b = build_cluster(c);
    const auto nodes = static_cast<NodeId>(b.topology.nodes().size());
    for (Routing routing : {Routing::Single, Routing::Ecmp, Routing::DModK}) {
      Router trees(b.topology, routing);
      Router pairs(b.topology, routing);
      for (NodeId s = 0; s < nodes; s += 3)
        for (NodeId d = 0; d < nodes; d += 2) {
          CAPTURE(s);
          CAPTURE(d);
          const Route expected = trees.route(s, d);
          const Route found = pairs.pair_route(s, d);
          REQUIRE(found.hops.size() == expected.hops.size());
          for (std::size_t h = 0; h < found.hops.size(); ++h) {
            CHECK(found.hops[h].link == expected.hops[h].link);
            CHECK(found.hops[h].forward == expected.hops[h].forward);
          }
          ++compared;
        }
    }
  }
  MESSAGE(compared, " routes compared");
  CHECK(compared > 10000);
}
