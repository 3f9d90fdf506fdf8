// A graph file's errors: each names the file, the line, the key or node or edge, the value and what is allowed.
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

TEST_CASE("files: extension, readability, and the file's own errors") {
  check_has(error_of([] { (void)read_user_graph(data("ring4.txt"), "cluster.graph"); }),
            {"cluster.graph", "unknown graph format", "ring4.txt", ".dot, .gv, .yaml, .yml"});
  check_has(error_of([] { (void)read_user_graph(data("missing.yaml")); }), {"cannot read graph file", "missing.yaml"});
  check_has(error_of([] { (void)read_user_graph(data("")); }), {"unknown graph format"});
  check_has(error_of([] { (void)read_user_graph(data("bad_directed.gv")); }), {"bad_directed.gv", "directed graph"});
  check_has(error_of([] { (void)read_user_graph(data("bad_disconnected.yaml")); }),
            {"bad_disconnected.yaml", "disconnected graph: gpu0 cannot reach gpu2", "a connected graph"});
  check_has(error_of([] { (void)read_user_graph(data("bad_kind.yaml")); }),
            {"bad_kind.yaml:3", "nodes[1].kind", "unknown node kind", "'tpu'", "gpu, switch, pcie-switch, cpu, nic"});
}

TEST_CASE("YAML node errors name the file, the line, the key, the value and what is allowed") {
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: tpu}\n")),
            {"g.yaml:3", "nodes[1].kind", "unknown node kind", "tpu", "pcie-switch"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu}\n  - {name: gpu0, kind: gpu}\n"
                                  "  - {name: gpu1, kind: gpu}\n")),
            {"g.yaml:3", "nodes[1].name", "duplicate node name", "gpu0"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu, colour: red}\n")),
            {"g.yaml:3", "nodes[1].colour", "unknown key", "capacity_GBps"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu, machine: one}\n  - {name: gpu1, kind: gpu}\n")),
            {"g.yaml:2", "nodes[0].machine", "not an integer", "'one'"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu, machine: -1}\n  - {name: gpu1, kind: gpu}\n")),
            {"nodes[0].machine", "out of range", "-1", ">= 0"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu}\n  - {name: sw, kind: switch, capacity_GBps: 0}\n"
                                  "  - {name: gpu1, kind: gpu}\n")),
            {"g.yaml:3", "nodes[1].capacity_GBps", "out of range", "> 0"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0}\n  - {name: gpu1, kind: gpu}\n")),
            {"g.yaml:2", "nodes[0].kind", "missing kind"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: [gpu]}\n  - {name: gpu1, kind: gpu}\n")),
            {"g.yaml:2", "nodes[0].kind", "expected a single value"});
}

TEST_CASE("YAML link errors") {
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: nvlink9}")),
            {"g.yaml:5", "links[0].link", "nvlink9", "nvlink3"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: 0, latency_us: 1}")),
            {"g.yaml:5", "links[0].bandwidth_GBps", "out of range", "'0'", "> 0"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: -5, latency_us: 1}")),
            {"g.yaml:5", "links[0].bandwidth_GBps", "out of range", "'-5'"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_Gbps: -100, latency_us: 1}")),
            {"links[0].bandwidth_Gbps", "out of range", "Gb/s"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: 100, bandwidth_Gbps: 800, latency_us: 1}")),
            {"g.yaml:5", "both bandwidth_GBps and bandwidth_Gbps"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu7, link: nvlink3}")),
            {"g.yaml:5", "links[0].b", "undeclared node", "gpu7"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu0, link: nvlink3}")), {"g.yaml:5", "links[0].b", "self-loop"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: nvlink3, speed: 3}")),
            {"g.yaml:5", "links[0].speed", "unknown key", "bandwidth_Gbps"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: fast, latency_us: 1}")),
            {"g.yaml:5", "links[0].bandwidth_GBps", "not a number", "'fast'"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: .nan, latency_us: 1}")),
            {"links[0].bandwidth_GBps", "not a number"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: 100}")),
            {"g.yaml:5", "links[0].latency_us", "missing latency_us"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: 100, latency_us: -1}")),
            {"links[0].latency_us", "out of range", ">= 0"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, bandwidth_GBps: 100, latency_us: 1, efficiency: 1.5}")),
            {"links[0].efficiency", "out of range", "(0, 1]"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: nvlink3, count: 0}")),
            {"links[0].count", "out of range", ">= 1"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: nvlink3, count: 2.5}")),
            {"links[0].count", "not an integer", "2.5"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: nvlink3, count: 2, bandwidth_GBps: 50}")),
            {"links[0].count", "explicit bandwidth"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, count: 2, bandwidth_GBps: 50, latency_us: 1}")),
            {"links[0].count", "without a link class"});
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1}")), {"links[0].bandwidth_GBps", "missing bandwidth"});
  check_has(yaml_error(yaml_link("{a: gpu0, link: nvlink3}")), {"links[0].b", "missing b"});
}

