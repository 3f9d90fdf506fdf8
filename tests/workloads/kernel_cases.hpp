// Helpers of the kernel-list tests (kernels_test.cpp, kernel_bytes_test.cpp, torchtitan_test.cpp): one named
// namespace, so the unity build's batches never meet two file-local copies of the same name.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "workloads/kernels.hpp"

namespace dtsim::workloads::kernel_cases {

inline constexpr double kExact = 1e-12;

inline double rel_err(double got, double want) { return std::abs(got - want) / std::abs(want); }

// GPT-3 175B's shape (Brown et al. 2020): MHA, gelu, ffn = 4h, learned positions; from the preset catalog.
inline const ModelSpec& gpt3_like() { return find_model("gpt3-175b"); }

// LLaMA-2 70B's shape: GQA with 8 KV heads (kv_dim 1024), swiglu, ffn 28672, rotary positions, no biases.
inline const ModelSpec& llama_like() { return find_model("llama2-70b"); }

inline TrainingSpec training(Recompute r = Recompute::None) {
  TrainingSpec t;
  t.recompute = r;
  return t;
}

inline const Kernel& find(const std::vector<Kernel>& ks, KernelClass kind) {
  const auto it = std::ranges::find(ks, kind, &Kernel::kind);
  REQUIRE(it != ks.end());
  return *it;
}

inline double flops_of(const std::vector<Kernel>& ks) { return total_flops(ks).value(); }

inline std::vector<KernelClass> kinds_of(const std::vector<Kernel>& ks) {
  std::vector<KernelClass> out;
  for (const Kernel& k : ks) out.push_back(k.kind);
  return out;
}

}  // namespace dtsim::workloads::kernel_cases
