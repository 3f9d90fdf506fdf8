// `dtsim validate`: the validation driver (sim/drivers/validate.hpp) on the given files, or on the embedded
// tables of scenarios/validation, printed as a table or JSON.
#include <iostream>

#include "results/validation_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/validate.hpp"

namespace dtsim::cli {

int validate_command(const std::vector<std::string>& files, const std::vector<std::string>& sets,
                     const std::vector<std::string>& only, Format format) {
  std::vector<scenario::Override> overrides;
  for (const auto& s : sets) overrides.push_back(scenario::parse_set(s));
  std::vector<drivers::ValidationSource> sources;
  if (files.empty())
    for (const auto& [origin, text] : scenario::validation_scenarios()) sources.push_back({origin, text});
  for (const auto& f : files) sources.push_back({f, scenario::read_scenario_text(f)});
  const auto json = results::validation_json(drivers::validate(sources, overrides, only));
  if (format == Format::Json) std::cout << json.dump(2) << "\n";
  else std::cout << results::validation_text(json);
  return 0;
}

}  // namespace dtsim::cli
