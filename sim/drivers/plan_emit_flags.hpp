// What each framework `dtsim plan --emit` writes for is given: its flags, overrides or configuration file for a
// plan's resolved workload, each throwing the one-line InputError ("--emit") when the framework cannot run the plan.
// Private to plan_emit.cpp; the sources each follows are cited in plan_emit_flags.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/plan.hpp"

namespace dtsim::drivers::emit {

// A Slurm job name: letters, digits, '.', '_' and '-' only (the scenario's name may hold anything).
std::string job_name(const std::string& name);

// Throws InputError("--emit", framework): "cannot run the best plan: <what>".
[[noreturn]] void cannot(std::string_view framework, const std::string& what);

// Megatron-LM's pretrain_gpt.py.
std::vector<std::string> megatron_flags(const workloads::Workload& w);
// Megatron-DeepSpeed's pretrain_gpt.py, and the DeepSpeed configuration file it reads.
std::vector<std::string> deepspeed_flags(const workloads::Workload& w);
std::string deepspeed_config(const workloads::Workload& w);
// torchtitan's flavour and config file for a preset, and its train.py options over that config.
std::optional<std::pair<std::string, std::string>> torchtitan_flavour(const std::string& preset);
std::vector<std::string> torchtitan_flags(const workloads::Workload& w, const std::string& config);
// Megatron-Bridge's recipe for a preset, and run_recipe.py's overrides of it.
std::optional<std::string> bridge_recipe_name(const std::string& preset);
std::vector<std::string> bridge_overrides(const workloads::Workload& w);

}  // namespace dtsim::drivers::emit
