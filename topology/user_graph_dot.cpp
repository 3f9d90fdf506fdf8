// Graphviz DOT topology files, read with Boost's read_graphviz into the raw records of user_graph_raw.hpp.
// Boost creates the vertices sorted by name (it keeps them in a std::map), not in order of appearance; dtsim then
// orders them by name with runs of digits compared as numbers, and that order gives the GPU ranks. DOT gives no
// line numbers: its errors name the file and the node or edge.
#include <algorithm>
#include <numeric>
#include <span>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/user_graph_raw.hpp"

namespace dtsim::topology::detail {
namespace {

using Attributes = std::map<std::string, std::string, std::less<>>;
struct DotNode {
  std::string name;
  Attributes attributes;
};
struct DotEdge {
  Attributes attributes;
};
using DotGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, DotNode, DotEdge>;
using DotVertex = boost::graph_traits<DotGraph>::vertex_descriptor;
using DotEdgeId = boost::graph_traits<DotGraph>::edge_descriptor;

std::string edge_name(const DotGraph& g, DotEdgeId e) {
  return fmt::format("{}--{}", g[boost::source(e, g)].name, g[boost::target(e, g)].name);
}

// Thrown from inside read_graphviz for an attribute no property map takes.
InputError unknown_attribute(const DotGraph& g, const std::string& name, const boost::any& key,
                             const boost::any& value, const std::string& origin) {
  const auto* text = boost::any_cast<std::string>(&value);
  const std::string shown = text ? *text : std::string();
  const auto allowed = [](std::span<const std::string_view> own) {
    return fmt::format("{}, {}", fmt::join(own, ", "), fmt::join(kDotCosmetic, ", "));
  };
  if (const auto* v = boost::any_cast<DotVertex>(&key))
    return InputError(fmt::format("{}.{}", g[*v].name, name), shown, "unknown node attribute",
                      allowed(std::span(kNodeKeys).subspan(1)), origin);
  if (const auto* e = boost::any_cast<DotEdgeId>(&key))
    return InputError(fmt::format("{}.{}", edge_name(g, *e), name), shown, "unknown edge attribute",
                      allowed(std::span(kLinkKeys).subspan(2)), origin);
  return InputError(name, shown, "unknown graph attribute", "none", origin);
}

// Stores each known attribute of a `Key` (vertex or edge) in its `attributes` map; cosmetic ones go to `sink`.
template <class Key>
void take_attributes(boost::dynamic_properties& dp, DotGraph& g, std::span<const std::string_view> names,
                     std::string& sink) {
  for (std::string_view n : names)
    dp.property(std::string(n), boost::make_function_property_map<Key, std::string&>(
                                    [&g, n](Key k) -> std::string& { return g[k].attributes[std::string(n)]; }));
  for (std::string_view n : kDotCosmetic)
    dp.property(std::string(n),
                boost::make_function_property_map<Key, std::string&>([&sink](Key) -> std::string& { return sink; }));
}

// Boost's DOT parser recurses once per nested subgraph or attribute list: 20,000 nested `{` overflowed the stack.
// The nesting is measured first, outside quoted strings and comments, and refused past what any drawing needs.
constexpr int kMostDotNesting = 100;

void check_dot_nesting(std::string_view text, std::string_view origin) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {   // a quoted string, with its escapes
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) break;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i = text.find("*/", i + 2);
      if (i == std::string_view::npos) break;
      ++i;
    } else if (c == '{' || c == '[') {
      if (++depth > kMostDotNesting)
        throw InputError(std::string(kGraphKey), std::string(origin), "nests subgraphs or attribute lists too deeply:",
                         fmt::format("at most {} levels of {{ }} and [ ]", kMostDotNesting), std::string(origin));
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

DotGraph read_dot(std::string_view text, std::string_view origin) {
  check_dot_nesting(text, origin);
  DotGraph g;
  std::string sink;
  boost::dynamic_properties dp(
      [&g, where = std::string(origin)](const std::string& name, const boost::any& key,
                                        const boost::any& value) -> boost::shared_ptr<boost::dynamic_property_map> {
        throw unknown_attribute(g, name, key, value, where);
      });
  dp.property("node_id", boost::get(&DotNode::name, g));
  take_attributes<DotVertex>(dp, g, std::span(kNodeKeys).subspan(1), sink);
  take_attributes<DotEdgeId>(dp, g, std::span(kLinkKeys).subspan(2), sink);
  try {
    boost::read_graphviz(std::string(text), g, dp, "node_id");
  } catch (const boost::directed_graph_error&) {
    throw InputError(std::string(kGraphKey), std::string(origin), "directed graph: links are full-duplex",
                     "an undirected graph: graph { a -- b }", std::string(origin));
  } catch (const boost::graph_exception& e) {
    throw InputError(std::string(kGraphKey), e.what(), "cannot parse DOT", "Graphviz DOT: graph { a -- b }",
                     std::string(origin));
  }
  return g;
}

// Names ordered with runs of digits compared as numbers: gpu2 before gpu10.
bool natural_less(std::string_view x, std::string_view y) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto run = [&](std::string_view s, std::size_t& i) {
    const std::size_t start = i;
    while (i < s.size() && digit(s[i])) ++i;
    const std::string_view r = s.substr(start, i - start);
    return r.substr(std::min(r.find_first_not_of('0'), r.size()));
  };
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (!digit(x[i]) || !digit(y[j])) {
      if (x[i] != y[j]) return x[i] < y[j];
      ++i, ++j;
      continue;
    }
    const std::string_view a = run(x, i), b = run(y, j);
    if (a.size() != b.size()) return a.size() < b.size();
    if (a != b) return a < b;
  }
  return x.size() - i < y.size() - j;
}

Entry dot_entry(std::string key, const Attributes& attributes, const std::string& origin) {
  Entry e{std::move(key), origin, {}};
  for (const auto& [name, value] : attributes) e.fields.emplace(name, Field{value, origin});
  return e;
}

RawGraph dot_raw(const DotGraph& g, std::string_view origin) {
  const std::string where(origin);
  std::vector<DotVertex> order(boost::num_vertices(g));
  std::iota(order.begin(), order.end(), DotVertex{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](DotVertex a, DotVertex b) { return natural_less(g[a].name, g[b].name); });
  RawGraph raw;
  for (DotVertex v : order) {
    raw.nodes.push_back(dot_entry(g[v].name, g[v].attributes, where));
    raw.nodes.back().fields.emplace("name", Field{g[v].name, where});
  }
  for (const DotEdgeId e : boost::make_iterator_range(boost::edges(g))) {
    raw.links.push_back(dot_entry(edge_name(g, e), g[e].attributes, where));
    raw.links.back().fields.emplace("a", Field{g[boost::source(e, g)].name, where});
    raw.links.back().fields.emplace("b", Field{g[boost::target(e, g)].name, where});
  }
  return raw;
}

}  // namespace

RawGraph dot_raw_graph(std::string_view text, std::string_view origin) { return dot_raw(read_dot(text, origin), origin); }

}  // namespace dtsim::topology::detail
