#include "topology/number_formats.hpp"

#include <array>
#include <cmath>

namespace dtsim::topology {

namespace {

// sign 1 bit + exponent + mantissa (IEEE 754-2019 binary64/32/16; TF32 and BF16 as NVIDIA and Google define
// them: FP32's exponent with 10 and 7 mantissa bits; FP8 per the OCP 8-bit floating point specification; FP4 E2M1
// per the OCP Microscaling Formats (MX) v1.0 specification).
constexpr std::array kFormats = {
    FloatFormat{"fp64", 11, 52}, FloatFormat{"fp32", 8, 23},    FloatFormat{"tf32", 8, 10},
    FloatFormat{"bf16", 8, 7},   FloatFormat{"fp16", 5, 10},    FloatFormat{"fp8-e4m3", 4, 3, false},
    FloatFormat{"fp8-e5m2", 5, 2},   FloatFormat{"fp4-e2m1", 2, 1, false, false},
};

}  // namespace

int FloatFormat::bias() const { return (1 << (exponent_bits - 1)) - 1; }

double FloatFormat::max_finite() const {
  // IEEE: the top exponent is special, so the largest is (2 - 2^-m) x 2^(emax) with emax = bias. E4M3: the top
  // exponent (bias + 1) holds numbers up to a mantissa of all ones but one.
  if (ieee_special_exponent) return (2.0 - std::ldexp(1.0, -mantissa_bits)) * std::ldexp(1.0, bias());
  const double top = top_nan ? 2.0 - std::ldexp(1.0, 1 - mantissa_bits) : 2.0 - std::ldexp(1.0, -mantissa_bits);
  return top * std::ldexp(1.0, bias() + 1);
}

double FloatFormat::min_normal() const { return std::ldexp(1.0, 1 - bias()); }

double FloatFormat::min_subnormal() const { return std::ldexp(1.0, 1 - bias() - mantissa_bits); }

double FloatFormat::epsilon() const { return std::ldexp(1.0, -mantissa_bits); }

std::span<const FloatFormat> float_formats() { return kFormats; }

std::optional<FloatFormat> float_format(Precision p) {
  switch (p) {
    case Precision::Fp64: return kFormats[0];
    case Precision::Fp32: return kFormats[1];
    case Precision::Tf32: return kFormats[2];
    case Precision::Bf16: return kFormats[3];
    case Precision::Fp16: return kFormats[4];
    case Precision::Fp8:
    case Precision::Mxfp8: return kFormats[5];   // E4M3, the forward-pass format of FP8 training (MX: its elements)
    case Precision::Fp4:                          // E2M1, NVFP4's elements
    case Precision::Mxfp4: return kFormats[7];   // and MXFP4's (OCP MX v1.0's FP4)
    case Precision::Int8:
    case Precision::Int4: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace dtsim::topology
