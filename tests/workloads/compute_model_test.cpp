// The roofline compute model: exact times for compute- and memory-bound kernels, the GEMM shape factor, the
// error for a precision the GPU lacks, and the calibration against Korthikanti et al.'s 22B layer times.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/compute_cases.hpp"
#include "workloads/gpt_job.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::literals;
using namespace dtsim::workloads;
using topology::find_gpu;
using dtsim::test::a100;


using compute_cases::gemm;
using compute_cases::hopper;
using compute_cases::streaming;

const ArchitectureConstants& ampere() { return architecture("ampere"); }
double fill(double d, double half = 64) { return d / (d + half); }

// ---- calibration: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
// MLSys 2023, Table 4 (../shared/calibration/layer_times_22b.csv): one layer of a 22B GPT, TP 8 on a DGX A100.

const ModelSpec& gpt_22b() { return find_model("gpt-22b"); }   // 48 layers, h 6144, 64 heads, s 2048
constexpr int kMicroBatch = 4;
constexpr int kTp = 8;

struct Row {
  const char* experiment;
  double forward_ms;    // measured
  double backward_ms;   // measured; with recompute it includes the recomputed forward
  bool sequence_parallel;
  Recompute recompute;
};
constexpr std::array kRows = {
    Row{"baseline_no_recompute", 7.7, 11.9, false, Recompute::None},
    Row{"sequence_parallel", 7.2, 11.8, true, Recompute::None},
    Row{"full_recompute", 7.7, 19.5, false, Recompute::Full},
    Row{"selective_recompute", 7.7, 13.2, false, Recompute::Selective},
    Row{"selective_recompute_and_sequence_parallel", 7.2, 13.1, true, Recompute::Selective},
};

// The measured times include tensor-parallel communication, which is not compute: two all-reduces per pass of
// the layer's activations, b s h x 2 bytes = 100.7 MB (with sequence parallelism an all-gather plus a
// reduce-scatter of the same total volume; the recomputed forward of full recompute repeats its two). What is
// subtracted is what dtsim's own collective model gives for that all-reduce on 8 A100s over NVSwitch, 0.8216 ms
// (214 GB/s busbw; tests/sim/collective_timing_test.cpp holds the engine to this figure), so that a simulated layer,
// compute plus simulated communication, adds back exactly what was taken out. An estimate of its own here would
// leave dtsim's layers off by the difference (a ring at 180 GB/s busbw, 0.979 ms, is 4 % of the forward).
constexpr Seconds kTpAllReduce = Seconds(821.58e-6);
Seconds tp_comm_per_pass() { return 2.0 * kTpAllReduce; }

Seconds pass_compute(const ModelSpec& m, const Row& row, Pass pass) {
  TrainingSpec t;
  t.recompute = row.recompute;
  t.sequence_parallel = row.sequence_parallel;
  const auto ks = layer_kernels(m, t, {kTp, row.sequence_parallel}, kMicroBatch, pass);
  return kernels_time(ks, find_gpu("a100-sxm4-80gb"), Precision::Bf16);
}

struct Prediction {
  double forward_ms;
  double backward_ms;          // every TP collective on the critical path, as dtsim plays them
  double backward_hidden_ms;   // the backward pass's own two collectives hidden under its GEMMs
};

Prediction predict(const Row& row) {
  const ModelSpec m = gpt_22b();
  const Seconds comm = tp_comm_per_pass();
  const Seconds forward = pass_compute(m, row, Pass::Forward) + comm;
  Seconds hidden = pass_compute(m, row, Pass::Backward) + pass_compute(m, row, Pass::Recompute);
  if (row.recompute == Recompute::Full) hidden += comm;   // the recomputed forward's collectives cannot hide
  return {forward.value() * 1e3, (hidden + comm).value() * 1e3, hidden.value() * 1e3};
}

double error(double model, double measured) { return model / measured - 1.0; }

}  // namespace

