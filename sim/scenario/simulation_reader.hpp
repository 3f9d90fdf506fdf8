// The `simulation` and `reference` sections. Private to the scenario loader.
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace dtsim::scenario {

SimulationSpec read_simulation(const YamlMap& m);
// What a reference may quote: a training step's figures, a served batch's, or a served stream's and its batch's.
enum class ReferenceKind { Training, Serving, Stream };
Reference read_reference(const YamlMap& m, ReferenceKind kind);
CostSpec read_cost(const YamlMap& m);
// Fills what the `cost` section left out: the GPU's catalog prices and the catalog's site defaults (with `kinds`,
// several GPU kinds, gpu_usd stays unset: each kind is bought at its own catalog price).
void resolve_cost(CostSpec& c, const topology::GpuSpec& gpu, bool kinds = false);

// The result fields a `reference` may give, as "a, b, ...".
std::string reference_keys(ReferenceKind kind);

}  // namespace dtsim::scenario
