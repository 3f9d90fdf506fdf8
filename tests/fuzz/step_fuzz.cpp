// Fuzz target: scenario YAML text -> one step played on the analytic engine (its StepGraph, timeline, breakdown,
// memory plan and accounting), or the one-line InputError. The scenario fuzzer stops at the loader; this one goes
// on through the generators and the engine, where the host ops, pipeline schedules, MoE exchanges and ZeRO gates
// are built. Run with ./dtsim fuzz step SECONDS.
//
// Only small jobs are played, so that an input costs milliseconds under ASan: at most 64 GPUs, 16 layers, 16
// micro-batches a replica, 64 output tokens, and no request stream (its scheduler plays many iterations). The
// engine is forced to the analytic one (SimGrid keeps process-wide state between runs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/drivers/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

namespace {

constexpr int kMostGpus = 64;
constexpr int kMostLayers = 16;
constexpr int kMostMicroBatches = 16;
constexpr int kMostOutputTokens = 64;

bool small(const dtsim::scenario::Scenario& s) {
  if (!s.workload || s.cluster.gpus() > kMostGpus) return false;
  const auto& w = *s.workload;
  if (w.model.layers > kMostLayers) return false;
  if (w.inference) return !w.inference->requests && w.inference->output_tokens <= kMostOutputTokens;
  if (!w.training) return false;
  const long replica_batch = static_cast<long>(w.training->micro_batch) * w.plan.dp;
  return replica_batch > 0 && w.training->global_batch / replica_batch <= kMostMicroBatches;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (dtsim::scenario::Scenario& s : dtsim::scenario::load_scenarios(text, "fuzz.yaml", {}, false, 1)) {
      if (!small(s)) continue;
      s.simulation.engine = dtsim::scenario::EngineKind::Analytic;
      (void)dtsim::drivers::run_point(s);
    }
  } catch (const dtsim::InputError&) {
  }
  return 0;
}
