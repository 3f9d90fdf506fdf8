// Floating-point number formats, computed from their bit layout rather than quoted: the largest finite value,
// the smallest normal and subnormal values and the machine epsilon of FP64, FP32, TF32, BF16, FP16 and FP8
// (E4M3 and E5M2, OCP 8-bit floating point, 2023). The founding article's claim S2 quotes two of them.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "topology/catalog.hpp"

namespace dtsim::topology {

struct FloatFormat {
  std::string_view name;
  int exponent_bits = 0;
  int mantissa_bits = 0;        // stored fraction bits (the leading 1 of a normal number is implicit)
  // IEEE 754 reserves the top exponent for infinities and NaN. OCP's E4M3 does not: its top exponent holds
  // numbers, except the all-ones mantissa (NaN), so its largest value is 1.75 x 2^8 = 448.
  bool ieee_special_exponent = true;
  // Without IEEE's top exponent: whether the all-ones mantissa there is NaN (E4M3) or a number (FP4 E2M1, which has
  // neither infinities nor NaN: its largest value is 1.5 x 2^2 = 6).
  bool top_nan = true;

  [[nodiscard]] int bias() const;
  [[nodiscard]] double max_finite() const;
  [[nodiscard]] double min_normal() const;
  [[nodiscard]] double min_subnormal() const;
  [[nodiscard]] double epsilon() const;        // the gap between 1 and the next larger value
  [[nodiscard]] int bits() const { return 1 + exponent_bits + mantissa_bits; }
};

std::span<const FloatFormat> float_formats();
// The format a precision computes in; none for the integer precisions.
std::optional<FloatFormat> float_format(Precision p);

}  // namespace dtsim::topology
