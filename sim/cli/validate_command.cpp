// `dtsim validate`: the validation driver (sim/drivers/validate.hpp) on the given files, or on the embedded
// tables of scenarios/validation, printed as a table or JSON.
#include <iostream>

#include "results/validation_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/validate.hpp"

namespace dtsim::cli {

int validate_command(const std::vector<std::string>& files, const std::vector<std::string>& sets,
                     const std::vector<std::string>& only, Format format) {
  const auto overrides = scenario::parse_sets(sets);
  const auto json = results::validation_json(drivers::validate(drivers::validation_sources(files), overrides, only));
  if (format == Format::Json) std::cout << json.dump(2) << "\n";
  else std::cout << results::validation_text(json);
  return 0;
}

}  // namespace dtsim::cli
