// The roofline of compute_model.hpp: the slower of the compute time at the class's share of the precision's
// peak (scaled by the GEMM shape factor) and the memory time at the class's share of the memory bandwidth,
// plus one launch overhead per kernel.
#include "workloads/compute_model.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "topology/error.hpp"

namespace dtsim::workloads {
namespace {

// The precisions `gpu` has a dense peak for, in catalog order: what the error offers instead.
std::string precisions_of(const topology::GpuSpec& gpu) {
  std::string out;
  for (const Precision p : topology::kAllPrecisions)
    if (gpu.peak_for(p)) out += fmt::format("{}{}", out.empty() ? "" : ", ", topology::to_string(p));
  return out;
}

FlopsPerSecond peak_of(const topology::GpuSpec& gpu, Precision p) {
  const std::optional<FlopsPerSecond> peak = gpu.peak_for(p);
  if (!peak)
    throw InputError("training.precision", std::string(topology::to_string(p)),
                     fmt::format("gpu {} has no peak for", gpu.name), precisions_of(gpu));
  return *peak;
}

// Share of one dimension's work the GPU does usefully: tiles left partly empty, too few thread blocks.
double fill(double dim, double half) { return dim / (dim + half); }

}  // namespace

const KernelEfficiency& efficiency_of(KernelClass k) {
  const std::span<const KernelEfficiency> table = kernel_efficiencies();
  const auto it = std::ranges::find(table, k, &KernelEfficiency::kind);
  DTSIM_ASSERT(it != table.end(), "kernel class missing from the efficiency table");
  return *it;
}

// The batch of a batched GEMM (attention over sequences x heads) runs side by side: it multiplies the thread
// blocks available along m, so m * batch stands for m in the parallelism factor. n and k count as they are.
double gemm_shape_factor(const GemmShape& g) {
  const double half = compute_constants().gemm_half_dim;
  return fill(g.m * g.batch, half) * fill(g.n, half) * fill(g.k, half);
}

Seconds kernel_time(const Kernel& k, const topology::GpuSpec& gpu, Precision precision) {
  const FlopsPerSecond peak = peak_of(gpu, precision);
  if (k.flops.value() <= 0.0 && k.bytes.value() <= 0.0) return Seconds(0);   // no work, no launch
  const KernelEfficiency& eff = efficiency_of(k.kind);
  const double shape = k.gemm ? gemm_shape_factor(*k.gemm) : 1.0;
  DTSIM_ASSERT(k.flops.value() <= 0.0 || shape > 0.0, "a kernel with FLOPs has an empty GEMM shape");
  const Seconds compute = k.flops.value() > 0.0 ? k.flops / (peak * (eff.compute * shape)) : Seconds(0);
  const Seconds memory = k.bytes / (gpu.memory_bandwidth * eff.memory);
  return std::max(compute, memory) + compute_constants().launch_overhead;
}

Seconds kernels_time(std::span<const Kernel> kernels, const topology::GpuSpec& gpu, Precision precision) {
  Seconds total(0);
  for (const Kernel& k : kernels) total += kernel_time(k, gpu, precision);
  return total;
}

}  // namespace dtsim::workloads
