// Helpers of the memory-plan tests (memory_plan_test.cpp, memory_claims_test.cpp): plans, training and serving
// workloads, in one named namespace so the unity build's batches never meet two file-local copies.
#pragma once

#include <optional>
#include <utility>

#include "topology/catalog.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/model_shapes.hpp"
#include "workloads/schedule.hpp"

namespace dtsim::workloads::memory_cases {

using topology::Precision;
using topology::find_gpu;
using namespace test_shapes;  // the shapes and units every memory case is written in
using namespace dtsim::literals;

inline ParallelPlan par(int tp, int pp = 1, int dp = 1, int vpp = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.vpp = vpp;
  return p;
}
inline ParallelPlan gpipe(int pp) {
  ParallelPlan p = par(1, pp);
  p.schedule = Schedule::Gpipe;
  return p;
}
inline ParallelPlan zero(int dp, int stage) {
  ParallelPlan p = par(1, 1, dp);
  p.zero = stage;
  return p;
}

inline Workload training(const ModelSpec& m, ParallelPlan p, int global_batch = 8, Recompute r = Recompute::Selective) {
  TrainingSpec t = training_defaults(Precision::Bf16);
  t.global_batch = global_batch;
  t.recompute = r;
  return {m, t, std::nullopt, std::move(p)};
}

// One sequence of `context` tokens, bf16 KV cache.
inline InferenceSpec one_sequence(int context, Precision weights) {
  InferenceSpec inf;
  inf.context = context;
  inf.weights = weights;
  return inf;
}

inline Workload serving(const ModelSpec& m, Precision weights, int context, ParallelPlan p = {}) {
  return {m, std::nullopt, one_sequence(context, weights), std::move(p)};
}

inline Bytes states(const MemoryPlan& p) { return p.parts.params + p.parts.grads + p.parts.optimizer; }
inline double gib(Bytes b) { return to_gibibytes(b); }

inline constexpr double kLlama7bParams = 6738415616.0;    // 32 x 202,383,360 + 2 x 131,072,000 + 4,096
inline constexpr double kLlama70bParams = 68976648192.0;  // 80 x 855,654,400 + 2 x 262,144,000 + 8,192

}  // namespace dtsim::workloads::memory_cases
