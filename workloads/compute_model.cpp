// The roofline of compute_model.hpp: the slower of the compute time at the work's share of the precision's peak
// (scaled by the shape factor) and the memory time at its share of the memory bandwidth, plus one launch
// overhead per kernel.
#include "workloads/compute_model.hpp"

#include <algorithm>
#include <cmath>
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

FlopsPerSecond peak_of(const topology::GpuSpec& gpu, Precision p, bool own) {
  const std::optional<FlopsPerSecond> peak = gpu.peak_for(p);
  if (!peak)
    throw InputError(own ? "training.fp8" : "training.precision", std::string(topology::to_string(p)),
                     fmt::format("gpu {} has no peak for", gpu.name), precisions_of(gpu));
  return *peak;
}

// Share of one dimension's work the GPU does usefully: tiles left partly empty, too few thread blocks.
double fill(double dim, double half) { return dim / (dim + half); }

// The rates of the fused attention kernel `a` runs: FlashAttention-2's, or the architecture's best.
const FusedAttentionRates& fused_rates(const AttentionShape& a, const ArchitectureConstants& arch) {
  return a.flash2 ? arch.flash2 : arch.flash;
}

bool eight_bit(Precision p) { return low_float(p) || p == Precision::Int8 || p == Precision::Int4; }

bool weight_only_precision(Precision p) {
  return p == Precision::Bf16 || p == Precision::Fp16 || p == Precision::Fp32 || p == Precision::Tf32;
}

// The compute efficiency of `k` on `arch` at `p`, its shape factor included.
double compute_efficiency(const Kernel& k, const ArchitectureConstants& arch, Precision p) {
  switch (work_of(k.kind).work) {
    case Work::Gemm: {
      const double large = eight_bit(p) ? arch.gemm_fp8 : arch.gemm;
      if (k.narrow_weights && weight_only_precision(p) && !k.weight_gemm)
        return large * weight_only_shape_factor(*k.gemm, arch);
      if (!k.weight_gemm) return large * gemm_shape_factor(*k.gemm, arch);
      // A backward GEMM is two of equal FLOPs (data and weight gradients), each at its own shape: the rate of
      // the pair is the harmonic mean of theirs.
      const double a = gemm_shape_factor(*k.gemm, arch), b = gemm_shape_factor(*k.weight_gemm, arch);
      return large * 2.0 / (1.0 / a + 1.0 / b);
    }
    case Work::AttentionGemm: return arch.attention_gemm * gemm_shape_factor(*k.gemm, arch);
    case Work::FusedAttention: {
      const FusedAttentionRates& r = fused_rates(*k.attention, arch);
      return (k.pass == Pass::Backward ? r.backward : r.forward) * attention_shape_factor(*k.attention, arch);
    }
    case Work::Stream:
    case Work::AttentionStream: return 1.0;   // no FLOPs: never used
  }
  DTSIM_ASSERT(false, "work missing from compute_efficiency");
}

// A `p` GEMM's measured time over a per-tensor fp8 GEMM's of the same shape on `arch`, in `pass` (0: none
// measured): MXFP8's; NVFP4's, and MXFP4's, which runs on the same block-scaled fp4 instructions (topology's
// catalog gives it NVFP4's peak).
double fp8_time_ratio(const ArchitectureConstants& arch, Precision p, Pass pass) {
  const bool backward = pass == Pass::Backward;
  switch (p) {
    case Precision::Mxfp8: return backward ? arch.mxfp8_backward : arch.mxfp8_forward;
    case Precision::Fp4:
    case Precision::Mxfp4: return backward ? arch.fp4_backward : arch.fp4_forward;
    default: return 0.0;
  }
}

double memory_efficiency(const Kernel& k, const ArchitectureConstants& arch) {
  return work_of(k.kind).work == Work::AttentionStream ? arch.attention_stream : arch.stream;
}

}  // namespace

const KernelWork& work_of(KernelClass k) {
  const std::span<const KernelWork> table = kernel_works();
  const auto it = std::ranges::find(table, k, &KernelWork::kind);
  DTSIM_ASSERT(it != table.end(), "kernel class missing from the work table");
  return *it;
}

// The batch of a batched GEMM (attention over sequences x heads) runs side by side: it multiplies the thread
// blocks available along m, so m * batch stands for m in the parallelism factor. n and k count as they are.
double gemm_shape_factor(const GemmShape& g, const ArchitectureConstants& arch) {
  return fill(g.m * g.batch, arch.gemm_half_mn) * fill(g.n, arch.gemm_half_mn) * fill(g.k, arch.gemm_half_k);
}

// A weight-only GEMM (Marlin class) takes the batch in 16-row m-blocks: a skinny batch wastes only the rows of its
// last block, not the half-filled large tiles gemm_shape_factor charges a cuBLAS GEMM of few rows. The block share
// is capped at one half, where cuBLAS's m / (m + 64) meets it at 64 rows: from there on the weight-only GEMM runs
// as a 16-bit one does, never faster.
double weight_only_shape_factor(const GemmShape& g, const ArchitectureConstants& arch) {
  const double rows = g.m * g.batch;
  const double padded = kWeightOnlyBlockRows * std::ceil(rows / kWeightOnlyBlockRows - 1e-9);
  const double m = std::max(fill(rows, arch.gemm_half_mn), std::min(rows / padded, 0.5));
  return m * fill(g.n, arch.gemm_half_mn) * fill(g.k, arch.gemm_half_k);
}

