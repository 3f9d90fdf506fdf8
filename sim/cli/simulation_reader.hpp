// The `simulation` and `reference` sections. Private to the scenario loader.
#pragma once

#include "sim/cli/scenario.hpp"
#include "sim/cli/yaml_reader.hpp"

namespace dtsim::cli {

SimulationSpec read_simulation(const YamlMap& m);
Reference read_reference(const YamlMap& m);

// The result fields a `reference` may give, as "a, b, ...".
std::string reference_keys();

}  // namespace dtsim::cli
