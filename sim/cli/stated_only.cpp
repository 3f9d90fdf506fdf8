// load_stated_only: a validation table's rows as a user would write them from the source alone.
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/cli/scenario.hpp"
#include "sim/cli/yaml_reader.hpp"

namespace dtsim::cli {
namespace {

// Removes the dotted `key` from the map `root` (nothing when a step of its path is absent or no map).
void erase_dotted(YAML::Node root, const std::string& key) {
  const auto dot = key.find('.');
  if (!root.IsMap()) return;
  if (dot == std::string::npos) {
    root.remove(key);
    return;
  }
  YAML::Node child = root[key.substr(0, dot)];
  if (child && child.IsMap()) erase_dotted(child, key.substr(dot + 1));
}

// Removes `key` from the axes of one sweep map (the sweep itself or its zip): an axis that is the key goes; an
// axis that is a section holding it (a list of whole `training` maps) loses the key in each of its values.
void erase_from_axes(YAML::Node axes, const std::string& key) {
  if (!axes || !axes.IsMap()) return;
  std::vector<std::string> drop;
  for (const auto& kv : axes) {
    const std::string axis = kv.first.as<std::string>();
    if (axis == "zip") continue;
    if (axis == key) drop.push_back(axis);
    else if (key.starts_with(axis + ".") && kv.second.IsSequence())
      for (YAML::Node value : kv.second) erase_dotted(value, key.substr(axis.size() + 1));
  }
  for (const auto& axis : drop) axes.remove(axis);
}

}  // namespace

std::vector<Scenario> load_stated_only(const std::string& text, const std::string& file,
                                       const std::vector<Override>& overrides) {
  std::string kept;
  for (YAML::Node doc : parse_yaml(text, file)) {
    const YAML::Node unstated = doc["reference"] ? doc["reference"]["unstated"] : YAML::Node();
    if (!unstated || !unstated.IsSequence() || unstated.size() == 0) continue;
    for (const auto& k : unstated) {
      const std::string key = k.as<std::string>();
      erase_dotted(doc, key);
      erase_from_axes(doc["sweep"], key);
      if (doc["sweep"]) erase_from_axes(doc["sweep"]["zip"], key);
    }
    YAML::Emitter out;
    out << doc;
    kept += (kept.empty() ? "" : "---\n") + std::string(out.c_str()) + "\n";
  }
  if (kept.empty()) return {};
  return load_scenarios(kept, file, overrides);
}

}  // namespace dtsim::cli