// The constants are measured at head_dim 128, the common one: smaller heads cost; larger ones are assumed to gain
// nothing (cuDNN's causal forward on an H100 runs head_dim 256 no faster than 128).
double attention_shape_factor(const AttentionShape& a, const ArchitectureConstants& arch) {
  constexpr double kMeasuredHead = 128;
  const FusedAttentionRates& r = fused_rates(a, arch);
  const double head = std::min(1.0, fill(a.head_dim, r.half_head) / fill(kMeasuredHead, r.half_head));
  return fill(a.seq, r.half_seq) * head;
}

FlopCount executed_flops(const Kernel& k) {
  if (!k.attention) return k.flops;
  const AttentionShape& a = *k.attention;
  const double causal = !a.causal ? 1.0 : a.queries > 0 && a.queries < a.seq ? 1.0 - a.queries / (2.0 * a.seq) : 0.5;
  const double recompute = k.pass == Pass::Backward ? 2.5 / 2.0 : 1.0;
  return k.flops * (causal * recompute);
}

namespace {

double sustained_clock(const topology::GpuSpec& gpu, const ArchitectureConstants& arch) {
  const std::optional<FlopsPerSecond> peak = gpu.peak_for(Precision::Bf16) ? gpu.peak_for(Precision::Bf16)
                                                                           : gpu.peak_for(Precision::Fp16);
  if (arch.reference_watts_per_tflops <= 0.0 || !peak || gpu.tdp.value() <= 0.0) return 1.0;
  const double watts_per_tflops = gpu.tdp.value() / (peak->value() / 1e12);
  return std::min(1.0, std::pow(watts_per_tflops / arch.reference_watts_per_tflops, kPowerClockExponent));
}

}  // namespace

double sustained_clock(const topology::GpuSpec& gpu) { return sustained_clock(gpu, architecture(gpu.architecture)); }

Bytes moved_bytes(const Kernel& k, const topology::GpuSpec& gpu) {
  DTSIM_ASSERT(k.transposed.value() <= k.bytes.value(), "a cast's transposed copy is part of its bytes");
  return architecture(gpu.architecture).fp8_any_layout ? k.bytes - k.transposed : k.bytes;
}

KernelTiming kernel_timing(const Kernel& k, const topology::GpuSpec& gpu, Precision precision) {
  const Precision p = k.precision.value_or(precision);
  FlopsPerSecond peak = peak_of(gpu, p, k.precision.has_value());
  if (k.flops.value() <= 0.0 && k.bytes.value() <= 0.0) return {Seconds(0), false};   // no work, no launch
  const ArchitectureConstants& arch = architecture(gpu.architecture);
  Seconds compute(0);
  if (k.flops.value() > 0.0) {
    double efficiency = compute_efficiency(k, arch, p);
    // A GEMM in a format whose time was measured against per-tensor fp8's: fp8's rate over that ratio. A custom
    // GPU with the format's peak and no fp8 one keeps its own peak at gemm_fp8's share.
    const double ratio = fp8_time_ratio(arch, p, k.pass);
    if (ratio > 0.0 && work_of(k.kind).work == Work::Gemm && gpu.peak_for(Precision::Fp8)) {
      peak = *gpu.peak_for(Precision::Fp8);
      efficiency = compute_efficiency(k, arch, Precision::Fp8) / ratio;
    }
    DTSIM_ASSERT(efficiency > 0.0, "a kernel with FLOPs has an empty shape");
    compute = executed_flops(k) * k.load / (peak * (efficiency * sustained_clock(gpu, arch)));
  }
  if (k.dequant_elements > 0 && weight_only_precision(p))
    if (const auto vector = gpu.peak_for(Precision::Fp32))
      compute = std::max(compute, Seconds(k.dequant_elements * kDequantInstructions / (vector->value() / 2)));
  const Seconds memory = moved_bytes(k, gpu) * k.load / (gpu.memory_bandwidth * memory_efficiency(k, arch));
  return {std::max(compute, memory) + k.launches * compute_constants().launch_overhead, memory > compute};
}

Seconds kernel_time(const Kernel& k, const topology::GpuSpec& gpu, Precision precision) {
  return kernel_timing(k, gpu, precision).time;
}

Seconds streaming_time(const Kernel& k, Seconds time) {
  const Work w = work_of(k.kind).work;
  return w == Work::Stream || w == Work::AttentionStream ? time : Seconds(0);
}

Seconds kernels_time(std::span<const Kernel> kernels, const topology::GpuSpec& gpu, Precision precision) {
  Seconds total(0);
  for (const Kernel& k : kernels) total += kernel_time(k, gpu, precision);
  return total;
}

}  // namespace dtsim::workloads
