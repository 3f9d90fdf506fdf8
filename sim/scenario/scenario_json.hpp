// A scenario's parts as the result objects carry them (JSON through their YAML: numbers stay numbers, booleans
// booleans, quoted strings strings).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace dtsim::scenario {

// The resolved scenario (to_yaml's document) as JSON: a result's `scenario`.
nlohmann::json to_json(const Scenario& s);
// A sweep point as rows carry it: {"index": i, "values": {dotted key: value}}.
nlohmann::json point_json(const SweepPoint& point);
// What `auto` chose (Scenario::auto_chosen): {dotted key: value}, a result's `auto_chosen`.
nlohmann::json auto_chosen_json(const Scenario& s);

}  // namespace dtsim::scenario
