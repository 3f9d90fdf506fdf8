#include "results/cost.hpp"

#include <cmath>
#include <fmt/format.h>

namespace dtsim::results {
namespace {

constexpr double kSecondsPerHour = 3600.0;
constexpr double kSecondsPerYear = 365.25 * 24 * kSecondsPerHour;

}  // namespace

std::string dollars_text(double usd) {
  if (usd >= 1e6) return fmt::format("{:.2f} M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("{:.1f} K", usd / 1e3);
  return fmt::format("{:.0f}", usd);
}

std::string_view to_string(CostMode m) { return m == CostMode::Rental ? "rental" : "ownership"; }

TrainingCost training_cost(Seconds step, double tokens_per_step, int gpus, const StepEnergy& energy, const Prices& prices,
                           const RunLength& length) {
  // One step: rental pays GPU-hours; ownership pays its share of the capital's life and its energy.
  const auto cost_of = [&](Seconds time, Joules facility) {
    if (prices.mode == CostMode::Rental) return Dollars(prices.gpu_hour.value() * gpus * time.value() / kSecondsPerHour);
    const double capital = prices.capital.value() * time.value() / (prices.years * kSecondsPerYear);
    return Dollars(capital + to_kilowatt_hours(facility) * prices.kwh_usd);
  };
  TrainingCost out;
  out.step = cost_of(step, energy.facility);
  out.usd_per_million_tokens = out.step.value() / tokens_per_step * 1e6;
  if (!length.tokens && !length.steps) return out;
  const double steps = length.steps ? static_cast<double>(*length.steps) : std::ceil(*length.tokens / tokens_per_step);
  out.steps = steps;
  out.tokens = steps * tokens_per_step;
  out.time = Seconds(step.value() * steps);
  out.gpu_hours = out.time->value() * gpus / kSecondsPerHour;
  out.energy = Joules(energy.facility.value() * steps);
  out.total = cost_of(*out.time, *out.energy);
  if (prices.mode == CostMode::Ownership) out.energy_cost = Dollars(to_kilowatt_hours(*out.energy) * prices.kwh_usd);
  return out;
}

namespace {

template <class T, class Fn>
nlohmann::json or_null(const std::optional<T>& v, Fn fn) {
  return v ? nlohmann::json(fn(*v)) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json energy_json(const StepEnergy& e, Seconds step, double tokens_per_step, const TrainingCost& c, double pue) {
  return {{"step_J", e.facility.value()},
          {"per_token_J", e.facility.value() / tokens_per_step},
          {"total_MWh", or_null(c.energy, [](Joules j) { return to_megawatt_hours(j); })},
          {"gpu_step_J", e.gpus.value()},
          {"it_step_J", e.it.value()},
          {"avg_power_kW", (e.facility / step).value() / 1e3},
          {"pue", pue}};
}

nlohmann::json cost_json(const TrainingCost& c, const Prices& prices) {
  nlohmann::json j = {{"mode", std::string(to_string(prices.mode))},
                      {"total_usd", or_null(c.total, [](Dollars d) { return d.value(); })},
                      {"usd_per_million_tokens", c.usd_per_million_tokens},
                      {"gpu_hours", or_null(c.gpu_hours, [](double h) { return h; })},
                      {"days", or_null(c.time, [](Seconds t) { return t.value() / 86400.0; })},
                      {"step_usd", c.step.value()},
                      {"steps", or_null(c.steps, [](double s) { return s; })},
                      {"tokens", or_null(c.tokens, [](double t) { return t; })}};
  if (prices.mode == CostMode::Rental) {
    j["gpu_hour_usd"] = prices.gpu_hour.value();
  } else {
    j["capital_usd"] = prices.capital.value();
    j["years"] = prices.years;
    j["kwh_usd"] = prices.kwh_usd;
    j["energy_usd"] = or_null(c.energy_cost, [](Dollars d) { return d.value(); });
  }
  return j;
}

}  // namespace dtsim::results