TEST_CASE("YAML line numbers count from 1 in block style too") {
  check_has(yaml_error("nodes:\n  - name: gpu0\n    kind: gpu\n  - name: gpu1\n    kind: gpu\nlinks:\n"
                       "  - a: gpu0\n    b: gpu1\n    bandwidth_GBps: 100\n    latency_us: soon\n"),
            {"g.yaml:10", "links[0].latency_us", "not a number", "soon"});
}

TEST_CASE("YAML document errors") {
  check_has(yaml_error(yaml_link("{a: gpu0, b: gpu1, link: nvlink3}") + "extra: 1\n"),
            {"g.yaml:6", "extra", "unknown key", "nodes, links"});
  check_has(yaml_error("nodes:\n  - {name: gpu0, kind: gpu}\n"), {"g.yaml", "links", "missing list"});
  check_has(yaml_error("nodes: {name: gpu0}\nlinks: []\n"), {"g.yaml:1", "nodes", "expected a list"});
  check_has(yaml_error("nodes:\n  - {name: gpu0, kind: gpu\nlinks: []\n"), {"g.yaml:", "invalid YAML"});
  check_has(yaml_error(""), {"g.yaml", "expected a map"});
  check_has(yaml_error(yaml_nodes("  - {name: gpu0, kind: gpu}\n  - gpu1\n")),
            {"g.yaml:3", "nodes[1]", "expected a map"});
}

TEST_CASE("graph-wide errors: no GPU, disconnected GPUs") {
  check_has(yaml_error("nodes:\n  - {name: sw, kind: switch}\nlinks: []\n"),
            {"cluster.graph", "graph has no GPU", "'g.yaml'"});
  check_has(yaml_error("nodes:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
                       "  - {name: sw, kind: switch}\nlinks:\n  - {a: gpu0, b: sw, link: pcie4}\n"),
            {"cluster.graph", "disconnected graph: gpu0 cannot reach gpu1", "g.yaml", "a connected graph"});
  check_has(dot_error("graph g { gpu0 [kind=gpu]; gpu1 [kind=gpu]; cpu [kind=cpu]; gpu1 -- cpu [link=pcie4] }"),
            {"disconnected graph: gpu0 cannot reach gpu1", "g.dot"});
  CHECK(parse_yaml_graph("nodes:\n  - {name: gpu0, kind: gpu}\nlinks: []\n", "g.yaml").gpus().size() == 1);
}

TEST_CASE("require_connected on a hand-built topology") {
  Topology t;
  t.add_node({.kind = NodeKind::Gpu, .name = "x", .machine = 0, .capacity = {}});
  t.add_node({.kind = NodeKind::Gpu, .name = "y", .machine = 0, .capacity = {}});
  check_has(error_of([&] { require_connected(t, "mine.dot"); }), {"x cannot reach y", "mine.dot"});
  t.add_link({.a = 0, .b = 1, .bandwidth = gigabytes_per_second(1), .latency = {}, .efficiency = 1.0,
              .link_class = "custom"});
  CHECK_NOTHROW(require_connected(t, "mine.dot"));
}

