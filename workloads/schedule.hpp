// Pipeline schedules: the order in which one pipeline rank runs its forward and backward passes.
//
//   GPipe (p=4, m=4), stage 0:  F0 F1 F2 F3 B0 B1 B2 B3
//   1F1B           , stage 0:  F0 F1 F2 F3 B0 B1 B2 B3    (warm-up p-1-s forwards, then one F one B)
//                    stage 3:  F0 B0 F1 B1 F2 B2 F3 B3
//   interleaved 1F1B (vpp chunks per rank): Megatron-LM's order; warm-up (p-s-1)*2 + (vpp-1)*p forwards.
//
// The bubble is not a formula here: it comes from playing these orders with the send/recv dependencies.
#pragma once

#include <vector>

#include "workloads/kernels.hpp"
#include "workloads/plan.hpp"

namespace dtsim::workloads {

struct PipeStep {
  Pass pass = Pass::Forward;   // Forward or Backward (recompute runs inside the backward step)
  int micro_batch = 0;
  int chunk = 0;               // model chunk on this rank, 0..vpp-1; virtual stage = chunk * pp + stage
  friend bool operator==(const PipeStep&, const PipeStep&) = default;
};

// The steps of pipeline rank `stage` for `micro_batches` micro-batches, in execution order; 1F1B's warm-up takes
// `extra_warmup` more forwards (see combined_steps).
std::vector<PipeStep> schedule_order(const ParallelPlan& plan, int micro_batches, int stage, int extra_warmup = 0);

// Whether the step pairs forwards and backwards of different micro-batches (Megatron-Core's combined 1F1B, with
// training.overlap_moe_expert_parallel_comm on an MoE model with ep > 1). Megatron then schedules one more
// warm-up forward "to ensure the forward and backward computations are independent in all 1f1b steps"
// (megatron/core/pipeline_parallel/schedules.py).
bool combined_steps(const Workload& w);
// schedule_order for `w`'s plan, training and stage.
std::vector<PipeStep> schedule_order(const Workload& w, int micro_batches, int stage);
// The forwards before 1F1B's steady state in schedule_order(w, ...): the steady state's forward-backward pairs
// follow them (each forward then a backward, micro_batches * vpp - warm-up pairs; none with GPipe).
int warmup_forwards(const Workload& w, int micro_batches, int stage);

// The most micro-batch activations (forwards whose backward has not run yet, counted per chunk) a rank holds.
int peak_in_flight(const std::vector<PipeStep>& order);

}  // namespace dtsim::workloads
