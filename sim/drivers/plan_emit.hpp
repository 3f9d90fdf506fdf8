// `dtsim plan --emit FRAMEWORK`: the best plan the search found, as that framework's own launch command inside a
// Slurm batch script for the scenario's cluster, so that the plan runs without being typed again.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sim/scenario/scenario.hpp"
#include "workloads/plan.hpp"

namespace dtsim::drivers {

inline constexpr std::string_view kEmitFrameworks = "megatron, torchtitan, deepspeed, nemo (training); vllm, trtllm, sglang (serving)";

// Throws InputError ("--emit") unless `framework` is one of kEmitFrameworks.
void check_emit_framework(std::string_view framework);

// The script for `w` (the plan's resolved workload) on `s`'s cluster. Throws InputError ("--emit") when the
// framework is unknown or cannot run the plan (a choice it has no flag for), naming what it lacks. `skipped`:
// when `w` is not dtsim's best plan, the reason the framework gave for the best one (the header says so).
std::string emit_plan(std::string_view framework, const scenario::Scenario& s, const workloads::Workload& w, double step_s,
                      const std::string& skipped = "");

// The script for a serving plan: `s` the plan's scenario (its split resolved), `run` its run_point row (the
// figures dtsim predicts, written in the script's comment). plan_emit_serving.cpp.
// `rank`: the plan's place in the ranking (1: the best), said in the script's comment.
std::string emit_serving_plan(std::string_view framework, const scenario::Scenario& s, const nlohmann::json& run,
                              int rank = 1);

// Throws InputError ("--emit") when `framework` does not run this kind of scenario (a training framework on a
// serving scenario or a serving engine on a training one), before any search.
void check_emit_kind(std::string_view framework, bool serving);

// The script's file name for a scenario point: "NAME.FRAMEWORK.sbatch", the name reduced to letters, digits, '.',
// '_' and '-'.
std::string emit_file_name(std::string_view framework, const std::string& scenario_name);

}  // namespace dtsim::drivers