TEST_CASE("compute model: one work per kernel class, one row per architecture, each with a source") {
  std::set<KernelClass> kinds;
  for (const KernelWork& w : kernel_works()) {
    CAPTURE(w.kind);
    kinds.insert(w.kind);
    CHECK_FALSE(w.source.empty());
    CHECK(&work_of(w.kind) == &w);
  }
  CHECK(kinds.size() == 35);
  CHECK(kernel_works().size() == 35);
  std::set<std::string> names;
  for (const ArchitectureConstants& a : architectures()) {
    CAPTURE(a.name);
    names.insert(std::string(a.name));
    for (double e : {a.gemm, a.gemm_fp8, a.attention_gemm, a.stream, a.attention_stream, a.flash.forward,
                     a.flash.backward, a.flash2.forward, a.flash2.backward}) {
      CHECK(e > 0.0);
      CHECK(e <= 1.0);
    }
    for (double h : {a.gemm_half_mn, a.gemm_half_k, a.flash.half_seq, a.flash.half_head, a.flash2.half_seq, a.flash2.half_head}) CHECK(h > 0.0);
    CHECK_FALSE(a.source.empty());
  }
  CHECK(names.size() == architectures().size());
  for (const auto& gpu : topology::gpu_catalog()) CHECK_NOTHROW((void)architecture(gpu.architecture));
  CHECK_THROWS_WITH_AS((void)architecture("kepler"),
                       doctest::Contains("unknown GPU architecture 'kepler' (allowed: ampere, hopper, blackwell"),
                       InputError);
  CHECK(compute_constants().launch_overhead > Seconds(0));
  CHECK_FALSE(compute_constants().source.empty());
}

