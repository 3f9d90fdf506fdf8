// The compute model's constants, as data: the work each kernel class does, one row of efficiencies per GPU
// architecture, and the launch overhead. Like the hardware catalog, the only place these numbers are written.
//
// Ampere is calibrated end to end (tests/workloads/compute_model_test.cpp replays it): Korthikanti et al., MLSys
// 2023, Table 4 (../shared/calibration/layer_times_22b.csv), one layer of a 22B GPT (h 6144, 64 heads, s 2048,
// micro-batch 4, ffn 4h), TP 8 on a DGX A100, bf16, jointly with the Megatron-LM SC'21 tables. Each measured pass
// includes two TP all-reduces of 100.7 MB; what is subtracted is what dtsim's own collective model plays for them
// (0.82 ms each), so that a simulated layer adds back exactly what was taken out. Two Ampere constants are fitted
// (the large-GEMM efficiency and the unfused attention's streaming efficiency); the others are priors checked
// against the rows.
//
// Every other architecture takes its kernel-level measurements from public benchmarks of its own chips
// (sources in each row, copied from /work/research/kernels.md's primary sources), and one rule carries the
// end-to-end calibration over: a training run's GEMMs reach the same share of the chip's best measured GEMM
// rate (the "maximum achievable matmul FLOPS" of ml-engineering's table, L2 flushed, mean of 100) as Ampere's do.
// On the A100 that share is 0.74 / 0.94 = 0.787: the best measured shape, 1024 x 10240 x 5120 at 271.2 TFLOP/s,
// is 0.869 of peak, 0.94 once its shape factor (0.924 with d_half 64) is taken out. Hopper keeps less of its
// benchmarks than Ampere through a training step: one factor more (kPowerLimited), fitted on the H100 rows.
#include <array>

#include <algorithm>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"

