// Units as types. SI inside (bytes, seconds, FLOPs); conversions only at the edges.
//
// Gb/s and GB/s are different things: `gigabits_per_second(100)` is 12.5 GB/s. Sizes with a binary prefix
// (KiB, MiB, GiB) and a decimal one (KB, MB, GB) are different literals.
#pragma once

#include <compare>
#include <fmt/format.h>

namespace dtsim {

template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}
  [[nodiscard]] constexpr double value() const { return value_; }

  constexpr Quantity& operator+=(Quantity o) { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value_ -= o.value_; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator-(Quantity a) { return Quantity(-a.value_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity, Quantity) = default;

 private:
  double value_ = 0.0;
};

struct BytesTag;
struct SecondsTag;
struct FlopCountTag;
struct BytesPerSecondTag;
struct FlopsPerSecondTag;
struct WattsTag;
struct JoulesTag;
struct DollarsTag;

using Bytes = Quantity<BytesTag>;
using Seconds = Quantity<SecondsTag>;
using FlopCount = Quantity<FlopCountTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;
using Watts = Quantity<WattsTag>;
using Joules = Quantity<JoulesTag>;
using Dollars = Quantity<DollarsTag>;

constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Bytes operator*(Seconds t, BytesPerSecond r) { return r * t; }
constexpr Seconds operator/(FlopCount f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr Joules operator*(Watts p, Seconds t) { return Joules(p.value() * t.value()); }
constexpr Joules operator*(Seconds t, Watts p) { return p * t; }
constexpr Watts operator/(Joules e, Seconds t) { return Watts(e.value() / t.value()); }
constexpr FlopsPerSecond operator/(FlopCount f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }

// Edge conversions: the only places where a bare number becomes a quantity with a prefix.
constexpr BytesPerSecond gigabytes_per_second(double gbps) { return BytesPerSecond(gbps * 1e9); }
constexpr BytesPerSecond gigabits_per_second(double gbit) { return BytesPerSecond(gbit * 1e9 / 8.0); }
constexpr double to_gigabytes_per_second(BytesPerSecond r) { return r.value() / 1e9; }
constexpr double to_gigabits_per_second(BytesPerSecond r) { return r.value() * 8.0 / 1e9; }
constexpr Seconds microseconds(double us) { return Seconds(us * 1e-6); }
constexpr double to_microseconds(Seconds t) { return t.value() * 1e6; }
constexpr Bytes gibibytes(double gib) { return Bytes(gib * 1024.0 * 1024.0 * 1024.0); }
constexpr Bytes gigabytes(double gb) { return Bytes(gb * 1e9); }
constexpr double to_gibibytes(Bytes b) { return b.value() / (1024.0 * 1024.0 * 1024.0); }
constexpr double to_gigabytes(Bytes b) { return b.value() / 1e9; }
constexpr FlopsPerSecond teraflops(double tf) { return FlopsPerSecond(tf * 1e12); }
constexpr double to_teraflops(FlopsPerSecond r) { return r.value() / 1e12; }
constexpr double to_megawatt_hours(Joules e) { return e.value() / 3.6e9; }
constexpr double to_kilowatt_hours(Joules e) { return e.value() / 3.6e6; }

namespace literals {
constexpr Bytes operator""_B(unsigned long long v) { return Bytes(static_cast<double>(v)); }
constexpr Bytes operator""_KiB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1024.0); }
constexpr Bytes operator""_MiB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1048576.0); }
constexpr Bytes operator""_GiB(unsigned long long v) { return gibibytes(static_cast<double>(v)); }
constexpr Bytes operator""_GB(long double v) { return gigabytes(static_cast<double>(v)); }
constexpr Bytes operator""_GB(unsigned long long v) { return gigabytes(static_cast<double>(v)); }
constexpr Seconds operator""_s(long double v) { return Seconds(static_cast<double>(v)); }
constexpr Seconds operator""_ms(long double v) { return Seconds(static_cast<double>(v) * 1e-3); }
constexpr Seconds operator""_us(long double v) { return microseconds(static_cast<double>(v)); }
constexpr Seconds operator""_us(unsigned long long v) { return microseconds(static_cast<double>(v)); }
constexpr BytesPerSecond operator""_GBps(long double v) { return gigabytes_per_second(static_cast<double>(v)); }
constexpr BytesPerSecond operator""_GBps(unsigned long long v) { return gigabytes_per_second(static_cast<double>(v)); }
constexpr BytesPerSecond operator""_Gbps(unsigned long long v) { return gigabits_per_second(static_cast<double>(v)); }
constexpr FlopsPerSecond operator""_TFLOPS(long double v) { return teraflops(static_cast<double>(v)); }
constexpr FlopsPerSecond operator""_TFLOPS(unsigned long long v) { return teraflops(static_cast<double>(v)); }
}  // namespace literals

}  // namespace dtsim

// Quantities print with their unit, e.g. "25 GB/s", "1.5 us", "80 GiB"; a format spec applies to the number.
namespace dtsim::detail {
struct UnitLabel {
  double scale;
  const char* suffix;
};
template <class Tag> constexpr UnitLabel unit_label();
template <> constexpr UnitLabel unit_label<BytesTag>() { return {1.0, "B"}; }
template <> constexpr UnitLabel unit_label<SecondsTag>() { return {1.0, "s"}; }
template <> constexpr UnitLabel unit_label<FlopCountTag>() { return {1.0, "FLOP"}; }
template <> constexpr UnitLabel unit_label<BytesPerSecondTag>() { return {1e-9, "GB/s"}; }
template <> constexpr UnitLabel unit_label<FlopsPerSecondTag>() { return {1e-12, "TFLOP/s"}; }
template <> constexpr UnitLabel unit_label<WattsTag>() { return {1.0, "W"}; }
template <> constexpr UnitLabel unit_label<JoulesTag>() { return {1.0, "J"}; }
template <> constexpr UnitLabel unit_label<DollarsTag>() { return {1.0, "USD"}; }
}  // namespace dtsim::detail

template <class Tag>
struct fmt::formatter<dtsim::Quantity<Tag>> : fmt::formatter<double> {
  template <class Ctx>
  auto format(dtsim::Quantity<Tag> q, Ctx& ctx) const -> decltype(ctx.out()) {
    constexpr auto label = dtsim::detail::unit_label<Tag>();
    auto out = fmt::formatter<double>::format(q.value() * label.scale, ctx);
    return fmt::format_to(out, " {}", label.suffix);
  }
};
