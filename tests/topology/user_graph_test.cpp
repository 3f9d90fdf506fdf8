// Graph files read as topologies: DOT and YAML, link classes and counts, rank order, reading back what to_dot
// writes (their errors: user_graph_errors_test.cpp).
#include "topology/user_graph.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "topology/catalog.hpp"
#include "topology/builders.hpp"
#include "topology/error.hpp"
#include "topology/properties.hpp"
#include "topology/user_graph_support.hpp"

using namespace dtsim;
using namespace dtsim::topology;
using namespace user_graph_support;

TEST_CASE("a DOT ring file: four GPUs, four links of nvlink3 times three") {
  const Topology t = read_user_graph(data("ring4.dot"));
  CHECK(t.nodes().size() == 4);
  CHECK(t.links().size() == 4);
  REQUIRE(t.gpus().size() == 4);
  CHECK(t.node(t.gpus()[3]).name == "gpu3");
  const LinkSpec& nvlink3 = find_link("nvlink3");
  for (const Link& l : t.links()) {
    CHECK(l.bandwidth.value() == doctest::Approx(75e9));
    CHECK(l.latency == nvlink3.latency);
    CHECK(l.efficiency == nvlink3.efficiency);
    CHECK(l.link_class == "nvlink3");
  }
  CHECK(t.node(t.links()[3].a).name == "gpu3");   // links keep the file's order
}

TEST_CASE("a YAML star file: class times count, GB/s, Gb/s and the hub's capacity") {
  const Topology t = read_user_graph(data("star.yaml"));
  CHECK(t.nodes().size() == 5);
  CHECK(t.links().size() == 4);
  CHECK(t.gpus().size() == 4);
  CHECK(t.count(NodeKind::Switch) == 1);
  const Node& hub = t.node(*t.find_node("hub"));
  REQUIRE(hub.capacity.has_value());
  CHECK(hub.capacity->value() == doctest::Approx(300e9));
  CHECK_FALSE(t.node(0).capacity.has_value());
  CHECK(t.link(0).bandwidth.value() == doctest::Approx(300e9));   // nvlink3, count 12
  CHECK(t.link(0).link_class == "nvlink3");
  CHECK(t.link(2).bandwidth.value() == doctest::Approx(300e9));
  CHECK(t.link(2).latency.value() == doctest::Approx(0.7e-6));
  CHECK(t.link(2).efficiency == doctest::Approx(0.8));
  CHECK(t.link(2).link_class == "custom");
  CHECK(t.link(3).bandwidth.value() == doctest::Approx(12.5e9));  // 100 Gb/s is 12.5 GB/s
  CHECK(t.link(3).latency.value() == doctest::Approx(2e-6));
  CHECK(t.link(3).efficiency == 1.0);
}

TEST_CASE("a .yml file with machines, NICs and a fabric switch") {
  const Topology t = read_user_graph(data("two_machines.yml"));
  CHECK(t.nodes().size() == 9);
  CHECK(t.links().size() == 10);
  CHECK(t.gpus().size() == 4);
  CHECK(t.count(NodeKind::Nic) == 4);
  CHECK(t.node(*t.find_node("gpu2")).machine == 1);
  CHECK(t.node(*t.find_node("fabric")).machine == 0);
  CHECK(t.link(6).bandwidth == find_link("eth-200g").bandwidth);
  CHECK_FALSE(t.link(6).by_destination);   // Ethernet: ECMP hashes flows
}

TEST_CASE("InfiniBand links in a graph file are routed by destination, others by a hash") {
  const Topology t = parse_yaml_graph(
      "nodes:\n  - {name: a, kind: gpu}\n  - {name: sw, kind: switch}\n  - {name: b, kind: gpu}\n"
      "links:\n  - {a: a, b: sw, link: ib-ndr}\n  - {a: b, b: sw, link: nvlink4}\n",
      "g.yaml");
  CHECK(t.link(0).by_destination);
  CHECK_FALSE(t.link(1).by_destination);
}

