// The compute model's low-precision GEMMs and casts: fp8 at its own peak, Blackwell's block-scaled MXFP8 and 4-bit
// GEMMs at their measured share of fp8's time, per-tensor fp8 casts without a transpose where fp8 GEMMs take any
// layout, and MI300X's measured fp8 rate.
#include <doctest/doctest.h>

#include <string>
#include <tuple>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/compute_cases.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/gpt_job.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::workloads;
using compute_cases::gemm;
using compute_cases::hopper;
using compute_cases::streaming;
using dtsim::test::a100;
using topology::find_gpu;

}  // namespace

TEST_CASE("compute model: an fp8 GEMM runs at the fp8 peak and fp8 efficiency, whatever the training precision") {
  const GemmShape g{8192, 8192, 8192, 1};
  Kernel k = gemm(KernelClass::QkvGemm, g, Bytes(0));
  const auto& h100 = find_gpu("h100-sxm5-80gb");
  const Seconds launch = compute_constants().launch_overhead;
  const Seconds bf16 = kernel_time(k, h100, Precision::Bf16) - launch;
  k.precision = Precision::Fp8;
  const Seconds fp8 = kernel_time(k, h100, Precision::Bf16) - launch;
  const double want = k.flops.value() / (1979e12 * hopper().gemm_fp8 * gemm_shape_factor(g, hopper()));
  CHECK(fp8.value() == doctest::Approx(want).epsilon(1e-12));
  // 2x the peak at the measured fp8/bf16 efficiency ratio (MAMF 1402.6 / 794.5 = 1.77x): 1.77x as fast here.
  CHECK(bf16.value() / fp8.value() == doctest::Approx(1402.6 / 794.5).epsilon(0.01));
  // An A100 has no fp8 units: the error names training.fp8.
  CHECK_THROWS_WITH_AS((void)kernel_time(k, a100(), Precision::Bf16),
                       doctest::Contains("training.fp8: gpu a100-sxm4-80gb has no peak for 'fp8'"), InputError);
}

TEST_CASE("compute model: an MXFP8 GEMM on Blackwell takes cuBLAS's measured time over a per-tensor fp8 one") {
  // Transformer Engine's gemm_profiling (B300, pre-quantised): forward 2.365 / 2.158 ms, backward (dgrad + wgrad)
  // 4.797 / 4.654 ms; the peaks are equal, so the time ratio is the constant's.
  const GemmShape g{16384, 14336, 4096, 1};
  for (const char* name : {"b200-sxm-180gb", "gb200", "gb300"}) {
    CAPTURE(name);
    const auto& gpu = find_gpu(name);
    REQUIRE(gpu.peak_for(Precision::Mxfp8).has_value());
    CHECK(gpu.peak_for(Precision::Mxfp8)->value() == gpu.peak_for(Precision::Fp8)->value());
    const Seconds launch = compute_constants().launch_overhead;
    Kernel k = gemm(KernelClass::MlpUpGemm, g, Bytes(0));
    const auto time = [&](Precision p, Pass pass) {
      k.precision = p;
      k.pass = pass;
      return (kernel_time(k, gpu, Precision::Bf16) - launch).value();
    };
    CHECK(time(Precision::Mxfp8, Pass::Forward) / time(Precision::Fp8, Pass::Forward) ==
          doctest::Approx(2.365 / 2.158).epsilon(1e-12));
    CHECK(time(Precision::Mxfp8, Pass::Recompute) / time(Precision::Fp8, Pass::Recompute) ==
          doctest::Approx(2.365 / 2.158).epsilon(1e-12));
    k.flops = k.flops * 2.0;
    k.weight_gemm = GemmShape{g.k, g.n, g.m, 1};
    CHECK(time(Precision::Mxfp8, Pass::Backward) / time(Precision::Fp8, Pass::Backward) ==
          doctest::Approx((2.397 + 2.400) / (2.329 + 2.325)).epsilon(1e-12));
  }
  // Where nothing was measured the block-scaled GEMM runs as fp8 does.
  CHECK(hopper().mxfp8_forward == 1.0);
  CHECK(hopper().mxfp8_backward == 1.0);
}

