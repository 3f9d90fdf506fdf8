// Activation memory (memory_plan.cpp's training plan): what one in-flight micro-batch of a pipeline stage keeps
// until its backward, after Korthikanti et al. 2022, played over the stage's schedule. Internal to the workloads
// library.
#pragma once

#include "topology/units.hpp"
#include "workloads/plan.hpp"

namespace dtsim::workloads::detail {

inline int last_virtual_stage(const ParallelPlan& p) { return p.pp * p.vpp - 1; }

// A stage's activation peak over its schedule, and the micro-batches in flight at it.
struct StageActivations {
  Bytes peak;
  int in_flight = 0;
};
StageActivations stage_activations(const Workload& w, int stage);

}  // namespace dtsim::workloads::detail
