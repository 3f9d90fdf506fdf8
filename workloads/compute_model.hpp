// How long a kernel takes on a GPU: a roofline per kernel class.
//
//   time = max(FLOPs / (peak(precision) x efficiency(class) x shape(GEMM)),
//              bytes / (memory bandwidth x memory efficiency(class)))  + launch overhead
//
// shape(GEMM) < 1 for small or skinny GEMMs: each dimension d contributes d / (d + d_half) (tiles left partly
// empty, too few thread blocks to fill the GPU). The constants are data (compute_catalog.cpp), each with its
// source, calibrated against Korthikanti et al.'s 22B layer times (../shared/calibration/layer_times_22b.csv).
#pragma once

#include <span>
#include <string>

#include "topology/catalog.hpp"
#include "workloads/kernels.hpp"

namespace dtsim::workloads {

// Efficiencies of one kernel class: the fraction of the precision's dense peak a large instance reaches, and
// the fraction of memory bandwidth it streams at.
struct KernelEfficiency {
  KernelClass kind;
  double compute = 1.0;
  double memory = 1.0;
  std::string source;
};

struct ComputeConstants {
  double gemm_half_dim = 0;        // d_half of shape(): a GEMM dimension of this size halves efficiency
  Seconds launch_overhead;         // per kernel (fused layers: per kernel of the fused sequence)
  std::string source;
};

std::span<const KernelEfficiency> kernel_efficiencies();
const KernelEfficiency& efficiency_of(KernelClass k);
const ComputeConstants& compute_constants();

// The shape factor in (0, 1].
double gemm_shape_factor(const GemmShape& g);

// Duration of `k` on `gpu` computing in `precision`. Throws InputError (key "training.precision") when the GPU
// has no peak for that precision.
Seconds kernel_time(const Kernel& k, const topology::GpuSpec& gpu, Precision precision);

// Sum over kernels.
Seconds kernels_time(std::span<const Kernel> kernels, const topology::GpuSpec& gpu, Precision precision);

}  // namespace dtsim::workloads
