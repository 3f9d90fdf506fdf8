// The scenario's `training` section (training_reader.cpp), its `inference` section (inference_reader.cpp) and the
// readers the sections share, for workload_reader.cpp. Internal to the scenario library.
#pragma once

#include <initializer_list>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_reader.hpp"
#include "workloads/model.hpp"
#include "workloads/training.hpp"

namespace dtsim::scenario::detail {

// `key` of `m` as one of the `allowed` precisions (absent: `fallback`); anything else fails with the list.
topology::Precision read_precision(const YamlMap& m, const std::string& key, topology::Precision fallback,
                                   std::initializer_list<topology::Precision> allowed);

// `key` of `m` is `auto`: left to resolve_auto (the drivers' auto_knobs.hpp), the reader keeps its default for now.
inline bool is_auto(const YamlMap& m, const std::string& key) {
  return m.has(key) && m.text(key) == std::string(kAuto);
}

// A training section (training_reader.cpp): the framework's defaults, then its keys.
workloads::TrainingSpec read_training(const YamlMap& m);

// An inference section: a static batch or a request stream, its scheduler and disaggregation, weight and KV-cache
// precisions; `model` gives the default context, `gpu` the framework's scheduler defaults (framework_scheduler).
workloads::InferenceSpec read_inference(const YamlMap& m, const workloads::ModelSpec& model,
                                        const topology::GpuSpec& gpu, const std::string& file);

}  // namespace dtsim::scenario::detail