TEST_CASE("compute model: the shape factor is the product of d / (d + d_half), the batch multiplying m") {
  const GemmShape g{1024, 2048, 4096, 1};
  CHECK(gemm_shape_factor(g, ampere()) == doctest::Approx(fill(1024) * fill(2048) * fill(4096)).epsilon(1e-15));
  const GemmShape batched{2048, 2048, 96, 32};
  CHECK(gemm_shape_factor(batched, ampere()) ==
        doctest::Approx(fill(2048 * 32) * fill(2048) * fill(96)).epsilon(1e-15));
  CHECK(gemm_shape_factor(batched, ampere()) > gemm_shape_factor({2048, 2048, 96, 1}, ampere()));
  CHECK(gemm_shape_factor({1e9, 1e9, 1e9, 1}, ampere()) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(gemm_shape_factor({1, 8192, 8192, 1}, ampere()) < 0.02);
  // Hopper's reduction depth costs more: k enters as k / (k + 250) (XLA's H100 table, compute_catalog.cpp).
  CHECK(gemm_shape_factor(g, hopper()) ==
        doctest::Approx(fill(1024) * fill(2048) * fill(4096, 250)).epsilon(1e-15));
  // XLA's H100 bf16 GEMMs 4096 x 4096 x k, k = 256 against 4096: 398.6 / 780.2 = 0.511 measured.
  const double ratio = gemm_shape_factor({4096, 4096, 256, 1}, hopper()) / gemm_shape_factor({4096, 4096, 4096, 1}, hopper());
  CHECK(ratio == doctest::Approx(398.6 / 780.2).epsilon(0.06));
}

TEST_CASE("compute model: a large GEMM is compute-bound at peak x efficiency x shape, plus one launch") {
  const GemmShape g{8192, 8192, 8192, 1};
  const Kernel k = gemm(KernelClass::MlpUpGemm, g, Bytes(3 * 8192.0 * 8192 * 2));
  const Seconds launch = compute_constants().launch_overhead;
  const double rate = 312e12 * ampere().gemm * gemm_shape_factor(g, ampere());
  const Seconds want = Seconds(k.flops.value() / rate) + launch;
  CHECK(kernel_time(k, a100(), Precision::Bf16).value() == doctest::Approx(want.value()).epsilon(1e-12));
  // tf32 runs at half the bf16 peak on an A100: exactly twice the compute part.
  const Seconds tf32 = kernel_time(k, a100(), Precision::Tf32);
  CHECK((tf32 - launch).value() == doctest::Approx(2 * (want - launch).value()).epsilon(1e-12));
  // An H100 runs it at its own peak (989), efficiency and shape: Hopper's row.
  const double h100_rate = 989e12 * hopper().gemm * gemm_shape_factor(g, hopper());
  CHECK((kernel_time(k, find_gpu("h100-sxm5-80gb"), Precision::Bf16) - launch).value() ==
        doctest::Approx(k.flops.value() / h100_rate).epsilon(1e-12));
}

TEST_CASE("compute model: fused attention executes half the scores under a causal mask, 2.5/2 of them backward") {
  Kernel k;
  k.kind = KernelClass::FlashAttention;
  k.attention = AttentionShape{32, 4096, 128, true};
  k.flops = FlopCount(4.0 * 32 * 4096.0 * 4096 * 128);
  const auto& h100 = find_gpu("h100-sxm5-80gb");
  const Seconds launch = compute_constants().launch_overhead;
  const double factor = fill(4096, hopper().flash.half_seq);   // head_dim 128: the measured one
  CHECK(attention_shape_factor(*k.attention, hopper()) == doctest::Approx(factor).epsilon(1e-15));
  const double forward = 0.5 * k.flops.value() / (989e12 * hopper().flash.forward * factor);
  CHECK((kernel_time(k, h100, Precision::Bf16) - launch).value() == doctest::Approx(forward).epsilon(1e-12));
  // cuDNN's measured causal forward at seq 4096, head_dim 128: 518 TFLOP/s (FA convention: executed FLOPs), of
  // which a training step keeps Hopper's power-limited share.
  CHECK(hopper().power_limited == doctest::Approx(0.86));
  CHECK(0.5 * k.flops.value() / forward / 1e12 == doctest::Approx(518 * hopper().power_limited).epsilon(0.03));
  Kernel back = k;
  back.pass = Pass::Backward;
  back.flops = k.flops * 2.0;
  CHECK(executed_flops(back).value() == doctest::Approx(2.5 * 0.5 * k.flops.value()));
  const double backward = executed_flops(back).value() / (989e12 * hopper().flash.backward * factor);
  CHECK((kernel_time(back, h100, Precision::Bf16) - launch).value() == doctest::Approx(backward).epsilon(1e-12));
  k.attention->causal = false;   // bidirectional: every score computed
  CHECK(executed_flops(k) == k.flops);
  // Smaller heads cost (cuDNN causal at 16k: head_dim 64 388 against 128's 539), larger ones gain nothing.
  const auto at = [&](double head) { return attention_shape_factor({32, 16384, head, true}, hopper()); };
  CHECK(at(64) / at(128) == doctest::Approx(388.0 / 539).epsilon(0.01));
  CHECK(at(256) == at(128));
}

TEST_CASE("compute model: a softmax is memory-bound at bandwidth x memory efficiency, whatever the precision") {
  const Kernel k = streaming(KernelClass::Softmax, Bytes(1e9));
  const double rate = 2039e9 * ampere().attention_stream;
  const double want = 1e9 / rate + compute_constants().launch_overhead.value();
  CHECK(kernel_time(k, a100(), Precision::Bf16).value() == doctest::Approx(want).epsilon(1e-12));
  CHECK(kernel_time(k, a100(), Precision::Fp32).value() == doctest::Approx(want).epsilon(1e-12));
  // A skinny GEMM with few FLOPs per byte is memory-bound too: matrix-vector, m = 1.
  const Kernel gemv = gemm(KernelClass::Logits, {1, 8192, 8192, 1}, Bytes(8192.0 * 8192 * 2));
  const double gemv_memory = 8192.0 * 8192 * 2 / (2039e9 * ampere().stream);
  CHECK(kernel_time(gemv, a100(), Precision::Bf16).value() >= gemv_memory);
  // Element-wise kernels stream at Hopper's share of an H100's bandwidth.
  const Kernel norm = streaming(KernelClass::LayerNorm, Bytes(1e9));
  CHECK(kernel_time(norm, find_gpu("h100-sxm5-80gb"), Precision::Bf16).value() ==
        doctest::Approx(1e9 / (3350e9 * hopper().stream) + compute_constants().launch_overhead.value()).epsilon(1e-12));
}

TEST_CASE("compute model: a backward GEMM times its data- and weight-gradient halves at their own shapes") {
  Kernel k = gemm(KernelClass::ProjGemm, {8192, 768, 6144, 1}, Bytes(0));   // dgrad: tokens x in x out
  k.pass = Pass::Backward;
  k.flops = k.flops * 2.0;
  k.weight_gemm = GemmShape{768, 6144, 8192, 1};
  const auto& h100 = find_gpu("h100-sxm5-80gb");
  const double half = k.flops.value() / 2.0;
  const double want = half / (989e12 * hopper().gemm * gemm_shape_factor(*k.gemm, hopper())) +
                      half / (989e12 * hopper().gemm * gemm_shape_factor(*k.weight_gemm, hopper()));
  CHECK((kernel_time(k, h100, Precision::Bf16) - compute_constants().launch_overhead).value() ==
        doctest::Approx(want).epsilon(1e-12));
}

TEST_CASE("compute model: skinny GEMMs are slower per FLOP than square ones") {
  // Same FLOPs, compute-bound either way (bytes 0): only the shape factor differs.
  const Kernel square = gemm(KernelClass::QkvGemm, {4096, 4096, 4096, 1}, Bytes(0));
  const Kernel skinny = gemm(KernelClass::QkvGemm, {1, 4096 * 4096.0, 4096, 1}, Bytes(0));
  const Kernel thin = gemm(KernelClass::QkvGemm, {16, 4096 * 256.0, 4096, 1}, Bytes(0));
  REQUIRE(square.flops == skinny.flops);
  const Seconds t_square = kernel_time(square, a100(), Precision::Bf16);
  const Seconds t_thin = kernel_time(thin, a100(), Precision::Bf16);
  const Seconds t_skinny = kernel_time(skinny, a100(), Precision::Bf16);
  CHECK(t_thin.value() > 2 * t_square.value());     // m = 16: a fifth of the tile rows used
  CHECK(t_skinny.value() > 20 * t_square.value());   // m = 1: matrix-vector
  CHECK(t_skinny > t_thin);
}

TEST_CASE("compute model: a card with less power per unit of peak sustains a lower clock, memory-bound kernels do not slow") {
  // The reference SKUs hold their clocks; so do cards with at least their power per TFLOP/s (H200: 700 W, 989).
  CHECK(sustained_clock(a100()) == 1.0);
  CHECK(sustained_clock(find_gpu("a100-sxm4-40gb")) == 1.0);
  CHECK(sustained_clock(find_gpu("h100-sxm5-80gb")) == 1.0);
  CHECK(sustained_clock(find_gpu("h200-sxm-141gb")) == 1.0);
  // The A100 PCIe (300 W, same die): the measured ratio of best GEMM rates the exponent comes from.
  CHECK(sustained_clock(find_gpu("a100-pcie-80gb")) == doctest::Approx(252.9 / 271.2).epsilon(1e-3));
  // The H100 PCIe: 350 W for 756 TFLOP/s against the SXM5's 700 W for 989.
  const double h100_pcie = std::pow((350.0 / 756) / (700.0 / 989), kPowerClockExponent);
  CHECK(sustained_clock(find_gpu("h100-pcie-80gb")) == doctest::Approx(h100_pcie).epsilon(1e-12));
  CHECK(h100_pcie == doctest::Approx(0.902).epsilon(1e-3));
  // A user's card with more power than its reference runs no faster than its boost clock; no TDP, no scaling.
  topology::GpuSpec hot = find_gpu("h100-pcie-80gb");
  hot.tdp = Watts(1000);
  CHECK(sustained_clock(hot) == 1.0);
  hot.tdp = Watts(0);
  CHECK(sustained_clock(hot) == 1.0);
  // Architectures without a measured reference SKU are not scaled.
  CHECK(sustained_clock(find_gpu("rtx4090")) == 1.0);

  // A compute-bound GEMM on the PCIe card takes 1 / sustained longer than at its peak x efficiency; a
  // memory-bound kernel takes its bytes over the bandwidth, whatever the clock.
  const auto& pcie = find_gpu("a100-pcie-80gb");
  const Seconds launch = compute_constants().launch_overhead;
  const GemmShape g{8192, 8192, 8192, 1};
  const Kernel big = gemm(KernelClass::MlpUpGemm, g, Bytes(0));
  const double at_peak = big.flops.value() / (312e12 * ampere().gemm * gemm_shape_factor(g, ampere()));
  CHECK((kernel_time(big, pcie, Precision::Bf16) - launch).value() ==
        doctest::Approx(at_peak / sustained_clock(pcie)).epsilon(1e-12));
  Kernel stream;
  stream.kind = KernelClass::LayerNorm;
  stream.bytes = Bytes(1e9);
  CHECK((kernel_time(stream, pcie, Precision::Bf16) - launch).value() ==
        doctest::Approx(1e9 / (1935e9 * ampere().stream)).epsilon(1e-12));
}

TEST_CASE("compute model: a kernel with no work takes no time, a list takes the sum of its kernels") {
  CHECK(kernel_time(streaming(KernelClass::Residual, Bytes(0)), a100(), Precision::Bf16) == Seconds(0));
  const std::vector<Kernel> ks{streaming(KernelClass::Softmax, Bytes(1e8)),
                               gemm(KernelClass::ProjGemm, {4096, 4096, 4096, 1}, Bytes(1e8)),
                               streaming(KernelClass::LayerNorm, Bytes(3e7))};
  Seconds sum(0);
  for (const Kernel& k : ks) sum += kernel_time(k, a100(), Precision::Bf16);
  CHECK(kernels_time(ks, a100(), Precision::Bf16).value() == doctest::Approx(sum.value()).epsilon(1e-15));
  CHECK(kernels_time({}, a100(), Precision::Bf16) == Seconds(0));
}

TEST_CASE("compute model: a precision the GPU has no peak for is an input error naming what it has") {
  const Kernel k = streaming(KernelClass::Softmax, Bytes(1e6));
  try {
    (void)kernel_time(k, a100(), Precision::Fp8);
    FAIL("fp8 on an A100 must be refused");
  } catch (const InputError& e) {
    CHECK(e.key() == "training.precision");
    CHECK(e.value() == "fp8");
    CHECK(e.reason().find("a100-sxm4-80gb") != std::string::npos);
    CHECK(e.allowed() == "fp64, fp32, tf32, bf16, fp16, int8, int4");
  }
  CHECK_THROWS_AS((void)kernels_time(std::vector{k}, find_gpu("h100-sxm5-80gb"), Precision::Int4), InputError);
  CHECK_NOTHROW((void)kernel_time(k, find_gpu("h100-sxm5-80gb"), Precision::Fp8));
}

TEST_CASE("compute model: the 22B layer's passes, compute plus explicit TP communication, land on the measurements") {
  // The TP communication: dtsim's all-reduce of b s h x 2 bytes (the size collective_test plays), twice per pass.
  CHECK(kMicroBatch * gpt_22b().seq_length * gpt_22b().hidden * 2 == 100'663'296);

  // The large-GEMM efficiency is fitted on two sources (compute_catalog.cpp): this forward baseline alone asks for
  // 0.78, the SC'21 runs for about 0.72; the shared 0.74 leaves this row 3.2 % slow.
  const Prediction base = predict(kRows[0]);
  CHECK(error(base.forward_ms, kRows[0].forward_ms) > 0.0);
  CHECK(error(base.forward_ms, kRows[0].forward_ms) < 0.04);

  // Checked: every other number.
  // - Forward rows within 4 %: the shared GEMM fit's 3.2 %, plus the measurements' 0.1 ms rounding (up to 1.4 %).
  // - Backward rows between two bounds, widened by 1.5 % for the rounding. The upper bound plays every TP
  //   collective on the critical path, as dtsim does and as the SC'21 runs' Megatron-LM did. The 2022 Megatron-LM
  //   these rows were measured with launches the backward's input-gradient collectives asynchronously, under the
  //   weight-gradient GEMMs; the lower bound hides both of them.
  std::string table = fmt::format("{:<43} {:<21} {}\n", "experiment", "measured fwd/bwd ms",
                                  "dtsim fwd / bwd (hidden .. exposed) ms");
  for (const Row& row : kRows) {
    CAPTURE(row.experiment);
    const Prediction p = predict(row);
    table += fmt::format("{:<43} {:5.1f} / {:5.1f}        {:5.2f} / {:5.2f} .. {:5.2f}  {:+5.1f}% fwd\n",
                         row.experiment, row.forward_ms, row.backward_ms, p.forward_ms, p.backward_hidden_ms,
                         p.backward_ms, 100 * error(p.forward_ms, row.forward_ms));
    CHECK(std::abs(error(p.forward_ms, row.forward_ms)) < 0.04);
    CHECK(row.backward_ms > p.backward_hidden_ms * 0.985);
    CHECK(row.backward_ms < p.backward_ms * 1.015);
  }
  MESSAGE(table);

  // The physics the rows isolate, as differences (communication cancels): sequence parallelism's saving on the
  // forward (measured 0.5 ms, checked) and the selective recompute's cost (measured 1.3 ms, the row the attention
  // core's streaming efficiency is fitted on), both memory-bound work.
  const double sp_saving = base.forward_ms - predict(kRows[1]).forward_ms;
  const double selective_cost = predict(kRows[3]).backward_ms - base.backward_ms;
  CHECK(std::abs(error(sp_saving, 0.5)) < 0.25);        // modelled 0.59 ms
  CHECK(std::abs(error(selective_cost, 1.3)) < 0.02);   // modelled 1.31 ms
}