namespace dtsim::workloads {
namespace {

using namespace dtsim::literals;

// The share of the best measured GEMM rate that training's GEMMs reach, from Ampere (above).
constexpr double kSustained = 0.74 / 0.94;

// What a 700 W Hopper keeps of its benchmarked compute-bound rates (GEMMs, fused attention) through a training
// step, beyond Ampere's share: 0.86, the one Hopper constant fitted end to end, by least mean absolute error over
// the 21 rows of `./dtsim validate`'s three H100 tables pooled (Megatron-LM README weak scaling, BF16, 48 to 6,144
// GPUs; NeMo 24.07, FP8, 8 to 512 GPUs; MLPerf v3.1 GPT-3 on Eos, FP8, 512 and 768 GPUs): pooled MAE 4.08 % at
// 0.85, 4.03 % at 0.86, 4.07 % at 0.87; 0.85 to 0.87 keep every table within mean 5 % and max 12 %
// (docs/validation.md). It was 0.84 until the SMs and HBM that overlapped communication takes from compute were
// modelled (sim/analytic/interference.hpp), which now accounts for part of what it stood for. The mechanism it stands
// for: the benchmarks time kernels of milliseconds on an otherwise idle chip, at clocks a step of seconds with
// all SMs, HBM and NVLink busy does not hold under the SXM5's 700 W limit (an A100 SXM4 holds its 1410 MHz under
// load, Chips and Cheese; an H100 throttles to its power limit, and NVIDIA measured NeMo 24.07's H100 table with
// "vboost", a setting that moves power to the SMs: NVIDIA/NeMo 3a8081fe). Memory-bound kernels keep their rates.
// Blackwell (1000 W, no end-to-end measurement found) takes Hopper's value: an assumption.
constexpr double kPowerLimited = 0.86;

// Best measured GEMM efficiencies (ml-engineering compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS
// comparison table", commit 744d01e1), with their best shapes' shape factors taken out: H100 SXM bf16 794.5 of 989
// at 2048 x 2048 x 13312 (factor 0.923 with d_half 64 / 64 / 250), fp8 1402.6 of 1979 at 1024 x 9216 x 14336
// (0.919); B200 bf16 1745 of 2250 at 1792 x 16128 x 3072 (0.889), fp8 3432.5 of 4500 at 15360 x 4096 x 3072
// (0.907); MI300X bf16 668.4 of 1300 at 10240 x 15360 x 8192 (0.982 with Ampere's 64).
constexpr double kHopperBest = 0.803 / 0.923;
constexpr double kHopperBestFp8 = 0.709 / 0.919;
constexpr double kBlackwellBest = 0.776 / 0.889;
constexpr double kBlackwellBestFp8 = 0.763 / 0.907;
constexpr double kCdna3Best = 0.514 / 0.982;
// MI300X fp8: hipblaslt-bench f8_r at 8192 x 8192 x 8192, 1159.23 of 2614.9 TFLOP/s (shape factor 0.977), and
// BabelStream hip-stream's triad at 4.09 of 5.3 TB/s (copy 4.11), both on Azure ND MI300X v5 under ROCm 6.2
// (Azure/AI-benchmarking-guide Azure_Results/ND_MI300X_v5_results.md, lines 21-32 and 36-42, as forked at
// yosoyjay/AI-benchmarking-guide fa25d565; AMD's rocprof-compute tests expect 3.91 TB/s from a memcopy).
constexpr double kCdna3BestFp8 = 0.4433 / 0.977;
constexpr double kCdna3Stream = 4.09 / 5.3;
// V100: cuBLAS's tensor-core HGEMM "up to 85 Tflops" (hma02/cublasHgemm-P100 PR #1, 2019; Markidis et al., IPDPSW
// 2018, measured 83), of 125, on large square GEMMs (8192: shape factor 0.977 with d_half 64).
constexpr double kVoltaBest = 0.680 / 0.977;

constexpr const char* kAmpereSource =
    "gemm 0.74 fitted: Korthikanti et al. 2023 Table 4, 22B layer forward 7.7 ms on DGX A100 (layer_times_22b.csv), "
    "jointly with the Megatron-LM SC'21 tables 1 and 2 (megatron_sc21.csv); d_half 64 = half a 128-wide tile "
    "(prior); stream 0.80 prior (~85 % of HBM in STREAM-class copies on A100, fused kernels a little less), checked "
    "on the 22B sequence-parallel row; attention_stream 0.65 fitted on the 22B selective recompute's cost (1.3 ms); "
    "fused attention: FlashAttention-2 forward+backward on A100 80GB SXM4, causal, head_dim 128: 99, 133, 155, 173, "
    "182, 189 TFLOP/s at seq 512..16k (Dao-AILab/flash-attention assets/flash2_a100_fwd_bwd_benchmark.png at "
    "0251105a): 0.64 of 312 with d_half_seq 520; head_dim 64 at 16k 171 of 189 gives d_half_head 15 (flash and "
    "flash2 alike: the same kernel)";
constexpr const char* kHopperSource =
    "gemm: best measured 0.803 (ml-engineering MAMF, H100 SXM bf16 794.5 TFLOP/s) without its shape factor, x the "
    "sustained share 0.787 carried from Ampere x 0.86 (power-limited: fitted on the H100 tables of validate)"
    "; gemm_fp8 likewise from 1402.6 (0.709); d_half_k 250 fitted to "
    "XLA's H100 GEMM table (xla/service/gpu/model/matmul_interpolator_data.h, sm_90 bf16, 4096 x 4096 x k: 398.6, "
    "551.8, 685.2, 735.6, 780.2 TFLOP/s at k 256..4096); stream 0.85 and attention_stream 0.69: Ampere's priors x "
    "the H100/A100 ratio of BabelStream triad (2.97/3.35 = 0.89 vs 0.84, Azure/AI-benchmarking-guide); fused "
    "attention: cuDNN (Transformer Engine's fused attention) on H100 SXM, causal, head_dim 128, forward 315, 410, "
    "484, 518, 529, 539 TFLOP/s at seq 512..16k (flash-attention assets/flash3_fp16_fwd.png): 0.566 of 989 with "
    "d_half_seq 400; backward 305..518 (FlashAttention-3 paper, figure transcription): 0.546; head_dim 64 causal at "
    "16k 388 of 539 gives d_half_head 81; fused attention x 0.86 as the GEMMs; flash2: FlashAttention-2 on H100 "
    "SXM5, forward + backward, causal, head_dim 128: 163..328 TFLOP/s at seq 512..16k "
    "(flash-attention assets/flash2_h100_fwd_bwd_benchmark.png): 0.337 of 989 with d_half_seq 532, head_dim 64 "
    "0.873 of 128's (d_half_head 22), x 0.86";
constexpr const char* kBlackwellSource =
    "gemm: best measured 0.776 (ml-engineering MAMF, B200 bf16 1745 TFLOP/s) without its shape factor, x the "
    "sustained share carried from Ampere x Hopper's 0.86 power limit (assumed); gemm_fp8 from 3432.5 (0.763); "
    "d_half, stream: Hopper's (no Blackwell "
    "measurement found: an assumption); fused attention: FlashAttention-4 on B200 1.88-1.95x FlashAttention-3 on "
    "H200 (ml-engineering insights/when-to-upgrade-gpus) over a 2.275x peak: Hopper's fractions x 0.835; flash2: "
    "Hopper's FlashAttention-2 fractions (no Blackwell measurement found: an assumption); MXFP8 GEMMs 1.096x "
    "(forward) and 1.031x (backward) the time of per-tensor fp8 ones (cuBLAS on B300, pre-quantised: Transformer "
    "Engine docs/examples/gemm_profiling/gemm_profiling.rst at 1609c890e); NVFP4 GEMMs 0.586x fp8's time (CUTLASS "
    "on B200 at 16384 x 6144 x 4096, each against its run's bf16: vLLM pull requests 19566 and 20646)";
constexpr const char* kAssumedAmpereSource =
    "no kernel measurements of this architecture found: Ampere's constants, an assumption";
constexpr const char* kVoltaSource =
    "gemm: best measured 0.680 (cuBLAS tensor-core HGEMM up to 85 of 125 TFLOP/s on V100, hma02/cublasHgemm-P100 "
    "PR #1; 83 in Markidis et al. 2018) without its shape factor, x the sustained share carried from Ampere; "
    "everything else Ampere's (no measurement found: an assumption). Checked: Megatron-LM v1.0's 1.2B GPT on one "
    "V100 at 62.4 TFLOP/s (nv-adlr.github.io/MegatronLMV1)";
constexpr const char* kCdna3Source =
    "gemm: best measured 0.514 (ml-engineering MAMF, MI300X bf16 668.4 TFLOP/s, TunableOp) without its shape "
    "factor, x the sustained share carried from Ampere; gemm_fp8: hipBLASLt's 1159 TFLOP/s at 8192^3 (0.443 of "
    "2615) likewise; stream: BabelStream's triad at 4.09 of 5.3 TB/s (0.772), both Azure's AI-benchmarking-guide "
    "on ND MI300X v5; everything else Ampere's (no measurement found: an assumption)";

// FlashAttention-2 on an A100 (Ampere's fused kernel, flash and flash2 alike; kAmpereSource).
constexpr FusedAttentionRates kFlash2Ampere{.forward = 0.64, .backward = 0.64, .half_seq = 520, .half_head = 15};
// FlashAttention-2 on an H100 SXM5, forward + backward, causal, head_dim 128: 163, 221, 265, 294, 308, 328 TFLOP/s
// at seq 512..16k (Dao-AILab/flash-attention assets/flash2_h100_fwd_bwd_benchmark.png at 0251105a): least squares
// gives 333.5 TFLOP/s (0.337 of 989) with d_half_seq 532 (fits within 2 %); head_dim 64 runs 0.873 of 128's on
// average over the six lengths, d_half_head 22. The figure times forward and backward together: each is given
// their rate (no separate measurement). Before the power limit (x 0.86, as Hopper's other compute-bound rates).
constexpr FusedAttentionRates kFlash2Hopper{.forward = 0.337, .backward = 0.337, .half_seq = 532, .half_head = 22};

FusedAttentionRates scaled(FusedAttentionRates r, double factor) {
  r.forward *= factor;
  r.backward *= factor;
  return r;
}

ArchitectureConstants ampere_like(std::string_view name, const char* source) {
  return {.name = name, .gemm = 0.74, .gemm_fp8 = 0.74, .attention_gemm = 0.74, .gemm_half_mn = 64,
          .gemm_half_k = 64, .stream = 0.80, .attention_stream = 0.65, .flash = kFlash2Ampere,
          .flash2 = kFlash2Ampere, .source = source, .reference_gpu = {}, .reference_watts_per_tflops = 0};
}

ArchitectureConstants hopper_like(std::string_view name, double best, double best_fp8, double flash_scale,
                                  const char* source) {
  const double gemm = kSustained * kPowerLimited;
  flash_scale *= kPowerLimited;
  return {.name = name, .gemm = best * gemm, .gemm_fp8 = best_fp8 * gemm,
          .attention_gemm = best * gemm, .gemm_half_mn = 64, .gemm_half_k = 250, .stream = 0.85,
          .attention_stream = 0.69,
          .flash = {.forward = 0.566 * flash_scale, .backward = 0.546 * flash_scale, .half_seq = 400, .half_head = 81},
          .flash2 = scaled(kFlash2Hopper, kPowerLimited), .power_limited = kPowerLimited, .source = source,
          .reference_gpu = {}, .reference_watts_per_tflops = 0};
}

// The reference SKU of an architecture's measured constants, and its power per unit of dense 16-bit peak.
ArchitectureConstants measured_on(ArchitectureConstants a, std::string_view gpu) {
  const topology::GpuSpec& ref = topology::find_gpu(gpu);
  const auto peak = ref.peak_for(Precision::Bf16) ? ref.peak_for(Precision::Bf16) : ref.peak_for(Precision::Fp16);
  DTSIM_ASSERT(peak && ref.tdp.value() > 0.0, "an architecture's reference GPU has no 16-bit peak or no TDP");
  a.reference_gpu = gpu;
  a.reference_watts_per_tflops = ref.tdp.value() / (peak->value() / 1e12);
  return a;
}

ArchitectureConstants volta() {
  ArchitectureConstants a = ampere_like("volta", kVoltaSource);
  a.gemm = a.gemm_fp8 = a.attention_gemm = kVoltaBest * kSustained;
  return a;
}

constexpr const char* kBlackwellUltraSource =
    "Blackwell's constants (kBlackwellSource), but fused attention: Blackwell Ultra doubles the SFU's exponential "
    "throughput (NVIDIA, 'Inside NVIDIA Blackwell Ultra', 2025: 10.7 TeraExponentials/s, '2X attention-layer "
    "acceleration'), which bounds the attention core on B200 (FlashAttention-4, Zadouri et al. 2026: the softmax's "
    "exponentials take as long as, or longer than, the tile's MMAs); the kernel runs at twice Blackwell's rate, "
    "capped at the architecture's dense GEMM efficiency (the tensor cores then bound it); NVFP4 GEMMs 0.581x "
    "(forward) and 0.539x (backward) the time of per-tensor fp8 ones (cuBLAS on B300, pre-quantised: Transformer "
    "Engine docs/examples/gemm_profiling/gemm_profiling.rst at 1609c890e)";

// MXFP8 GEMMs over per-tensor fp8 ones, cuBLAS on a B300 with pre-quantised inputs (Transformer Engine
// docs/examples/gemm_profiling/gemm_profiling.rst at 1609c890e, benchmarks/gemm/benchmark_gemm.py --pre-quantize,
// a 4096-wide layer, MLP 16384, 15,872 tokens; per-layer ms FP8Current / MXFP8): forward 2.158 / 2.365, backward
// dgrad + wgrad 2.329 + 2.325 / 2.397 + 2.400. The swizzle of the scales before each GEMM is inside the MXFP8 times.
// Blackwell Ultra's GEMMs are Blackwell's here, so the B300's ratios carry to the B200.
constexpr double kMxfp8Forward = 2.365 / 2.158;
constexpr double kMxfp8Backward = (2.397 + 2.400) / (2.329 + 2.325);
// NVFP4 GEMMs over per-tensor fp8 ones at equal FLOPs. Blackwell Ultra: the same B300 measurement, NVFP4 forward
// 1.254 ms, backward 1.305 + 1.205 ms. Blackwell: vLLM's CUTLASS GEMMs on a B200 at 16,384 x 6,144 x 4,096 (Llama
// 3.1 8B's QKV), pre-quantised, each against torch's bf16 GEMM of its own run: fp8 2544.7 over 1512.8 TFLOP/s
// (vllm-project/vllm pull request 19566), NVFP4 3904.3 over 1360.1 (pull request 20646): 1.682 and 2.870 times
// bf16; forward only, so the backward takes the forward's ratio.
constexpr double kFp4UltraForward = 1.254 / 2.158;
constexpr double kFp4UltraBackward = (1.305 + 1.205) / (2.329 + 2.325);
constexpr double kFp4Forward = (2544.7 / 1512.8) / (3904.3 / 1360.1);

ArchitectureConstants blackwell(std::string_view name = "blackwell", const char* source = kBlackwellSource) {
  ArchitectureConstants a = hopper_like(name, kBlackwellBest, kBlackwellBestFp8, 0.835, source);
  a.mxfp8_forward = kMxfp8Forward;
  a.mxfp8_backward = kMxfp8Backward;
  a.fp4_forward = a.fp4_backward = kFp4Forward;
  // Transformer Engine transformer_engine/pytorch/csrc/quantizer.cpp: with_transpose = columnwise_usage &&
  // !nvte_is_non_tn_fp8_gemm_supported(), true from compute capability 10.0 (B200, B300).
  a.fp8_any_layout = true;
  return a;
}

// Blackwell Ultra (GB300, B300): Blackwell's GEMMs, its attention core no longer held by the exponentials.
ArchitectureConstants blackwell_ultra() {
  ArchitectureConstants a = blackwell("blackwell-ultra", kBlackwellUltraSource);
  a.flash.forward = std::min(2.0 * a.flash.forward, a.gemm);
  a.flash.backward = std::min(2.0 * a.flash.backward, a.gemm);
  a.fp4_forward = kFp4UltraForward;
  a.fp4_backward = kFp4UltraBackward;
  return a;
}

ArchitectureConstants cdna3(const char* name = "cdna3", const char* source = kCdna3Source) {
  ArchitectureConstants a = ampere_like(name, source);
  a.gemm = a.attention_gemm = kCdna3Best * kSustained;
  a.gemm_fp8 = kCdna3BestFp8 * kSustained;
  a.stream = kCdna3Stream;
  return a;
}

constexpr const char* kCdna4Source =
    "CDNA 4 (MI355X): CDNA 3's constants (kCdna3Source), MI300X's measured stream and fp8 GEMM shares included; no "
    "CDNA 4 kernel measurement read: an assumption";

constexpr const char* kGemmWork = "dense GEMM: compute-bound at the architecture's gemm efficiency x shape";
constexpr const char* kAttentionGemmWork =
    "attention's batched GEMMs, unfused: the architecture's attention_gemm efficiency x shape (head_dim charged "
    "there); memory-bound on most shapes";
constexpr const char* kFusedWork =
    "fused attention (FlashAttention class): executed FLOPs at the architecture's flash efficiency x its sequence "
    "and head-dimension factors";
constexpr const char* kGroupedGemmWork =
    "grouped GEMM (an MoE layer's local experts, Transformer Engine's GroupedLinear): each expert's GEMM at the "
    "architecture's gemm efficiency x its own shape, all experts' blocks filling the GPU together; one launch per "
    "expert";
constexpr const char* kConvWork =
    "convolution as cuDNN's implicit GEMM (m = images x output pixels, n = output channels, k = input channels x "
    "kernel area): the architecture's gemm efficiency x that shape (no convolution-specific measurement: an "
    "assumption)";
constexpr const char* kStreamWork = "0 FLOPs: timed by bytes at the architecture's stream efficiency";
constexpr const char* kAttentionStreamWork =
    "0 FLOPs over the b x heads x s x s probabilities: timed by bytes at the architecture's attention_stream "
    "efficiency (the dropout draws a Philox number per probability, the softmax reduces 2,048-wide masked rows)";

}  // namespace

std::span<const KernelWork> kernel_works() {
  static const std::array<KernelWork, 35> table = {{
      {KernelClass::Embedding, Work::Stream, kStreamWork},
      {KernelClass::LayerNorm, Work::Stream, kStreamWork},
      {KernelClass::QkvGemm, Work::Gemm, kGemmWork},
      {KernelClass::MlaUpGemm, Work::Gemm, kGemmWork},
      {KernelClass::AttnScores, Work::AttentionGemm, kAttentionGemmWork},
      {KernelClass::Softmax, Work::AttentionStream, kAttentionStreamWork},
      {KernelClass::AttnDropout, Work::AttentionStream, kAttentionStreamWork},
      {KernelClass::AttnContext, Work::AttentionGemm, kAttentionGemmWork},
      {KernelClass::FlashAttention, Work::FusedAttention, kFusedWork},
      {KernelClass::ProjGemm, Work::Gemm, kGemmWork},
      {KernelClass::MlpUpGemm, Work::Gemm, kGemmWork},
      {KernelClass::Activation, Work::Stream, kStreamWork},
      {KernelClass::MlpDownGemm, Work::Gemm, kGemmWork},
      {KernelClass::Router, Work::Gemm, kGemmWork},
      {KernelClass::RouterTopk, Work::Stream, kStreamWork},
      {KernelClass::TokenPermute, Work::Stream, kStreamWork},
      {KernelClass::ExpertUpGemm, Work::Gemm, kGroupedGemmWork},
      {KernelClass::ExpertDownGemm, Work::Gemm, kGroupedGemmWork},
      {KernelClass::TokenUnpermute, Work::Stream, kStreamWork},
      {KernelClass::Dropout, Work::Stream, kStreamWork},
      {KernelClass::Residual, Work::Stream, kStreamWork},
      {KernelClass::Fp8Cast, Work::Stream, kStreamWork},
      {KernelClass::LoraColumnA, Work::Gemm, kGemmWork},
      {KernelClass::LoraColumnB, Work::Gemm, kGemmWork},
      {KernelClass::LoraRowA, Work::Gemm, kGemmWork},
      {KernelClass::LoraRowB, Work::Gemm, kGemmWork},
      {KernelClass::Quantize, Work::Stream, kStreamWork},
      {KernelClass::Logits, Work::Gemm, kGemmWork},
      {KernelClass::CrossEntropy, Work::Stream, kStreamWork},
      {KernelClass::Conv, Work::Gemm, kConvWork},
      {KernelClass::BatchNorm, Work::Stream, kStreamWork},
      {KernelClass::Pool, Work::Stream, kStreamWork},
      {KernelClass::Matmul, Work::Gemm, kGemmWork},
      {KernelClass::Elementwise, Work::Stream, kStreamWork},
      {KernelClass::OptimizerUpdate, Work::Stream, kStreamWork},
  }};
  return table;
}

std::span<const ArchitectureConstants> architectures() {
  static const std::array<ArchitectureConstants, 9> table = {
      // Ampere's constants come from A100 SXM4 measurements (the SC'21 rows, ml-engineering's A100 SXM), Hopper's
      // from H100 SXM5 ones, Blackwell's from the B200's matmul benchmark.
      measured_on(ampere_like("ampere", kAmpereSource), "a100-sxm4-80gb"),
      measured_on(hopper_like("hopper", kHopperBest, kHopperBestFp8, 1.0, kHopperSource), "h100-sxm5-80gb"),
      measured_on(blackwell(), "b200-sxm-180gb"),
      measured_on(blackwell_ultra(), "b200-sxm-180gb"),
      ampere_like("ada", kAssumedAmpereSource),
      ampere_like("turing", kAssumedAmpereSource),
      measured_on(volta(), "v100-sxm2-32gb"),
      cdna3(),
      cdna3("cdna4", kCdna4Source),
  };
  return table;
}

std::string architecture_names() {
  std::string out;
  for (const ArchitectureConstants& a : architectures()) out += fmt::format("{}{}", out.empty() ? "" : ", ", a.name);
  return out;
}

const ArchitectureConstants& architecture(std::string_view name, std::string_view key) {
  for (const ArchitectureConstants& a : architectures())
    if (a.name == name) return a;
  throw InputError(std::string(key), std::string(name), "unknown GPU architecture", architecture_names());
}

// Launch overhead 4 us: the gap and ramp between back-to-back kernels on one stream (CUDA launch latency is
// ~3-5 us). Not identifiable on the 22B rows (15 kernels x 4 us = 0.06 ms per pass): a physical prior.
const ComputeConstants& compute_constants() {
  static const ComputeConstants constants{
      .launch_overhead = 4_us,
      .serving_step_overhead = 1135_us,
      .source = "prior: ~4 us per kernel launch and ramp (CUDA launch latency 3-5 us); checked against the 22B "
                "layer rows of Korthikanti et al. 2023",
      .serving_source = "fitted on one row: vLLM's nightly latency test of Llama-3-8B on one H100 (batch 8, 32 in, "
                        "128 out: 997.5 ms measured, 852.2 ms without it, over 128 iterations); checked on the "
                        "other rows of scenarios/validation/serving-*.yaml"};
  return constants;
}

}  // namespace dtsim::workloads
