#include "sim/scenario/scenario_json.hpp"

#include <yaml-cpp/yaml.h>

namespace dtsim::scenario {
namespace {

using nlohmann::json;

// The resolved scenario as JSON (through its YAML): numbers stay numbers, booleans booleans.
json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json out = json::object();
    for (const auto& kv : n) out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return out;
  }
  if (n.IsSequence()) {
    json out = json::array();
    for (const auto& v : n) out.push_back(yaml_to_json(v));
    return out;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;   // quoted in the YAML: a string
  long long i = 0;
  double d = 0;
  bool b = false;
  if (YAML::convert<long long>::decode(n, i)) return i;
  if (YAML::convert<double>::decode(n, d)) return d;
  if (YAML::convert<bool>::decode(n, b)) return b;
  return s;
}

}  // namespace

json point_json(const scenario::SweepPoint& point) {
  json values = json::object();
  for (const auto& [k, v] : point.values) values[k] = yaml_to_json(YAML::Load(v));
  return {{"index", point.index}, {"values", values}};
}

json to_json(const Scenario& s) { return yaml_to_json(YAML::Load(to_yaml(s))); }

json auto_chosen_json(const Scenario& s) {
  json chosen = json::object();
  for (const auto& [key, value] : s.auto_chosen) chosen[key] = yaml_to_json(YAML::Load(value));
  return chosen;
}

}  // namespace dtsim::scenario
