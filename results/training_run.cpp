// The expected training run under failures and checkpoints (training_run.hpp).
#include "results/training_run.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace dtsim::results {
namespace {

// Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783, 2024), section 3.3.4 and Table 5: a 54-day snapshot of
// Llama 3 405B pre-training on 16,384 H100 (2,048 servers of 8, one NIC a GPU) had 466 job interruptions, 47 planned
// (automated maintenance) and 419 unexpected, root-caused in Table 5. Each class's rate is its count over that
// cluster's component-hours: GPU classes per GPU, host classes per server, network classes per NIC (a NIC and its
// share of cables and switches), software classes per GPU (a job's software fails in proportion to its size).
// Table 5's printed percentages do not all equal count / 419 (Faulty GPU: 148 is printed as 30.1 %): the counts
// are used.
constexpr double kLlama3Hours = 54.0 * 24.0;
constexpr double kLlama3Gpus = 16384, kLlama3Nodes = 2048, kLlama3Nics = 16384;
constexpr const char* kLlama3 = "Llama 3 (Meta 2024), Table 5: ";

FailureClass llama3(const char* component, double count, FailureScope scope) {
  const double units = scope == FailureScope::Node ? kLlama3Nodes : scope == FailureScope::Nic ? kLlama3Nics : kLlama3Gpus;
  const char* per = scope == FailureScope::Node ? "servers" : scope == FailureScope::Nic ? "NICs" : "GPUs";
  return {component, count / (units * kLlama3Hours), scope,
          std::string(kLlama3) + std::to_string(static_cast<int>(count)) + " in 54 days on " +
              std::to_string(static_cast<long long>(units)) + " " + per};
}

}  // namespace

std::string_view to_string(FailureScope s) {
  switch (s) {
    case FailureScope::Gpu: return "gpu";
    case FailureScope::Node: return "node";
    case FailureScope::Nic: return "nic";
    case FailureScope::Switch: return "switch";
  }
  return "?";
}

const std::vector<FailureClass>& default_failure_classes() {
  static const std::vector<FailureClass> classes = {
      llama3("gpu", 148, FailureScope::Gpu),                   // faulty GPU (NVLink included)
      llama3("gpu_hbm", 72, FailureScope::Gpu),                // GPU HBM3 memory
      llama3("gpu_sram", 19, FailureScope::Gpu),
      llama3("gpu_system_processor", 17, FailureScope::Gpu),
      llama3("silent_data_corruption", 6, FailureScope::Gpu),
      llama3("gpu_thermal", 6, FailureScope::Gpu),             // thermal interface and sensor
      llama3("software", 54 + 7 + 2, FailureScope::Gpu),       // software bugs, NCCL watchdog timeouts, dependencies
      llama3("network", 35, FailureScope::Nic),                // network switch and cable
      llama3("nic", 7, FailureScope::Nic),
      llama3("host", 32, FailureScope::Node),                  // unplanned host maintenance
      llama3("host_hardware", 3 + 3 + 2 + 2 + 2, FailureScope::Node),   // SSD, power supply, chassis, IO board, CPU
      llama3("host_memory", 2, FailureScope::Node),
      llama3("planned_maintenance", 47, FailureScope::Node),   // automated firmware and kernel upgrades
  };
  return classes;
}

namespace {

// A class's failures an hour in this cluster: its rate times the count of what it counts in.
double class_rate(const FailureClass& c, const ClusterCounts& counts) {
  const int n = c.scope == FailureScope::Gpu    ? counts.gpus
                : c.scope == FailureScope::Node ? counts.nodes
                : c.scope == FailureScope::Nic  ? counts.nics
                                                : counts.switches;
  return c.per_hour * n;
}

}  // namespace

double failures_per_hour(const std::vector<FailureClass>& classes, const ClusterCounts& counts) {
  double rate = 0;
  for (const FailureClass& c : classes) rate += class_rate(c, counts);
  return rate;
}

Seconds daly_interval(Seconds delta, Seconds mtbf) {
  const double d = delta.value(), m = mtbf.value();
  if (d >= 2 * m) return mtbf;
  const double x = d / (2 * m);
  return Seconds(std::sqrt(2 * d * m) * (1 + std::sqrt(x) / 3 + x / 9) - d);
}

