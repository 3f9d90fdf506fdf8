// Helpers of the compute-model tests (compute_model_test.cpp, compute_precision_test.cpp): one named namespace, so
// the unity build's batches never meet two file-local copies of the same name.
#pragma once

#include "workloads/compute_model.hpp"
#include "workloads/kernels.hpp"

namespace dtsim::workloads::compute_cases {

// A GEMM kernel of shape `g` moving `bytes`, its FLOPs 2 m n k per batch.
inline Kernel gemm(KernelClass kind, GemmShape g, Bytes bytes) {
  Kernel k;
  k.kind = kind;
  k.flops = FlopCount(2 * g.m * g.n * g.k * g.batch);
  k.bytes = bytes;
  k.gemm = g;
  return k;
}

// An element-wise kernel moving `bytes`.
inline Kernel streaming(KernelClass kind, Bytes bytes) {
  Kernel k;
  k.kind = kind;
  k.bytes = bytes;
  return k;
}

inline const ArchitectureConstants& hopper() { return architecture("hopper"); }

}  // namespace dtsim::workloads::compute_cases
