// User topology files. Both formats are first read into the same plain records (`Entry`: a key, a location and
// text fields, user_graph_raw.hpp), so one set of rules, here, checks both. YAML edge lists are read here, DOT in
// user_graph_dot.cpp (its node order: by name, digits compared as numbers; write a YAML edge list for any other
// rank order). Links keep the order of the file. Boost and yaml-cpp types stay in these two files.
#include "topology/user_graph.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "topology/user_graph_raw.hpp"

namespace dtsim::topology {
namespace {

using detail::Entry;
using detail::Field;
using detail::kGraphKey;
using detail::kLinkKeys;
using detail::kNodeKeys;
using detail::RawGraph;

constexpr std::string_view kKinds = "gpu, switch, pcie-switch, cpu, nic";

const Field* find(const Entry& e, std::string_view name) {
  const auto it = e.fields.find(name);
  return it == e.fields.end() ? nullptr : &it->second;
}

bool has(const Entry& e, std::string_view name) { return find(e, name) != nullptr; }

[[noreturn]] void reject(const Entry& e, std::string_view name, std::string reason, std::string_view allowed) {
  const Field* f = find(e, name);
  throw InputError(fmt::format("{}.{}", e.key, name), f ? f->text : std::string(), std::move(reason),
                   std::string(allowed), f ? f->location : e.location);
}

const Field& required(const Entry& e, std::string_view name, std::string_view allowed) {
  if (!has(e, name)) reject(e, name, fmt::format("missing {}", name), allowed);
  return *find(e, name);
}

template <class T>
std::optional<T> parse_exact(std::string_view s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A required number; `ok` says whether it is in range, `allowed` says the same in words.
double number(const Entry& e, std::string_view name, bool (*ok)(double), std::string_view allowed) {
  const auto v = parse_exact<double>(required(e, name, allowed).text);
  if (!v || !std::isfinite(*v)) reject(e, name, "not a number", allowed);
  if (!ok(*v)) reject(e, name, "out of range", allowed);
  return *v;
}

int integer(const Entry& e, std::string_view name, int least, std::string_view allowed) {
  const auto v = parse_exact<int>(required(e, name, allowed).text);
  if (!v) reject(e, name, "not an integer", allowed);
  if (*v < least) reject(e, name, "out of range", allowed);
  return *v;
}

bool link_rate(double gbytes) { return gbytes > 0 && gbytes <= to_gigabytes_per_second(kMaxLinkBandwidth); }
bool latency_us(double v) { return v >= 0 && v <= 1e6; }   // a second at most
bool fraction(double v) { return v > 0 && v <= 1; }

void check_keys(const Entry& e, std::span<const std::string_view> keys) {
  for (const auto& [name, field] : e.fields)
    if (std::find(keys.begin(), keys.end(), name) == keys.end())
      reject(e, name, "unknown key", fmt::format("{}", fmt::join(keys, ", ")));
}

Node parse_node(const Entry& e) {
  check_keys(e, kNodeKeys);
  Node n;
  n.name = required(e, "name", "a unique node name").text;
  if (n.name.empty()) reject(e, "name", "empty node name", "a unique node name");
  const auto kind = parse_node_kind(required(e, "kind", kKinds).text);
  if (!kind) reject(e, "kind", "unknown node kind", kKinds);
  n.kind = *kind;
  n.machine = has(e, "machine") ? integer(e, "machine", 0, "an integer >= 0") : 0;
  if (has(e, "capacity_GBps"))
    n.capacity = gigabytes_per_second(number(e, "capacity_GBps", link_rate, "a number > 0 and <= 1e6 (GB/s per direction)"));
  return n;
}

std::optional<BytesPerSecond> explicit_bandwidth(const Entry& e) {
  const bool gbytes = has(e, "bandwidth_GBps");
  const bool gbits = has(e, "bandwidth_Gbps");
  if (gbytes && gbits) reject(e, "bandwidth_Gbps", "both bandwidth_GBps and bandwidth_Gbps given", "one of the two");
  if (gbytes) return gigabytes_per_second(number(e, "bandwidth_GBps", link_rate, "a number > 0 and <= 1e6 (GB/s per direction)"));
  if (gbits)
    return gigabits_per_second(number(e, "bandwidth_Gbps", [](double v) { return link_rate(v / 8); },
                                      "a number > 0 and <= 8e6 (Gb/s per direction)"));
  return std::nullopt;
}

double efficiency_or(const Entry& e, double fallback) {
  return has(e, "efficiency") ? number(e, "efficiency", fraction, "a number in (0, 1]") : fallback;
}

const LinkSpec& catalog_link(const Entry& e) {
  const Field& f = *find(e, "link");
  try {
    return find_link(f.text, fmt::format("{}.link", e.key));
  } catch (const InputError& err) {
    throw InputError(err.key(), err.value(), err.reason(), err.allowed(), f.location);
  }
}

// `link: <class>`: bandwidth is the class's times `count`, or an explicit bandwidth (what to_dot() writes);
// latency_us and efficiency, when given, override the class's.
void apply_class(const Entry& e, Link& l) {
  const LinkSpec& spec = catalog_link(e);
  const auto bandwidth = explicit_bandwidth(e);
  if (bandwidth && has(e, "count")) reject(e, "count", "count with an explicit bandwidth", "count or a bandwidth");
  const int count = has(e, "count") ? integer(e, "count", 1, "an integer >= 1") : 1;
  l.bandwidth = bandwidth ? *bandwidth : spec.bandwidth * static_cast<double>(count);
  if (!link_rate(to_gigabytes_per_second(l.bandwidth)))   // the class times count under the same cap as a bandwidth
    reject(e, "count", fmt::format("gives {:g} GB/s per direction with {}, more than a link carries:",
                                   to_gigabytes_per_second(l.bandwidth), spec.name),
           fmt::format("a count with {} x count <= 1e6 GB/s", spec.name));
  l.latency = has(e, "latency_us")
                  ? microseconds(number(e, "latency_us", latency_us, "a number >= 0 and <= 1e6 (a second)"))
                  : spec.latency;
  l.efficiency = efficiency_or(e, spec.efficiency);
  l.link_class = spec.name;
  l.by_destination = destination_routed(spec.family);
  l.switch_reduction = spec.switch_reduction;
  l.switch_port_rate = spec.switch_port_rate;
}

void apply_custom(const Entry& e, Link& l) {
  if (has(e, "count")) reject(e, "count", "count without a link class", "count together with link: <class>");
  const auto bandwidth = explicit_bandwidth(e);
  if (!bandwidth) reject(e, "bandwidth_GBps", "missing bandwidth", "link: <class>, bandwidth_GBps or bandwidth_Gbps");
  l.bandwidth = *bandwidth;
  l.latency =
      microseconds(number(e, "latency_us", latency_us, "a number >= 0 and <= 1e6 (a second; required with a bandwidth)"));
  l.efficiency = efficiency_or(e, 1.0);
  l.link_class = "custom";
}

using NameIndex = std::map<std::string, NodeId, std::less<>>;

NodeId endpoint(const Entry& e, std::string_view end, const NameIndex& ids) {
  const auto it = ids.find(required(e, end, "a declared node name").text);
  if (it == ids.end()) reject(e, end, "link to an undeclared node", "a declared node name");
  return it->second;
}

Link parse_link(const Entry& e, const NameIndex& ids) {
  check_keys(e, kLinkKeys);
  Link l;
  l.a = endpoint(e, "a", ids);
  l.b = endpoint(e, "b", ids);
  if (l.a == l.b) reject(e, "b", "self-loop: a link from a node to itself", "a node other than a");
  const Field* cls = find(e, "link");
  if (cls && cls->text != "custom")
    apply_class(e, l);
  else
    apply_custom(e, l);
  return l;
}

Topology build(const RawGraph& raw, std::string_view origin) {
  Topology topo;
  NameIndex ids;
  for (const Entry& e : raw.nodes) {
    Node n = parse_node(e);
    if (ids.contains(n.name)) reject(e, "name", "duplicate node name", "a unique node name");
    std::string name = n.name;
    ids.emplace(std::move(name), topo.add_node(std::move(n)));
  }
  for (const Entry& e : raw.links) topo.add_link(parse_link(e, ids));
  require_connected(topo, origin);
  return topo;
}

std::string yaml_location(std::string_view origin, const YAML::Node& n) {
  return fmt::format("{}:{}", origin, n.Mark().line + 1);
}

Entry yaml_entry(const YAML::Node& item, std::string key, std::string_view origin) {
  Entry e{std::move(key), yaml_location(origin, item), {}};
  if (!item.IsMap()) throw InputError(e.key, "", "expected a map of keys", "{key: value, ...}", e.location);
  for (const auto& kv : item) {
    const std::string name = kv.first.Scalar();
    const std::string where = yaml_location(origin, kv.second);
    if (!kv.second.IsScalar())
      throw InputError(fmt::format("{}.{}", e.key, name), "", "expected a single value", "a name or a number", where);
    if (!e.fields.emplace(name, Field{kv.second.Scalar(), where}).second)
      throw InputError(fmt::format("{}.{}", e.key, name), kv.second.Scalar(), "duplicate key", "each key once", where);
  }
  return e;
}

std::vector<Entry> yaml_list(const YAML::Node& root, const std::string& name, std::string_view origin) {
  const YAML::Node list = root[name];
  if (!list) throw InputError(name, "", "missing list", "a list", fmt::format("{}:1", origin));
  if (!list.IsSequence()) throw InputError(name, "", "expected a list", "a list", yaml_location(origin, list));
  std::vector<Entry> entries;
  std::size_t i = 0;
  for (const YAML::Node& item : list) entries.push_back(yaml_entry(item, fmt::format("{}[{}]", name, i++), origin));
  return entries;
}

YAML::Node load_yaml(std::string_view text, std::string_view origin) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(std::string(kGraphKey), e.msg, "invalid YAML", "a YAML map with keys nodes and links",
                     fmt::format("{}:{}", origin, e.mark.line + 1));
  }
}

RawGraph yaml_raw(std::string_view text, std::string_view origin) {
  const YAML::Node root = load_yaml(text, origin);
  if (!root.IsMap())
    throw InputError(std::string(kGraphKey), std::string(origin), "expected a map with keys nodes and links",
                     "nodes, links", fmt::format("{}:1", origin));
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key != "nodes" && key != "links")
      throw InputError(key, "", "unknown key", "nodes, links", yaml_location(origin, kv.first));
  }
  return RawGraph{yaml_list(root, "nodes", origin), yaml_list(root, "links", origin)};
}

