// load_stated_only: a validation table's rows as a user would write them from the source alone.
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/sweep.hpp"
#include "sim/scenario/yaml_reader.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

// Removes `key` from the axes of one sweep map (the sweep itself or its zip): an axis that is the key goes; an
// axis that is a section holding it (a list of whole `training` maps) loses the key in each of its values. False
// when no axis held it.
bool erase_from_axes(YAML::Node axes, const std::string& key) {
  if (!axes || !axes.IsMap()) return false;
  std::vector<std::string> drop;
  bool found = false;
  for (const auto& kv : axes) {
    const std::string axis = kv.first.as<std::string>();
    if (axis == "zip") continue;
    if (axis == key) drop.push_back(axis);
    else if (key.starts_with(axis + ".") && kv.second.IsSequence())
      for (YAML::Node value : kv.second) found = erase_dotted(value, key.substr(axis.size() + 1)) || found;
  }
  for (const auto& axis : drop) axes.remove(axis);
  return found || !drop.empty();
}

}  // namespace

std::vector<Scenario> load_stated_only(const std::string& text, const std::string& file,
                                       const std::vector<Override>& overrides) {
  std::string kept;
  bool any = false;
  for (YAML::Node doc : parse_yaml(text, file)) {
    // Every document is kept (a ratio row's baseline may be in another); keys go only where a document lists them.
    const YAML::Node unstated = doc["reference"] ? doc["reference"]["unstated"] : YAML::Node();
    if (unstated && unstated.IsSequence() && unstated.size() > 0) any = true;
    // What the source states otherwise than the rows set it: the value the source gives, on every row.
    const YAML::Node stated = doc["reference"] ? doc["reference"]["stated"] : YAML::Node();
    if (stated && stated.IsMap() && stated.size() > 0) {
      any = true;
      for (const auto& kv : stated) {
        const std::string key = kv.first.as<std::string>();
        erase_from_axes(doc["sweep"], key);
        if (doc["sweep"]) erase_from_axes(doc["sweep"]["zip"], key);
        set_dotted(doc, key, kv.second, location(file, kv.first));
      }
    }
    for (const auto& k : unstated && unstated.IsSequence() ? unstated : YAML::Node(YAML::NodeType::Sequence)) {
      const std::string key = k.as<std::string>();
      bool found = erase_dotted(doc, key);
      found = erase_from_axes(doc["sweep"], key) || found;
      if (doc["sweep"]) found = erase_from_axes(doc["sweep"]["zip"], key) || found;
      if (!found)   // a misspelt key would leave the second run identical to the first, saying nothing
        throw InputError("reference.unstated", key, "is set by no row of this document, so there is nothing to remove:",
                         "keys the document or its sweep axes set", location(file, k));
    }
    YAML::Emitter out;
    out << doc;
    kept += (kept.empty() ? "" : "---\n") + std::string(out.c_str()) + "\n";
  }
  if (!any) return {};
  return load_scenarios(kept, file, overrides);
}

}  // namespace dtsim::scenario
