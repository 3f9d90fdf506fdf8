// The `reliability` section and `cluster.storage` (scenario.hpp's ReliabilitySpec and StorageSpec): read with the
// one-line errors, and written back into the resolved scenario.
#pragma once

#include <yaml-cpp/yaml.h>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace dtsim::scenario {

ReliabilitySpec read_reliability(const YamlMap& m);
StorageSpec read_storage(const YamlMap& m);
// The section in full (every failure class with its rate and source) and the storage as given.
void emit_reliability(YAML::Emitter& out, const ReliabilitySpec& r);
void emit_storage(YAML::Emitter& out, const StorageSpec& s);

}  // namespace dtsim::scenario
