// The graph-file tests' helpers (user_graph_test.cpp, user_graph_errors_test.cpp): test files, a one-link or
// one-node graph written by the test, the message a reader throws, a graph's total bandwidth.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "topology/error.hpp"
#include "topology/user_graph.hpp"

namespace user_graph_support {

using namespace dtsim;
using namespace dtsim::topology;

inline std::string data(std::string_view name) {
  return std::string(DTSIM_SOURCE_DIR "/tests/data/graphs/") + std::string(name);
}

// The message of the InputError `f` throws; other exceptions escape and fail the test.
template <class F>
inline std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no InputError thrown";
}

inline std::string yaml_error(const std::string& text) {
  return error_of([&] { (void)parse_yaml_graph(text, "g.yaml"); });
}
inline std::string dot_error(const std::string& text) {
  return error_of([&] { (void)parse_dot_graph(text, "g.dot"); });
}

inline void check_has(const std::string& message, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    INFO("expected '", std::string(part), "' in: ", message);
    CHECK(message.find(part) != std::string::npos);
  }
}

// Two GPUs and one link written by the test; the link is on line 5.
inline std::string yaml_link(const std::string& link) {
  return "nodes:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\nlinks:\n  - " + link + "\n";
}
inline std::string yaml_nodes(const std::string& nodes) {
  return "nodes:\n" + nodes + "links:\n  - {a: gpu0, b: gpu1, bandwidth_GBps: 100, latency_us: 1}\n";
}
inline std::string dot_edge(const std::string& attributes) {
  return "graph g {\n  gpu0 [kind=gpu];\n  gpu1 [kind=gpu];\n  gpu0 -- gpu1 [" + attributes + "];\n}\n";
}

inline double total_bandwidth(const Topology& t) {
  double sum = 0;
  for (const Link& l : t.links()) sum += l.bandwidth.value();
  return sum;
}

}  // namespace user_graph_support