TEST_CASE("compute model: an NVFP4 GEMM takes its measured share of a per-tensor fp8 GEMM's time, not fp4's peak") {
  // B200 (Blackwell): vLLM's CUTLASS GEMMs at 16384 x 6144 x 4096, each against its own run's bf16 (pull requests
  // 19566 and 20646), the forward's ratio backward too; B300 (Blackwell Ultra): Transformer Engine's
  // gemm_profiling, pre-quantised, forward 1.254 / 2.158 ms, backward 2.510 / 4.654 ms.
  const double b200 = (2544.7 / 1512.8) / (3904.3 / 1360.1);
  for (const auto& [name, forward, backward] : {std::tuple{"b200-sxm-180gb", b200, b200}, std::tuple{"gb200", b200, b200},
                                                std::tuple{"gb300", 1.254 / 2.158, 2.510 / 4.654}}) {
    CAPTURE(name);
    const auto& gpu = find_gpu(name);
    REQUIRE(gpu.peak_for(Precision::Fp4).has_value());
    const Seconds launch = compute_constants().launch_overhead;
    Kernel k = gemm(KernelClass::MlpUpGemm, {16384, 14336, 4096, 1}, Bytes(0));
    const auto time = [&](Precision p, Pass pass) {
      k.precision = p;
      k.pass = pass;
      return (kernel_time(k, gpu, Precision::Bf16) - launch).value();
    };
    CHECK(time(Precision::Fp4, Pass::Forward) / time(Precision::Fp8, Pass::Forward) == doctest::Approx(forward).epsilon(1e-12));
    CHECK(time(Precision::Fp4, Pass::Recompute) / time(Precision::Fp8, Pass::Recompute) ==
          doctest::Approx(forward).epsilon(1e-12));
    k.flops = k.flops * 2.0;
    k.weight_gemm = GemmShape{4096, 14336, 16384, 1};
    CHECK(time(Precision::Fp4, Pass::Backward) / time(Precision::Fp8, Pass::Backward) ==
          doctest::Approx(backward).epsilon(1e-12));
    // Faster than fp8, but well short of fp4's peak over fp8's (2x on B200, 3x on GB300).
    CHECK(forward < 1.0);
    CHECK(1.0 / forward < gpu.peak_for(Precision::Fp4)->value() / gpu.peak_for(Precision::Fp8)->value());
  }
  // MXFP4 runs on the same fp4 instructions: NVFP4's time on Blackwell; on CDNA 4 (no measurement) its own peak at
  // the fp8 efficiency.
  Kernel k = gemm(KernelClass::MlpUpGemm, {16384, 14336, 4096, 1}, Bytes(0));
  for (const char* name : {"b200-sxm-180gb", "gb300"}) {
    CAPTURE(name);
    const auto& gpu = find_gpu(name);
    k.precision = Precision::Mxfp4;
    const Seconds mx = kernel_time(k, gpu, Precision::Bf16);
    k.precision = Precision::Fp4;
    CHECK(mx.value() == kernel_time(k, gpu, Precision::Bf16).value());
  }
  const auto& mi355x = find_gpu("mi355x");
  const ArchitectureConstants& cdna4 = architecture(mi355x.architecture);
  CHECK(cdna4.fp4_forward == 0.0);
  k.precision = Precision::Mxfp4;
  const double want = k.flops.value() / (mi355x.peak_for(Precision::Mxfp4)->value() * cdna4.gemm_fp8 *
                                         gemm_shape_factor(*k.gemm, cdna4) * sustained_clock(mi355x));
  CHECK((kernel_time(k, mi355x, Precision::Bf16) - compute_constants().launch_overhead).value() == doctest::Approx(want).epsilon(1e-12));
}

TEST_CASE("compute model: a per-tensor fp8 cast writes its transpose on Hopper, not on Blackwell") {
  Kernel cast = streaming(KernelClass::Fp8Cast, Bytes(4e9));
  cast.transposed = Bytes(1e9);
  const Seconds launch = compute_constants().launch_overhead;
  for (const char* name : {"h100-sxm5-80gb", "b200-sxm-180gb", "gb300"}) {
    CAPTURE(name);
    const auto& gpu = find_gpu(name);
    const ArchitectureConstants& arch = architecture(gpu.architecture);
    CHECK(arch.fp8_any_layout == (std::string(name) != "h100-sxm5-80gb"));
    const double bytes = arch.fp8_any_layout ? 3e9 : 4e9;
    CHECK(moved_bytes(cast, gpu).value() == bytes);
    CHECK((kernel_time(cast, gpu, Precision::Bf16) - launch).value() ==
          doctest::Approx(bytes / (gpu.memory_bandwidth.value() * arch.stream)).epsilon(1e-12));
  }
}

TEST_CASE("compute model: MI300X streams at BabelStream's measured 4.09 TB/s and runs fp8 GEMMs at hipBLASLt's rate") {
  const topology::GpuSpec& mi300x = topology::find_gpu("mi300x");
  const ArchitectureConstants& cdna3 = architecture(mi300x.architecture);
  CHECK(cdna3.stream * mi300x.memory_bandwidth.value() == doctest::Approx(4.09e12).epsilon(1e-3));
  // A large fp8 GEMM at 8192^3: hipblaslt-bench measured 1159 TFLOP/s; dtsim carries that rate x the sustained
  // share it applies to every measured best (so below it, never above).
  const double rate = cdna3.gemm_fp8 * gemm_shape_factor(GemmShape{8192, 8192, 8192, 1}, cdna3) * 2614.9e12;
  CHECK(rate < 1159.3e12);
  CHECK(rate > 0.7 * 1159.3e12);
  CHECK(cdna3.gemm_fp8 < cdna3.gemm);   // fp8 reaches a smaller share of its peak than bf16 on MI300X
}
