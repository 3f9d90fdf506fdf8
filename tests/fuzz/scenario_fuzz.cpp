// Fuzz target: scenario YAML text -> resolved scenarios, or the one-line InputError. Anything else (another
// exception, a crash, a leak, a hang) is a finding. Run with ./dtsim fuzz scenario SECONDS.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // At most 16 sweep points, not 100,000: under ASan a point costs milliseconds, so large sweeps made most
    // of the time go to a few inputs (136 executions a second at 256); the limit's check is the same code at any
    // value, and two axes of a few values each still reach every path of the expansion.
    (void)dtsim::scenario::load_scenarios(text, "fuzz.yaml", {}, false, 16);
  } catch (const dtsim::InputError&) {
  }
  return 0;
}
