// Shared by the plan tests (plan_cli_test.cpp, plan_emit_cli_test.cpp): a small planning scenario.
#pragma once

#include "cli/cli_support.hpp"

namespace plan_test_support {

using namespace cli_support;

// GPT 1.7B on one 8-GPU A100 box, nothing of the plan fixed: a few hundred candidates, seconds to search.
inline fs::path small_scenario(const std::string& tag, const std::string& extra = "") {
  const fs::path dir = fresh_dir("plan", tag);
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << "name: gpt-1.7b-8xa100\n"
                                   "cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                                   "model: {preset: gpt-1.7b}\n"
                                   "training: {global_batch: 32, tokens: 1e9}\n"
                                << extra;
  return dir / "s.yaml";
}

}  // namespace plan_test_support
