// Energy and cost of a step and of a run (results/energy.hpp, results/cost.hpp), worked by hand: the GPU's power
// by what its kernels are bound by, the servers and network around it, PUE; rental and ownership prices.
#include <doctest/doctest.h>

#include "results/cost.hpp"
#include "results/energy.hpp"
#include "workloads/gpt_job.hpp"

using namespace dtsim;
using namespace dtsim::results;

namespace {

workloads::Op compute(double seconds, double memory_seconds) {
  workloads::ComputeOp k;
  k.duration = Seconds(seconds);
  k.memory_time = Seconds(memory_seconds);
  return {k, {}};
}

topology::PowerModelSpec model() { return {0.9, 0.3, 0.5, 4, "test"}; }

}  // namespace

TEST_CASE("energy: a GPU draws by what bounds its kernels, idles the rest of the step, loses time to interference") {
  topology::GpuSpec gpu = topology::find_gpu("a100-sxm4-80gb");
  gpu.tdp = Watts(400);
  gpu.idle_power = Watts(50);
  workloads::StepGraph g = workloads::generate_step(test::gpt_job(1, 1, 2, 2), gpu);   // its ops replaced below
  g.classes.resize(1);
  g.classes[0].ranks = {0, 1};   // two ranks of the class: twice one rank's energy
  g.classes[0].ops = {compute(1.0, 0.2), compute(0.5, 0.5)};
  sim::Timeline t;
  t.classes.resize(1);
  t.classes[0].interference = Seconds(0.25);
  t.step_time = Seconds(3.0);
  // Busy 1.5 s, of which 0.7 s streaming: 0.8 s at 0.9 x 400 = 360 W, 0.7 s at max(0.3 x 400, 50) = 120 W; the
  // 0.25 s lost to interference at 360 W; idle 3 - 1.5 - 0.25 = 1.25 s at 50 W.
  const double rank = 0.8 * 360 + 0.7 * 120 + 0.25 * 360 + 1.25 * 50;
  CHECK(gpu_step_energy(g, t, gpu, model()).value() == doctest::Approx(2 * rank));
  // Memory-bound power never below idle.
  gpu.idle_power = Watts(150);
  const double floor = 0.8 * 360 + 0.7 * 150 + 0.25 * 360 + 1.25 * 150;
  CHECK(gpu_step_energy(g, t, gpu, model()).value() == doctest::Approx(2 * floor));
}

TEST_CASE("energy: servers around the GPUs, the network over the step, PUE on the whole") {
  const StepEnergy e = step_energy(Joules(1000), Seconds(2), Watts(100), model(), 1.5);
  CHECK(e.gpus.value() == 1000);
  CHECK(e.servers.value() == doctest::Approx(1000));   // GPUs half of a server's power: as much again
  CHECK(e.network.value() == doctest::Approx(200));
  CHECK(e.it.value() == doctest::Approx(2200));
  CHECK(e.facility.value() == doctest::Approx(3300));
}

TEST_CASE("cost: rental pays GPU-hours, and a run's length rounds its steps up") {
  const StepEnergy e = step_energy(Joules(1000), Seconds(2), Watts(100), model(), 1.5);
  Prices rental;
  rental.gpu_hour = Dollars(2.0);
  const auto step_only = training_cost(Seconds(36), 1000, 8, e, rental, {});
  CHECK(step_only.step.value() == doctest::Approx(2.0 * 8 * 36 / 3600));   // 0.16 USD
  CHECK(step_only.usd_per_million_tokens == doctest::Approx(160));
  CHECK_FALSE(step_only.total.has_value());
  const nlohmann::json none = cost_json(step_only, rental);
  CHECK(none["days"].is_null());
  CHECK(none["total_usd"].is_null());
  // 10,500 tokens at 1,000 a step: 11 steps.
  const auto run = training_cost(Seconds(36), 1000, 8, e, rental, {10500.0, std::nullopt});
  CHECK(*run.steps == 11);
  CHECK(*run.tokens == 11000);
  CHECK(run.time->value() == doctest::Approx(396));
  CHECK(*run.gpu_hours == doctest::Approx(0.88));
  CHECK(run.total->value() == doctest::Approx(1.76));
  CHECK(run.energy->value() == doctest::Approx(11 * 3300));
  const nlohmann::json j = cost_json(run, rental);
  CHECK(j["mode"] == "rental");
  CHECK(j["days"].get<double>() == doctest::Approx(396.0 / 86400));
  CHECK(j["gpu_hour_usd"].get<double>() == 2.0);
  const nlohmann::json energy = energy_json(e, Seconds(2), 1000, run, 1.5);
  CHECK(energy["step_J"].get<double>() == doctest::Approx(3300));
  CHECK(energy["per_token_J"].get<double>() == doctest::Approx(3.3));
  CHECK(energy["total_MWh"].get<double>() == doctest::Approx(11 * 3300 / 3.6e9));
  CHECK(energy["avg_power_kW"].get<double>() == doctest::Approx(1.65));
  // training.steps instead of tokens: exactly that many.
  CHECK(*training_cost(Seconds(36), 1000, 8, e, rental, {std::nullopt, 5}).steps == 5);
}

TEST_CASE("cost: ownership pays the capital over its life for the run's time, and the facility's energy") {
  const StepEnergy e = step_energy(Joules(1.8e6), Seconds(3600), Watts(0), model(), 1.0);   // 3.6 MJ = 1 kWh a step
  Prices own;
  own.mode = CostMode::Ownership;
  own.capital = Dollars(365.25 * 24 * 4);   // one dollar an hour over 4 years
  own.years = 4;
  own.kwh_usd = 0.10;
  const auto run = training_cost(Seconds(3600), 1e6, 8, e, own, {std::nullopt, 24});
  CHECK(run.step.value() == doctest::Approx(1.0 + 0.10));
  CHECK(run.total->value() == doctest::Approx(24 * 1.10));
  CHECK(run.energy_cost->value() == doctest::Approx(24 * 0.10));
  CHECK(run.usd_per_million_tokens == doctest::Approx(1.10));
  const nlohmann::json j = cost_json(run, own);
  CHECK(j["mode"] == "ownership");
  CHECK(j["capital_usd"].get<double>() == doctest::Approx(35064));
  CHECK(j["energy_usd"].get<double>() == doctest::Approx(2.4));
  CHECK_FALSE(j.contains("gpu_hour_usd"));
}
