#include "sim/scenario/sweep.hpp"

#include <fmt/format.h>

#include "sim/scenario/yaml_reader.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

// One axis: keys that advance together (one key unless zipped) and their values, position by position.
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<YAML::Node>> values;   // values[position][key]
};

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(key.substr(start, dot - start));
  parts.push_back(key.substr(start));
  return parts;
}

std::vector<YAML::Node> axis_values(const YAML::Node& list, const std::string& key, const std::string& file) {
  if (!list.IsSequence() || list.size() == 0)
    throw InputError(key, list.IsScalar() ? list.Scalar() : "", "a sweep axis needs a non-empty list of values, got",
                     "a list such as [1, 2, 4]", location(file, list));
  std::vector<YAML::Node> out;
  for (const auto& v : list) out.push_back(v);
  return out;
}

Axis zipped(const YAML::Node& zip, const std::string& file) {
  if (!zip.IsMap() || zip.size() == 0)
    throw InputError("sweep.zip", "", "expected a map of axes that advance together, got something else", "key: [values]",
                     location(file, zip));
  Axis axis;
  for (const auto& kv : zip) {
    const auto key = kv.first.as<std::string>();
    auto values = axis_values(kv.second, "sweep.zip." + key, file);
    if (!axis.values.empty() && values.size() != axis.values.size())
      throw InputError("sweep.zip." + key, std::to_string(values.size()),
                       fmt::format("zipped axes must have the same length ({}); this one has", axis.values.size()),
                       "lists of equal length", location(file, kv.second));
    axis.values.resize(values.size());
    axis.keys.push_back(key);
    for (std::size_t i = 0; i < values.size(); ++i) axis.values[i].push_back(values[i]);
  }
  return axis;
}

std::vector<Axis> read_axes(const YAML::Node& sweep, const std::string& file) {
  if (!sweep.IsMap() || sweep.size() == 0)
    throw InputError("sweep", "", "expected a map of axes (key: [values]), got something else", "key: [values], zip: {...}",
                     location(file, sweep));
  std::vector<Axis> axes;
  for (const auto& kv : sweep) {
    const auto key = kv.first.as<std::string>();
    if (key == "zip") {
      axes.push_back(zipped(kv.second, file));
      continue;
    }
    Axis axis{{key}, {}};
    for (const auto& v : axis_values(kv.second, "sweep." + key, file)) axis.values.push_back({v});
    axes.push_back(std::move(axis));
  }
  return axes;
}

// "value" for a scalar, "#i" (its position) for a map or list, so names stay short.
std::string short_value(const YAML::Node& v, std::size_t position) {
  if (v.IsScalar()) return v.Scalar();
  if (v.IsNull()) return "null";
  return fmt::format("#{}", position);
}

std::string flow(const YAML::Node& v) {
  YAML::Emitter out;
  out << YAML::Flow << v;
  return out.c_str();
}

}  // namespace

bool erase_dotted(YAML::Node root, const std::string& key) {
  if (!root.IsMap()) return false;
  const auto dot = key.find('.');
  if (dot == std::string::npos) return root.remove(key);
  YAML::Node child = root[key.substr(0, dot)];
  return child && child.IsMap() && erase_dotted(child, key.substr(dot + 1));
}

void set_dotted(YAML::Node root, const std::string& key, const YAML::Node& value, const std::string& where) {
  const auto parts = split_dotted(key);
  for (const auto& p : parts)
    if (p.empty()) throw InputError(key, key, "malformed key", "a dotted key such as cluster.intra", where);
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (!next.IsDefined() || next.IsNull()) chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
    if (!chain.back()[parts[i]].IsMap())
      throw InputError(key, flow(value), fmt::format("'{}' is not a map, so cannot take", parts[i]), "a key inside a map", where);
    chain.push_back(chain.back()[parts[i]]);
  }
  chain.back()[parts.back()] = value;
}

void for_each_sweep_point(const YAML::Node& doc, const std::string& file, std::size_t most_points,
                          const std::function<void(ExpandedPoint&)>& fn) {
  if (!doc.IsMap() || !doc["sweep"].IsDefined()) {
    ExpandedPoint only{doc, SweepPoint{}, "", {}};
    fn(only);
    return;
  }
  const auto axes = read_axes(doc["sweep"], file);
  // The product of the axes' lengths, checked before each multiplication (64 axes of 2 would wrap to 0).
  std::size_t total = 1;
  for (const auto& a : axes) {
    if (total > most_points / a.values.size())
      throw InputError("sweep", fmt::format("{} axes", axes.size()), "has more points than dtsim expands:",
                       fmt::format("at most {} points (the product of the axes' lengths)", most_points),
                       location(file, doc["sweep"]));
    total *= a.values.size();
  }
  // Each point starts from the document without its sweep: cloning the sweep's values into every point made
  // expansion quadratic in them.
  YAML::Node base = YAML::Clone(doc);
  base.remove("sweep");
  for (std::size_t index = 0; index < total; ++index) {
    ExpandedPoint p{YAML::Clone(base), SweepPoint{static_cast<int>(index), {}}, "", {}};
    std::vector<std::string> shorts;
    bool named = false;
    std::size_t rest = index;
    std::vector<std::size_t> position(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {   // last axis fastest
      position[a] = rest % axes[a].values.size();
      rest /= axes[a].values.size();
    }
    for (std::size_t a = 0; a < axes.size(); ++a)
      for (std::size_t k = 0; k < axes[a].keys.size(); ++k) {
        const auto& key = axes[a].keys[k];
        const auto& value = axes[a].values[position[a]][k];
        set_dotted(p.doc, key, YAML::Clone(value), location(file, value));
        p.set_at.emplace_back(key, location(file, value));
        p.point.values.emplace_back(key, flow(value));
        named |= key == "name";
        if (key != "name") shorts.push_back(fmt::format("{}={}", split_dotted(key).back(), short_value(value, position[a])));
      }
    if (!named) p.name_suffix = fmt::format("[{}]", fmt::join(shorts, ","));
    fn(p);
  }
}

}  // namespace dtsim::scenario