TrainingRun expected_run(const RunInputs& in) {
  TrainingRun r;
  r.checkpoint = in.checkpoint_block;
  const double work = in.work.value(), delta = in.checkpoint_block.value();
  if (in.failures_per_hour <= 0) {
    // No failures: checkpoints still cost their time; an automatic interval checkpoints once, at the end.
    r.interval = in.interval.value_or(in.work);
    r.interval_auto = !in.interval;
    const double count = std::ceil(work / std::max(r.interval.value(), 1e-9));
    r.wall = Seconds(work + count * delta);
    r.checkpoint_overhead = r.wall.value() > 0 ? count * delta / r.wall.value() : 0;
    r.goodput = r.wall.value() > 0 ? work / r.wall.value() : 1;
    return r;
  }
  const double m = 3600.0 / in.failures_per_hour;
  r.interval = in.interval.value_or(daly_interval(in.checkpoint_block, Seconds(m)));
  r.interval_auto = !in.interval;
  const double tau = std::min(r.interval.value(), std::max(work, 1e-9));
  // An async checkpoint is durable only when its write ends: a failure restarts from the one before, on average
  // `lag` further back, which adds to what each failure costs as a restart does.
  const double restart = in.restart.value() + in.checkpoint_lag.value();
  const double wall = m * std::exp(restart / m) * std::expm1((tau + delta) / m) * work / tau;
  r.wall = Seconds(wall);
  r.goodput = work / wall;
  r.interruptions = wall / m;
  r.interruptions_per_day = 86400.0 / m;
  const double checkpoints = work / tau * delta;
  r.checkpoint_overhead = checkpoints / wall;
  r.restarts = Seconds(r.interruptions * in.restart.value());
  r.lost_work = Seconds(std::max(0.0, wall - work - checkpoints - r.restarts.value()));
  return r;
}

SampledRun sample_run(const RunInputs& in, const TrainingRun& expected, const std::vector<FailureClass>& classes,
                      const ClusterCounts& counts, unsigned long long seed) {
  SampledRun out;
  out.seed = seed;
  const double rate_s = in.failures_per_hour / 3600.0;
  const double work = in.work.value(), delta = in.checkpoint_block.value();
  const double tau = std::min(expected.interval.value(), std::max(work, 1e-9));
  const double restart = in.restart.value() + in.checkpoint_lag.value();
  // Each class's share of the failures, for naming the one that failed.
  std::vector<double> weights;
  double total = 0;
  for (const FailureClass& c : classes) total += weights.emplace_back(class_rate(c, counts));
  // Exponential gaps by inverse transform on the engine's own bits: the same sequence on every standard library.
  std::mt19937_64 engine(seed);
  const auto uniform = [&] { return (static_cast<double>(engine() >> 11) + 0.5) * 0x1.0p-53; };
  const auto gap = [&] { return rate_s > 0 ? -std::log(uniform()) / rate_s : std::numeric_limits<double>::infinity(); };
  const auto which = [&] {
    double u = uniform() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (u < weights[i]) return classes[i].component;
      u -= weights[i];
    }
    return classes.back().component;
  };
  double t = 0, done = 0;          // wall time; work safely checkpointed
  double next = gap();             // the next failure
  constexpr std::size_t kMostFailures = 10'000'000;
  while (done < work) {
    const double segment = std::min(tau, work - done) + delta;   // work to the next checkpoint, and writing it
    if (t + segment <= next) {
      t += segment;
      done += segment - delta;
      continue;
    }
    out.failures.push_back({next, which(), std::min(next - t, segment - delta)});
    if (out.failures.size() > kMostFailures) break;   // a run that cannot finish: its goodput goes to 0
    t = next;
    next = t + gap();
    while (next < t + restart) {   // failed again while restarting: the restart starts over
      t = next;
      out.failures.push_back({t, which(), 0});
      next = t + gap();
    }
    t += restart;
  }
  out.wall = Seconds(t);
  out.goodput = t > 0 ? std::min(1.0, work / t) : 1;
  if (done < work) out.goodput = 0;
  return out;
}

nlohmann::json sampled_run_json(const SampledRun& s) {
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : s.failures)
    failures.push_back({{"at_days", f.at_s / 86400.0}, {"component", f.component}, {"lost_s", f.lost_s}});
  return {{"seed", s.seed},
          {"wall_days", s.wall.value() / 86400.0},
          {"goodput", s.goodput},
          {"interruptions", s.failures.size()},
          {"failures", failures}};
}

nlohmann::json training_run_json(const TrainingRun& r, int gpus, std::optional<double> ideal_usd,
                                 std::optional<double> ideal_MWh) {
  const double work = r.wall.value() * r.goodput;
  const double scale = work > 0 ? r.wall.value() / work : 1;
  const auto scaled = [&](std::optional<double> v) { return v ? nlohmann::json(*v * scale) : nlohmann::json(nullptr); };
  return {{"goodput", r.goodput},
          {"interruptions", r.interruptions},
          {"interruptions_per_day", r.interruptions_per_day},
          {"checkpoint_interval_s", r.interval.value()},
          {"checkpoint_interval_auto", r.interval_auto},
          {"checkpoint_s", r.checkpoint.value()},
          {"checkpoint_overhead", r.checkpoint_overhead},
          {"lost_work_s", r.lost_work.value()},
          {"restart_s_total", r.restarts.value()},
          {"wall_days", r.wall.value() / 86400.0},
          {"gpu_hours", gpus * r.wall.value() / 3600.0},
          {"total_usd", scaled(ideal_usd)},
          {"total_MWh", scaled(ideal_MWh)}};
}

}  // namespace dtsim::results