std::optional<std::string> read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;   // before opening: a FIFO would block
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return in.bad() ? std::nullopt : std::optional(text.str());
}

std::vector<std::size_t> components(const Topology& topo) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  Graph g(topo.nodes().size());
  for (const Link& l : topo.links()) boost::add_edge(l.a, l.b, g);
  std::vector<std::size_t> component(topo.nodes().size());
  boost::connected_components(g, component.data());
  return component;
}

}  // namespace

Topology read_user_graph(const std::string& path, std::string_view key) {
  constexpr std::string_view kFormats = ".dot, .gv, .yaml, .yml";
  const std::string ext = std::filesystem::path(path).extension().string();
  const bool dot = ext == ".dot" || ext == ".gv";
  if (!dot && ext != ".yaml" && ext != ".yml")
    throw InputError(std::string(key), path, "unknown graph format", std::string(kFormats));
  const auto text = read_text(path);
  if (!text) throw InputError(std::string(key), path, "cannot read graph file", std::string(kFormats));
  return dot ? parse_dot_graph(*text, path) : parse_yaml_graph(*text, path);
}

Topology parse_dot_graph(std::string_view text, std::string_view origin) {
  require_utf8(text, origin);
  return build(detail::dot_raw_graph(text, origin), origin);
}

Topology parse_yaml_graph(std::string_view text, std::string_view origin) {
  require_utf8(text, origin);
  return build(yaml_raw(text, origin), origin);
}

void require_connected(const Topology& topo, std::string_view origin) {
  if (topo.gpus().empty())
    throw InputError(std::string(kGraphKey), std::string(origin), "graph has no GPU", "at least one node of kind gpu");
  const std::vector<std::size_t> component = components(topo);
  const Node& first = topo.node(topo.gpus().front());
  for (const NodeId gpu : topo.gpus())
    if (component[gpu] != component[topo.gpus().front()])
      throw InputError(std::string(kGraphKey), std::string(origin),
                       fmt::format("disconnected graph: {} cannot reach {}", first.name, topo.node(gpu).name),
                       "a connected graph");
}

}  // namespace dtsim::topology
