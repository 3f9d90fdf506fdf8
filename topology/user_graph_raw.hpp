// Internal to topology/: a user topology file as read, before any check. Both formats (YAML edge lists in
// user_graph.cpp, Graphviz DOT in user_graph_dot.cpp) become these plain records, so one set of rules checks both.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::topology::detail {

inline constexpr std::string_view kGraphKey = "cluster.graph";
// Keys of a node and of a link; in DOT the first one (two) come from the node name (edge ends).
inline constexpr std::array<std::string_view, 4> kNodeKeys = {"name", "kind", "machine", "capacity_GBps"};
inline constexpr std::array<std::string_view, 8> kLinkKeys = {"a", "b", "link", "count", "bandwidth_GBps", "bandwidth_Gbps",
                                                       "latency_us", "efficiency"};
// DOT attributes that only style a drawing (dtsim's own to_dot() writes some): accepted and ignored.
inline constexpr std::array<std::string_view, 5> kDotCosmetic = {"label", "shape", "fontname", "style", "color"};

// One value as read from a file, as text.
struct Field {
  std::string text;
  std::string location;   // "file:line", or "file" where the format gives no line
};

// One node or link as read from either format, before any check.
struct Entry {
  std::string key;        // "nodes[2]", "links[0]" (YAML); "gpu0", "gpu0--sw" (DOT)
  std::string location;
  std::map<std::string, Field, std::less<>> fields;
};

struct RawGraph {
  std::vector<Entry> nodes;
  std::vector<Entry> links;
};

// A DOT text's nodes (in natural name order: gpu2 before gpu10) and edges (in file order) as raw records; DOT
// syntax errors, directed graphs, unknown attributes and over-deep nesting are InputErrors naming `origin`.
RawGraph dot_raw_graph(std::string_view text, std::string_view origin);

}  // namespace dtsim::topology::detail
