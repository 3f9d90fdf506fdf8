// The roofline of a training step: each kernel of one transformer layer (forward, backward, recompute), of the
// logits and of the optimizer update, placed by its arithmetic intensity against the GPU's ridge point (peak
// FLOP/s of the compute precision / memory bandwidth). What `dtsim report` draws as its roofline chart.
#pragma once

#include <nlohmann/json.hpp>

#include "topology/catalog.hpp"
#include "workloads/plan.hpp"

namespace dtsim::results {

// {"precision", "peak_tflops", "memory_bandwidth_GBps", "ridge_flop_per_byte", "kernels": [{"kernel", "pass",
// "scope", "flops", "bytes", "flop_per_byte", "time_s", "achieved_tflops", "bound"}]}. Kernels are one GPU's share
// (tensor and sequence parallelism applied) for one micro-batch; `bound` is "compute" when the kernel's intensity
// is at or above the ridge point, else "memory". Element-wise kernels count no matrix FLOPs (kernels.hpp), so
// their intensity is 0. Needs a training workload.
nlohmann::json roofline_json(const workloads::Workload& w, const topology::GpuSpec& gpu);

}  // namespace dtsim::results
