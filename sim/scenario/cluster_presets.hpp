// Cluster presets: `cluster: {preset: dgx-h100, nodes: 16}` fills in the machine's keys.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace dtsim::scenario {

// Fills `cluster` (a scenario's cluster map) with its preset's keys, those it gives itself kept, and removes
// `preset`; no-op without one. An unknown name is an InputError at the key's file:line, listing the presets.
void apply_cluster_preset(YAML::Node cluster, const std::string& file);

// The preset names, comma-separated.
std::string cluster_preset_names();

}  // namespace dtsim::scenario
