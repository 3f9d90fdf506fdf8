#include <doctest/doctest.h>
#include <fmt/format.h>

#include "topology/units.hpp"

using namespace dtsim;
using namespace dtsim::literals;

TEST_CASE("gigabits and gigabytes differ by a factor of 8") {
  CHECK(gigabits_per_second(100).value() == doctest::Approx(12.5e9));
  CHECK((100_Gbps).value() * 8.0 == doctest::Approx((100_GBps).value()));
  CHECK(to_gigabits_per_second(25_GBps) == doctest::Approx(200.0));
}

TEST_CASE("binary and decimal sizes differ") {
  CHECK((80_GiB).value() == 85899345920.0);
  CHECK((80_GB).value() == 80e9);
  CHECK(to_gibibytes(1_GiB) == 1.0);
}

TEST_CASE("derived units compose") {
  const Seconds t = 1_GB / 25_GBps;
  CHECK(t.value() == doctest::Approx(0.04));
  CHECK((25_GBps * 2.0_s).value() == doctest::Approx(50e9));
  CHECK((FlopCount(312e12) / 312_TFLOPS).value() == doctest::Approx(1.0));
  CHECK(to_microseconds(1.5_us) == doctest::Approx(1.5));
  CHECK((2_GBps) / (1_GBps) == doctest::Approx(2.0));
}

TEST_CASE("power over time is energy, and a megawatt-hour is 3.6e9 joules") {
  const Joules e = Watts(700) * Seconds(3600);
  CHECK(e.value() == doctest::Approx(2.52e6));
  CHECK(to_kilowatt_hours(e) == doctest::Approx(0.7));
  CHECK(to_megawatt_hours(Joules(3.6e9)) == doctest::Approx(1.0));
  CHECK((e / Seconds(3600)).value() == doctest::Approx(700));
}

TEST_CASE("quantities print with their unit") {
  CHECK(fmt::format("{:g}", 25_GBps) == "25 GB/s");
  CHECK(fmt::format("{:g}", 2.0_s) == "2 s");
}
