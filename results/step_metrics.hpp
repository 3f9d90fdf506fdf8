// A simulated step turned into the figures users compare: step time, throughput, FLOP rates, MFU/HFU, scaling
// efficiency, and where the time went (DESIGN.md's JSON fields).
#pragma once

#include "sim/timeline.hpp"
#include "topology/catalog.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::results {

// Where the critical rank's step went: busy computing (forward and backward), waiting on communication it could
// not hide, waiting on the pipeline (a stage upstream or downstream), and `other`: what every step pays besides
// (the optimizer step, the gradient norm, unscale and zeroing) and any idle time else.
struct Breakdown {
  Seconds compute;
  Seconds exposed_comm;
  Seconds pipeline_bubble;
  Seconds other;
  Seconds interference;   // compute time lost to the communication overlapping it (beside `compute`, which is
                          // the compute ops' own time)
};

struct StepMetrics {
  int gpus = 0;
  Seconds step_time;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;       // model FLOPs (no recompute) per second per GPU, in TFLOP/s
  double hw_tflops_per_gpu = 0;    // recomputed FLOPs included (Megatron-LM SC'21's count)
  double mfu = 0;                  // tflops_per_gpu / dense peak of the compute precision
  double hfu = 0;
  Seconds ideal_time;              // the step's compute on one GPU (as if it fitted) / GPUs
  double scaling_efficiency = 0;   // ideal_time / step_time
  Breakdown breakdown;
  Seconds tp_comm;                 // time the critical rank spends in tensor-parallel collectives
  Bytes tp_comm_bytes;             // tensor-parallel buffer bytes per GPU per step (nccl-tests' size)
};

// `single_gpu_compute`: the same step's total compute time on one GPU (see single_gpu_compute()).
StepMetrics step_metrics(const workloads::StepGraph& g, const sim::Timeline& t, const topology::GpuSpec& gpu,
                         Seconds single_gpu_compute);

// The compute time of `w`'s step with no parallelism at all (tp = pp = dp = 1, same global batch), as if one
// GPU held the whole model: the numerator of scaling efficiency.
Seconds single_gpu_compute(const workloads::Workload& w, const topology::GpuSpec& gpu);

}  // namespace dtsim::results
