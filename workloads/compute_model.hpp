// How long a kernel takes on a GPU: a roofline per kernel class, with constants per GPU architecture.
//
//   time = max(executed FLOPs / (peak(precision) x efficiency(architecture, work, precision) x shape),
//              bytes / (memory bandwidth x memory efficiency(architecture, work)))  + launch overhead
//
// A kernel class does one kind of work: a dense GEMM, attention's batched GEMMs (unfused), a fused attention
// kernel (FlashAttention class), or streaming (element-wise, timed by bytes). Each architecture (Ampere, Hopper,
// Blackwell, ...) gives that work's efficiency from measurements of its own chips (compute_catalog.cpp, each with
// its source). shape < 1 for small or skinny GEMMs: m and n each contribute d / (d + d_half_mn) (tiles left partly
// empty, too few thread blocks), k contributes k / (k + d_half_k) (the pipeline's prologue and epilogue over a
// short reduction). A fused attention kernel's efficiency grows with the sequence and the head dimension the same
// way; under a causal mask it executes half the score FLOPs the model counts, and its backward recomputes the
// scores (2.5 forward GEMMs of work where the model counts 2).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "topology/catalog.hpp"
#include "workloads/kernels.hpp"

namespace dtsim::workloads {

// The kind of work a kernel class does, which selects its efficiencies.
enum class Work { Gemm, AttentionGemm, FusedAttention, Stream, AttentionStream };

// The work of one kernel class, and why it is timed so.
struct KernelWork {
  KernelClass kind;
  Work work;
  std::string source;
};

// A fused attention kernel's rates (FlashAttention class).
struct FusedAttentionRates {
  double forward = 0;     // forward at long sequences and head_dim 128: executed FLOPs over the 16-bit peak
  double backward = 0;    // its backward likewise
  double half_seq = 0;    // sequence length at which the kernel runs at half that
  double half_head = 0;   // head dimension likewise (relative to 128, never above it)
};

// One GPU architecture's constants.
struct ArchitectureConstants {
  std::string_view name;        // the catalog's GpuSpec::architecture
  double gemm = 0;              // large 16-bit (and tf32/fp32) GEMMs: fraction of the precision's dense peak
  double gemm_fp8 = 0;          // large fp8 (and int8) GEMMs
  double attention_gemm = 0;    // unfused attention's batched GEMMs (Q K^T, probabilities x V)
  double gemm_half_mn = 0;      // d_half of a GEMM's m and n
  double gemm_half_k = 0;       // d_half of its k
  double stream = 0;            // element-wise kernels: fraction of memory bandwidth
  double attention_stream = 0;  // unfused attention's softmax and dropout over the probabilities
  FusedAttentionRates flash;    // the architecture's best fused attention kernel (training.attention: flash)
  FusedAttentionRates flash2;   // FlashAttention-2 (flash2)
  double power_limited = 1;     // share of its benchmarked compute-bound rates a training step keeps (in gemm,
                                // gemm_fp8, attention_gemm, flash and flash2 already; here to say so)
  std::string source;
  // The SKU the constants were measured on (empty: none, no power scaling); the power it has per unit of dense
  // 16-bit peak (its TDP over that peak, W per TFLOP/s) is where the clocks hold (sustained_clock).
  std::string_view reference_gpu;
  double reference_watts_per_tflops = 0;
  // An MXFP8 GEMM's kernel time over a per-tensor-scaled fp8 GEMM's of the same shape (the E8M0 scale of every 32
  // elements loaded and applied inside the main loop, its scales swizzled for cuBLAS before it): forward, and the
  // backward's data- and weight-gradient pair: it takes the fp8 GEMM's time (fp8 peak, gemm_fp8) times this, as
  // the 4-bit GEMMs below. 1: not measured on the architecture, taken as fp8's.
  double mxfp8_forward = 1;
  double mxfp8_backward = 1;
  // An NVFP4 GEMM's kernel time over a per-tensor fp8 GEMM's of the same shape, forward and backward (data and
  // weight gradients): a 4-bit float GEMM (NVFP4 or MXFP4) takes the fp8 GEMM's time (fp8 peak, gemm_fp8) times
  // this. 0: not measured, the 4-bit GEMM at gemm_fp8's share of its own peak.
  double fp4_forward = 0;
  double fp4_backward = 0;
  // cuBLASLt runs per-tensor fp8 GEMMs in any operand layout (Transformer Engine's nvte_is_non_tn_fp8_gemm_supported:
  // compute capability 10.x-11.x and 13.0 on), so a per-tensor cast writes no transposed copy (Kernel::transposed);
  // false: fp8 GEMMs are TN only (Hopper, Ada), the cast writes both. The data-centre Blackwells (sm_100, sm_103)
  // only: a consumer Blackwell (sm_120, RTX 50) is outside TE's range and would need an architecture of its own.
  bool fp8_any_layout = false;
};

struct ComputeConstants {
  Seconds launch_overhead;      // per kernel (fused layers: per kernel of the fused sequence)
  Seconds serving_step_overhead;   // per serving iteration: the host's share the GPU waits for
  std::string source;
  std::string serving_source;
};

std::span<const KernelWork> kernel_works();
const KernelWork& work_of(KernelClass k);
std::span<const ArchitectureConstants> architectures();
// Throws InputError (key `key`) naming the architectures there are when `name` is not one.
const ArchitectureConstants& architecture(std::string_view name, std::string_view key = "cluster.gpu.architecture");
std::string architecture_names();
const ComputeConstants& compute_constants();

// The bytes `k` moves on `gpu`: its bytes, less the transposed fp8 copy (Kernel::transposed) where the GPU's fp8
// GEMMs take any layout (ArchitectureConstants::fp8_any_layout).
Bytes moved_bytes(const Kernel& k, const topology::GpuSpec& gpu);

// The shape factor in (0, 1] on `arch`.
double gemm_shape_factor(const GemmShape& g, const ArchitectureConstants& arch);
// A weight-only GEMM's (narrow weights converted inside a 16-bit GEMM, Marlin class): the batch's rows over whole
// kWeightOnlyBlockRows blocks, at most one half, or gemm_shape_factor's m fill where that is larger (from 64 rows),
// times n's and k's fills as gemm_shape_factor. Assumed alike on GPUs Marlin does not run on (Turing, CDNA): their
// weight-only kernels (GEMV-style at small batches) do not waste 64-row tiles either.
double weight_only_shape_factor(const GemmShape& g, const ArchitectureConstants& arch);
// A fused attention kernel's fraction of its architecture's long-sequence efficiency, in (0, 1].
double attention_shape_factor(const AttentionShape& a, const ArchitectureConstants& arch);
// FLOPs a kernel executes: its counted FLOPs, but for a fused attention kernel under a causal mask (half the
// scores; a chunk of q queries over seq keys, 1 - q / (2 seq) of them: AttentionShape::queries) and in its backward (which recomputes the scores: 2.5 forward GEMMs of work for the 2 counted).
FlopCount executed_flops(const Kernel& k);

// The share of its quoted peak that `gpu` sustains under compute-bound load, relative to its architecture's
// reference SKU (where the constants were measured): in (0, 1]. A card's clock settles where its power meets
// its limit; power grows as a power of the clock (f V^2 with voltage rising with frequency: f^3 in the textbook
// DVFS range, steeper near the top of the voltage curve), so a card with less power per unit of peak runs at
// (its W per TFLOP/s over the reference's)^kPowerClockExponent of the reference's clock, never above its own
// boost. Memory-bound kernels do not slow: HBM has its own clock.
double sustained_clock(const topology::GpuSpec& gpu);
// 0.243 = ln(252.9 / 271.2) / ln(300 / 400): the best measured GEMM rates of the A100 PCIe (300 W) and the A100
// SXM4 (400 W), one 312 TFLOP/s die (ml-engineering compute/accelerator/README.md, "Maximum Achievable Matmul
// FLOPS comparison table"), the one pair where only the power limit differs (power ~ f^4.1).
inline constexpr double kPowerClockExponent = 0.2429;

// Vector instructions per int4/int8 weight element converted to fp16/bf16 with its group scale applied: Marlin
// (Frantar et al., PPoPP 2025; IST-DASLab/marlin) turns eight packed int4 values into four half2 pairs with LOP3
// bit tricks and one half2 FMA per pair for the zero point and scale: about one instruction per element. A prior,
// not fitted. Its thread blocks take the batch in 16-row m-blocks, at most 4 of them (kDequantTileRows = 64): each
// weight tile is converted once per 64 rows.
inline constexpr double kDequantInstructions = 1.0;
inline constexpr double kDequantTileRows = 64;
// Marlin's m-block (its mma.sync tiles are 16 rows): a weight-only GEMM's compute side pads the batch to whole
// blocks of it (weight_only_shape_factor), where a cuBLAS GEMM of few rows runs half-empty large tiles.
inline constexpr double kWeightOnlyBlockRows = 16;

// Duration of `k` on `gpu` computing in `precision` (the kernel's own precision when it has one: fp8 GEMMs), its
// FLOPs and bytes taken `k.load` times (the busiest GPU's share).
// Throws InputError (key "training.precision", or "training.fp8" for a kernel's own fp8) when the GPU has no
// peak for that precision.
Seconds kernel_time(const Kernel& k, const topology::GpuSpec& gpu, Precision precision);
// The same, with what bounds it: true when its bytes take longer than its FLOPs (the roofline's memory side).
// A weight-only GEMM (narrow weights, a floating-point compute precision) also converts its weights on the vector
// units: kDequantInstructions per element of Kernel::dequant_elements at the GPU's non-tensor instruction rate
// (its fp32 peak over 2, an FMA counting 2 FLOPs). Marlin-class kernels interleave the conversion with the tensor
// cores' MMAs so that the two pipelines run together: the compute side is the slower of the two.
struct KernelTiming {
  Seconds time;
  bool memory_bound = false;
};
KernelTiming kernel_timing(const Kernel& k, const topology::GpuSpec& gpu, Precision precision);

// The part of `time` (a kernel's) that streams through HBM: all of it for a streaming kernel, else none (the
// ComputeOp::memory_time of the ops a generator builds).
Seconds streaming_time(const Kernel& k, Seconds time);

// Sum over kernels.
Seconds kernels_time(std::span<const Kernel> kernels, const topology::GpuSpec& gpu, Precision precision);

}  // namespace dtsim::workloads
