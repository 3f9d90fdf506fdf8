// The `simulation` and `reference` sections. Private to the scenario loader.
#pragma once

#include "sim/cli/scenario.hpp"
#include "sim/cli/yaml_reader.hpp"

namespace dtsim::cli {

SimulationSpec read_simulation(const YamlMap& m);
Reference read_reference(const YamlMap& m);
CostSpec read_cost(const YamlMap& m);
// Fills what the `cost` section left out: the GPU's catalog prices and the catalog's site defaults.
void resolve_cost(CostSpec& c, const topology::GpuSpec& gpu);

// The result fields a `reference` may give, as "a, b, ...".
std::string reference_keys();

}  // namespace dtsim::cli
