// Fuzz target: scenario YAML text -> resolved scenarios, or the one-line InputError. Anything else (another
// exception, a crash, a leak, a hang) is a finding. Run with ./dtsim fuzz scenario SECONDS.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/cli/scenario.hpp"
#include "topology/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)dtsim::cli::load_scenarios(text, "fuzz.yaml");
  } catch (const dtsim::InputError&) {
  }
  return 0;
}