TEST_CASE("YAML GPUs are ranked in the order they are declared") {
  const Topology t = parse_yaml_graph(
      "nodes:\n  - {name: b, kind: gpu}\n  - {name: sw, kind: switch}\n  - {name: a, kind: gpu}\n"
      "links:\n  - {a: a, b: sw, link: nvlink4}\n  - {a: b, b: sw, link: nvlink4}\n",
      "g.yaml");
  REQUIRE(t.gpus().size() == 2);
  CHECK(t.node(t.gpus()[0]).name == "b");
  CHECK(t.node(t.gpus()[1]).name == "a");
}

TEST_CASE("DOT nodes are ordered by name, digits as numbers, node defaults and edge chains apply") {
  const Topology t = parse_dot_graph(
      "graph g { node [kind=gpu]; gpu10; gpu2; gpu1; edge [bandwidth_GBps=50, latency_us=1];"
      " gpu10 -- gpu2 -- gpu1 }",
      "g.dot");
  REQUIRE(t.gpus().size() == 3);
  CHECK(t.node(t.gpus()[0]).name == "gpu1");
  CHECK(t.node(t.gpus()[1]).name == "gpu2");
  CHECK(t.node(t.gpus()[2]).name == "gpu10");
  CHECK(t.links().size() == 2);
  CHECK(t.link(0).bandwidth.value() == doctest::Approx(50e9));
}

TEST_CASE("DOT takes the same attributes as YAML") {
  const Topology t = parse_dot_graph(
      "graph g { gpu0 [kind=gpu, machine=1]; sw [kind=switch, capacity_GBps=450, label=\"NVSwitch\"];"
      " gpu1 [kind=gpu, machine=1];"
      " gpu0 -- sw [link=nvlink4, count=18]; gpu1 -- sw [bandwidth_Gbps=400, latency_us=0.5, efficiency=0.9] }",
      "g.dot");
  CHECK(t.node(*t.find_node("gpu0")).machine == 1);
  CHECK(t.node(*t.find_node("sw")).capacity->value() == doctest::Approx(450e9));
  CHECK(t.link(0).bandwidth.value() == doctest::Approx(450e9));
  CHECK(t.link(1).bandwidth.value() == doctest::Approx(50e9));
  CHECK(t.link(1).efficiency == doctest::Approx(0.9));
}

TEST_CASE("a link class with an explicit bandwidth keeps the class's latency and efficiency (what to_dot writes)") {
  const Topology t = parse_dot_graph(
      dot_edge("link=nvlink3, bandwidth_GBps=150, label=\"150 GB/s\", style=bold, color=red"), "g.dot");
  const LinkSpec& nvlink3 = find_link("nvlink3");
  CHECK(t.link(0).bandwidth.value() == doctest::Approx(150e9));
  CHECK(t.link(0).latency == nvlink3.latency);
  CHECK(t.link(0).efficiency == nvlink3.efficiency);
  CHECK(t.link(0).link_class == "nvlink3");
  const Topology custom =
      parse_yaml_graph(yaml_link("{a: gpu0, b: gpu1, link: custom, bandwidth_GBps: 10, latency_us: 3}"), "g.yaml");
  CHECK(custom.link(0).link_class == "custom");
  CHECK(custom.link(0).latency.value() == doctest::Approx(3e-6));
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: custom, bandwidth_GBps: 10}")),
            {"g.yaml:5", "links[0].latency_us", "missing latency_us"});
}

TEST_CASE("to_dot output reads back into the same graph") {
  for (const char* file : {"ring4.dot", "two_machines.yml"}) {
    CAPTURE(file);
    const Topology original = read_user_graph(data(file));
    const Topology again = parse_dot_graph(to_dot(original), "again.dot");
    CHECK(again.nodes().size() == original.nodes().size());
    CHECK(again.links().size() == original.links().size());
    CHECK(again.gpus().size() == original.gpus().size());
    CHECK(again.count(NodeKind::Nic) == original.count(NodeKind::Nic));
    CHECK(total_bandwidth(again) == doctest::Approx(total_bandwidth(original)));
    CHECK(again.link(0).link_class == original.link(0).link_class);
    CHECK(again.link(0).latency == original.link(0).latency);
  }
}

