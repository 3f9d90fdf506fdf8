// Time, cost and energy to train: a step's figures multiplied by the run's length (training.tokens or
// training.steps), priced as a rental (GPU-hours at a rate that includes power) or as ownership (the bill of
// materials' capital spread over its service life, for the run's wall time, plus the facility's energy at the
// electricity price).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "results/energy.hpp"
#include "topology/units.hpp"

namespace dtsim::results {

enum class CostMode { Rental, Ownership };

// Prices resolved: every field filled (the scenario's `cost` over the catalog's defaults).
struct Prices {
  CostMode mode = CostMode::Rental;
  Dollars gpu_hour;      // rental, per GPU-hour
  Dollars capital;       // ownership: the bill of materials
  double years = 4;      // ownership: service life
  double kwh_usd = 0;    // ownership: electricity
  double pue = 1;
};

// How long the run is: at most one of tokens and steps (neither: per step only).
struct RunLength {
  std::optional<double> tokens;
  std::optional<long long> steps;
};

struct TrainingCost {
  Dollars step;                       // one step
  double usd_per_million_tokens = 0;
  // The run's totals; none without a run length.
  std::optional<double> steps;        // tokens / tokens per step, rounded up
  std::optional<double> tokens;
  std::optional<Seconds> time;
  std::optional<double> gpu_hours;
  std::optional<Dollars> total;
  std::optional<Joules> energy;       // facility energy of the run
  std::optional<Dollars> energy_cost;   // ownership: the electricity part of `total`
};

TrainingCost training_cost(Seconds step, double tokens_per_step, int gpus, const StepEnergy& energy, const Prices& prices,
                           const RunLength& length);

std::string_view to_string(CostMode m);

// Dollars for a table: "11.61 M", "55.0 K", "800".
std::string dollars_text(double usd);

// DESIGN.md's result objects: `energy` {step_J, per_token_J, total_MWh (null without a run length), gpu_step_J,
// it_step_J, avg_power_kW, pue} and `cost` {mode, total_usd, usd_per_million_tokens, gpu_hours, days (null without
// a run length), step_usd, steps, tokens, and the prices used}.
nlohmann::json energy_json(const StepEnergy& e, Seconds step, double tokens_per_step, const TrainingCost& c, double pue);
nlohmann::json cost_json(const TrainingCost& c, const Prices& prices);

}  // namespace dtsim::results
