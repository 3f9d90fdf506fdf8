// `dtsim compare` as a library call: each point of a scenario (a sweep over clusters) with its best plan, one row
// each, the Pareto front of time against cost marked.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/drivers/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim::drivers {

// The two axes of the front: time and cost to train when the run's length is known (the whole run's, failures and
// checkpoints included: `training_run`), else per million tokens.
struct CompareAxes {
  bool length = false;
  [[nodiscard]] double time(const nlohmann::json& plan) const {
    return length ? run_figure(plan, "wall_days", "days") : 1e6 / plan["tokens_per_s"].get<double>();
  }
  [[nodiscard]] double cost(const nlohmann::json& plan) const {
    return length ? run_figure(plan, "total_usd", "total_usd") : plan["cost"]["usd_per_million_tokens"].get<double>();
  }
  [[nodiscard]] double energy_MWh(const nlohmann::json& plan) const {
    return plan.contains("training_run") ? plan["training_run"]["total_MWh"].get<double>()
                                         : plan["energy"]["total_MWh"].get<double>();
  }
  // The whole run's figure, or the perfect steps' (`cost`) for a plan without one.
  static double run_figure(const nlohmann::json& plan, const char* run_key, const char* cost_key) {
    return plan.contains("training_run") ? plan["training_run"][run_key].get<double>() : plan["cost"][cost_key].get<double>();
  }
};

// The comparison document: {"objective", "axes", "clusters": one row a point, best plan first confirmed on SimGrid
// when `confirm` > 0}. A cluster on which nothing fits is a row that says by how much.
nlohmann::json compare(const std::vector<scenario::Scenario>& scenarios, int confirm, Objective objective);

}  // namespace dtsim::drivers
