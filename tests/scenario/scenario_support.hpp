// Helpers of the scenario loader's tests: one scenario from YAML text, the error it raises, a cluster to put a job
// on.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario::test {

inline Scenario load_one(const std::string& text, const std::vector<Override>& o = {}) {
  auto all = load_scenarios(text, "test.yaml", o);
  REQUIRE(all.size() == 1);
  return all.front();
}

// The message of the InputError loading `text` raises, or "no error".
inline std::string error_of(const std::string& text, const std::vector<Override>& o = {}) {
  try {
    load_one(text, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// `sections` (YAML lines after the cluster) on one 8-GPU node.
inline std::string with_cluster(const std::string& sections) {
  return "cluster: {gpu: a100-sxm4-80gb}\n" + sections;
}

inline constexpr const char* kLlamaTp8 = R"(
name: llama
cluster: {gpu: a100-sxm4-80gb}
model: {preset: llama2-7b}
training: {global_batch: 64}
parallelism: {tp: 8}
)";

}  // namespace dtsim::scenario::test
