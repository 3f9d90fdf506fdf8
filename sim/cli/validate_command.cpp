// `dtsim validate`: every point of each validation scenario simulated (each in its own process, as `run` does),
// its published figures (the point's `reference`) beside dtsim's, and the error per row and per table.
#include <iostream>

#include "results/validation_report.hpp"
#include "sim/cli/command_support.hpp"

namespace dtsim::cli {

int validate_command(const std::vector<std::string>& files, const std::vector<std::string>& sets, Format format) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_set(s));
  std::vector<std::pair<std::string, std::vector<Scenario>>> tables;
  if (files.empty())
    for (const auto& [origin, text] : validation_scenarios())
      tables.emplace_back(origin, load_scenarios(text, origin, overrides));
  for (const auto& f : files) tables.emplace_back(f, load_scenario_file(f, overrides));
  std::vector<results::ValidationTable> report;
  for (const auto& [name, scenarios] : tables) {
    results::ValidationTable t{name, {}};
    for (const Scenario& s : scenarios) {
      if (s.reference.values.empty())
        throw InputError("reference", "", "missing: validate compares a scenario's published figures with dtsim's",
                         "a reference section with at least one figure (see docs/validation.md)", s.file);
      t.rows.push_back(run_point(s, ""));
    }
    report.push_back(std::move(t));
  }
  const auto json = results::validation_json(report);
  if (format == Format::Json) std::cout << json.dump(2) << "\n";
  else std::cout << results::validation_text(json);
  return 0;
}

}  // namespace dtsim::cli
