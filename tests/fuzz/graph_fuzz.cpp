// Fuzz target: a user graph's text -> topology, or the one-line InputError. The first byte picks the reader:
// even, Graphviz DOT; odd, the YAML edge list. Run with ./dtsim fuzz graph SECONDS.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topology/error.hpp"
#include "topology/user_graph.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) (void)dtsim::topology::parse_dot_graph(text, "fuzz.dot");
    else (void)dtsim::topology::parse_yaml_graph(text, "fuzz.yaml");
  } catch (const dtsim::InputError&) {
  }
  return 0;
}
