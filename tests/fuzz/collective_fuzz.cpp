// Fuzz target: `dtsim collective`'s command line as the program parses it (words split at whitespace), its
// values checked: a CLI11 parse error or the one-line InputError, nothing else. Run with ./dtsim fuzz collective
// SECONDS.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/collective_options.hpp"
#include "sim/drivers/collective.hpp"
#include "topology/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> words{"dtsim", "collective"};
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  CLI::App app{"dtsim"};
  app.require_subcommand(1);
  dtsim::cli::CollectiveArgs args;
  (void)dtsim::cli::add_collective_command(app, args);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;
  }
  try {
    (void)dtsim::drivers::check_collective(args);
  } catch (const dtsim::InputError&) {
  }
  return 0;
}
