// Scenario values that name hardware: a catalog name, or an inline map of the catalog's fields (optionally
// starting from a catalog entry with `base:`).
#pragma once

#include <string>

#include "sim/scenario/yaml_reader.hpp"
#include "topology/catalog.hpp"

namespace dtsim::scenario {

topology::GpuSpec read_gpu(const YamlMap& parent, const std::string& key);
topology::LinkSpec read_link(const YamlMap& parent, const std::string& key);
// The link at `key`, or the catalog entry `fallback` when the key is absent.
topology::LinkSpec read_link_or(const YamlMap& parent, const std::string& key, const std::string& fallback);

}  // namespace dtsim::scenario