TEST_CASE("a link class times count stays under the bandwidth cap") {
  // Before: count 1,000,000 of NVLink3 gave 25,000,000 GB/s, past the 1e6 GB/s an explicit bandwidth may have.
  check_has(yaml_error("nodes:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
                       "links:\n  - {a: gpu0, b: gpu1, link: nvlink3, count: 1000000}\n"),
            {"g.yaml:5", "count", "more than a link carries", "<= 1e6 GB/s"});
  check_has(yaml_error("nodes:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
                       "links:\n  - {a: gpu0, b: gpu1, bandwidth_GBps: 10, latency_us: 1e300}\n"),
            {"g.yaml:5", "latency_us", "<= 1e6"});
}

TEST_CASE("a 128-GPU star at the bandwidth cap keeps its bisection") {
  // Found by fuzzing: a star whose links were a class times a count past the cap had bisection 0 (the max-flow's
  // capacities overflowed). Every link is now at most 1e6 GB/s, 40,000 NVLink3 links.
  for (const std::string hub : {"{name: hub, kind: switch}", "{name: hub, kind: switch, capacity_GBps: 1000000}"}) {
    std::string text = "nodes:\n  - " + hub + "\n";
    for (int g = 0; g < 128; ++g) text += "  - {name: gpu" + std::to_string(g) + ", kind: gpu}\n";
    text += "links:\n";
    for (int g = 0; g < 128; ++g) text += "  - {a: gpu" + std::to_string(g) + ", b: hub, link: nvlink3, count: 40000}\n";
    BuiltTopology built{parse_yaml_graph(text, "star128.yaml"), {}};
    built.symmetry.exact = false;
    const TopologyProperties p = describe(built);
    CAPTURE(hub);
    CHECK(p.gpus == 128);
    CHECK(to_gigabytes_per_second(p.injection_per_gpu) == doctest::Approx(1e6));
    // Without a hub capacity the cut is 64 links of 1e6 GB/s; with one, the hub's 1e6 GB/s.
    const double expected = hub.find("capacity") == std::string::npos ? 64e6 : 1e6;
    CHECK(to_gigabytes_per_second(p.bisection) == doctest::Approx(expected));
  }
}

TEST_CASE("a built topology dumped as DOT reads back as the same graph") {
  using namespace dtsim::topology;
  ClusterSpec c = default_cluster("a100-sxm4-80gb", IntraKind::Star, 2, 4);
  c.inter = InterKind::FatTree;
  c.inter_link = LinkSpec{"my-nic", LinkFamily::Ethernet, gigabits_per_second(800), microseconds(1.5), 0.9, false, {}, "test"};
  c.fabric.leaf_ports = 4;
  c.oversubscription = 3.0;
  BuiltTopology built = build_cluster(c);
  Topology back = parse_dot_graph(to_dot(built.topology), "roundtrip.dot");
  REQUIRE(back.nodes().size() == built.topology.nodes().size());
  REQUIRE(back.links().size() == built.topology.links().size());
  CHECK(back.gpus().size() == 8);
  CHECK(back.count(NodeKind::Switch) == built.topology.count(NodeKind::Switch));
  double sum_a = 0, sum_b = 0;
  for (const Link& l : built.topology.links()) sum_a += l.bandwidth.value() * l.efficiency + l.latency.value();
  for (const Link& l : back.links()) sum_b += l.bandwidth.value() * l.efficiency + l.latency.value();
  CHECK(sum_b == doctest::Approx(sum_a).epsilon(1e-12));
  auto hub = back.find_node("n0-hub");
  REQUIRE(hub);
  CHECK(back.node(*hub).capacity.has_value());
  CHECK(back.node(*hub).machine == 0);
  // Same GPU set on each side of the first-half split, so the same least cut.
  std::vector<std::size_t> half_a, half_b;
  for (std::size_t r = 0; r < 8; ++r) {
    if (built.topology.node(built.topology.gpus()[r]).machine == 0) half_a.push_back(r);
    if (back.node(back.gpus()[r]).machine == 0) half_b.push_back(r);
  }
  CHECK(min_cut(back, half_b).value() == doctest::Approx(min_cut(built.topology, half_a).value()));
}