TEST_CASE("DOT errors name the file and the node or edge") {
  check_has(dot_error("digraph g { gpu0 [kind=gpu]; gpu1 [kind=gpu]; gpu0 -> gpu1 [link=nvlink3] }"),
            {"g.dot", "directed graph", "graph { a -- b }"});
  check_has(dot_error("graph g { gpu0 [kind=gpu]; gpu1 [kind=gpu]; gpu0 -> gpu1 [link=nvlink3] }"),
            {"g.dot", "cannot parse DOT", "->"});
  check_has(dot_error("graph g { gpu0 [kind=gpu] "), {"g.dot", "cannot parse DOT"});
  check_has(dot_error("graph g { gpu0 [kind=tpu]; }"), {"g.dot", "gpu0.kind", "unknown node kind", "tpu"});
  check_has(dot_error(dot_edge("link=nvlink9")), {"g.dot", "gpu0--gpu1.link", "nvlink9"});
  check_has(dot_error(dot_edge("bandwidth_GBps=0, latency_us=1")),
            {"g.dot", "gpu0--gpu1.bandwidth_GBps", "out of range"});
  check_has(dot_error(dot_edge("bandwidth_GBps=-3, latency_us=1")), {"gpu0--gpu1.bandwidth_GBps", "out of range"});
  check_has(dot_error(dot_edge("bandwidth_GBps=100, bandwidth_Gbps=800, latency_us=1")), {"g.dot", "both"});
  check_has(dot_error(dot_edge("bandwidth_GBps=100")), {"g.dot", "gpu0--gpu1.latency_us", "missing latency_us"});
  check_has(dot_error(dot_edge("bandwidth_GBps=\"lots\", latency_us=1")), {"g.dot", "not a number", "lots"});
  check_has(dot_error(dot_edge("link=nvlink3, weight=2")),
            {"g.dot", "gpu0--gpu1.weight", "unknown edge attribute", "'2'", "bandwidth_GBps"});
  check_has(dot_error("graph g { gpu0 [kind=gpu, rank=0]; }"), {"g.dot", "gpu0.rank", "unknown node attribute"});
  check_has(dot_error("graph g { rankdir=LR; gpu0 [kind=gpu]; }"), {"g.dot", "rankdir", "unknown graph attribute"});
  check_has(dot_error("graph g { gpu0 [kind=gpu]; gpu0 -- gpu0 [link=nvlink3]; }"),
            {"g.dot", "gpu0--gpu0.b", "self-loop"});
  check_has(dot_error("graph g { gpu0 [kind=gpu]; gpu0 -- gpu9 [link=nvlink3]; }"),   // gpu9 is declared nowhere
            {"g.dot", "gpu9.kind", "missing kind"});
  check_has(dot_error("graph g { sw [kind=switch]; }"), {"g.dot", "graph has no GPU"});
  // 20,000 nested subgraphs overflowed the stack of Boost's recursive parser: the nesting is refused first. Braces
  // and brackets inside quoted strings and comments do not count.
  std::string deep = "graph g { ";
  for (int i = 0; i < 20000; ++i) deep += "subgraph { ";
  check_has(dot_error(deep + "gpu0 [kind=gpu] }"), {"g.dot", "nests subgraphs or attribute lists too deeply", "at most 100"});
  std::string quoted = "graph g { gpu0 [kind=gpu, label=\"" + std::string(500, '{') + "\"] /* " + std::string(500, '[') +
                       " */ gpu1 [kind=gpu]; gpu0 -- gpu1 [link=nvlink3] }";
  CHECK(parse_dot_graph(quoted, "g.dot").gpus().size() == 2);
}

TEST_CASE("a graph file that is not UTF-8 is refused with the line of its first bad byte, DOT and YAML alike") {
  const auto refused = [](auto parse, std::string_view text) {
    try {
      (void)parse(text, "g");
    } catch (const InputError& e) {
      return e.location() == "g:2" &&
             std::string(e.what()).ends_with("(text): not UTF-8: byte '0xCE' (allowed: UTF-8 text)");
    }
    return false;
  };
  CHECK(refused(parse_dot_graph, "graph ring {\n  g0 [kind=gpu, label=\"g\xCE\"];\n}"));
  CHECK(refused(parse_yaml_graph, "nodes:\n  - {name: g\xCE, kind: gpu}\n"));
}
