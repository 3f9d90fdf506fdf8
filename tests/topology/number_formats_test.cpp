// Number formats from their bit layout: FP64 and FP32 against the C++ implementation's own limits, FP16 and BF16
// against their published values (the article's claim S2), FP8 against the OCP specification's table.
#include <doctest/doctest.h>

#include <cfloat>
#include <limits>

#include "topology/number_formats.hpp"

using namespace dtsim::topology;

namespace {
FloatFormat of(Precision p) {
  const auto f = float_format(p);
  REQUIRE(f.has_value());
  return *f;
}
}  // namespace

TEST_CASE("number formats: fp64 and fp32 equal the machine's own limits") {
  const auto f64 = of(Precision::Fp64);
  CHECK(f64.max_finite() == std::numeric_limits<double>::max());
  CHECK(f64.min_normal() == std::numeric_limits<double>::min());
  CHECK(f64.min_subnormal() == std::numeric_limits<double>::denorm_min());
  CHECK(f64.epsilon() == std::numeric_limits<double>::epsilon());
  const auto f32 = of(Precision::Fp32);
  CHECK(f32.max_finite() == static_cast<double>(FLT_MAX));
  CHECK(f32.min_normal() == static_cast<double>(FLT_MIN));
  CHECK(f32.min_subnormal() == static_cast<double>(std::numeric_limits<float>::denorm_min()));
  CHECK(f32.epsilon() == static_cast<double>(FLT_EPSILON));
  CHECK(f32.bits() == 32);
}

TEST_CASE("number formats: fp16 and bf16 as claim S2 quotes them") {
  const auto h = of(Precision::Fp16);
  CHECK(h.max_finite() == 65504.0);
  CHECK(h.min_normal() == doctest::Approx(6.1035e-5).epsilon(1e-4).scale(0));   // 2^-14
  CHECK(h.min_subnormal() == doctest::Approx(5.9605e-8).epsilon(1e-4).scale(0));   // 2^-24
  CHECK(h.bits() == 16);
  const auto b = of(Precision::Bf16);
  CHECK(b.max_finite() == doctest::Approx(3.3895e38).epsilon(1e-4).scale(0));   // (2 - 2^-7) x 2^127
  CHECK(b.min_normal() == static_cast<double>(FLT_MIN));              // FP32's exponent range: 1.18e-38
  CHECK(b.exponent_bits == of(Precision::Fp32).exponent_bits);
  CHECK(b.epsilon() == 1.0 / 128);
  CHECK(b.bits() == 16);
  CHECK(of(Precision::Tf32).bits() == 19);
}

TEST_CASE("number formats: fp8 per the OCP specification, none for the integer precisions") {
  const auto e4m3 = of(Precision::Fp8);
  CHECK(e4m3.max_finite() == 448.0);
  CHECK(e4m3.min_normal() == 1.0 / 64);
  CHECK(e4m3.min_subnormal() == 1.0 / 512);
  bool e5m2_seen = false;
  for (const auto& f : float_formats())
    if (f.name == "fp8-e5m2") {
      e5m2_seen = true;
      CHECK(f.max_finite() == 57344.0);
      CHECK(f.min_normal() == 1.0 / 16384);
    }
  CHECK(e5m2_seen);
  CHECK_FALSE(float_format(Precision::Int8).has_value());
  CHECK_FALSE(float_format(Precision::Int4).has_value());
}

TEST_CASE("number formats: the block-scaled formats' elements, E4M3 for mxfp8 and E2M1 for fp4 (OCP MX v1.0)") {
  CHECK(of(Precision::Mxfp8).max_finite() == 448.0);
  const auto e2m1 = of(Precision::Fp4);
  CHECK(e2m1.bits() == 4);
  CHECK(e2m1.max_finite() == 6.0);   // no infinities, no NaN: 1.5 x 2^2
  CHECK(e2m1.min_normal() == 1.0);
  CHECK(e2m1.min_subnormal() == 0.5);
  CHECK(e2m1.epsilon() == 0.5);
  CHECK(of(Precision::Mxfp4).max_finite() == 6.0);   // MXFP4's elements are E2M1 too: only the scales differ
}
