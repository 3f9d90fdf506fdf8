// `dtsim validate`: every point of each validation scenario simulated (each in its own process, as `run` does),
// its published figures (the point's `reference`) beside dtsim's, and the error per row and per table.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "results/validation_report.hpp"
#include "sim/cli/command_support.hpp"

namespace dtsim::cli {

namespace {

// --only: every name must be a row of some table; the error lists the names there are.
void check_only(const std::vector<std::string>& only,
                const std::vector<std::pair<std::string, std::vector<Scenario>>>& tables) {
  std::set<std::string> names;
  for (const auto& table : tables)
    for (const Scenario& s : table.second) names.insert(s.name);
  for (const auto& n : only)
    if (!names.contains(n))
      throw InputError("--only", n, "no validation row has this name", fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace

int validate_command(const std::vector<std::string>& files, const std::vector<std::string>& sets,
                     const std::vector<std::string>& only, Format format) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_set(s));
  std::vector<std::pair<std::string, std::vector<Scenario>>> tables;
  if (files.empty())
    for (const auto& [origin, text] : validation_scenarios())
      tables.emplace_back(origin, load_scenarios(text, origin, overrides));
  for (const auto& f : files) tables.emplace_back(f, load_scenario_file(f, overrides));
  check_only(only, tables);
  std::vector<results::ValidationTable> report;
  for (const auto& [name, scenarios] : tables) {
    results::ValidationTable t{name, {}};
    const auto selected = [&](const Scenario& s) { return only.empty() || std::ranges::find(only, s.name) != only.end(); };
    // Ratio rows: each names its baseline, a row of the same file, which runs with it.
    std::set<std::string> names, baselines;
    for (const Scenario& s : scenarios) names.insert(s.name);
    for (const Scenario& s : scenarios) {
      const std::string& b = s.reference.baseline;
      if (b.empty()) continue;
      if (b == s.name || !names.contains(b))
        throw InputError("reference.baseline", b, "names no other row of this file",
                         fmt::format("{}", fmt::join(names, ", ")), s.file);
      if (selected(s)) baselines.insert(b);
    }
    std::map<std::string, nlohmann::json> runs;
    for (const Scenario& s : scenarios) {
      if (!selected(s) && !baselines.contains(s.name)) continue;
      if (s.reference.values.empty() && !baselines.contains(s.name))
        throw InputError("reference", "", "missing: validate compares a scenario's published figures with dtsim's",
                         "a reference section with at least one figure (see docs/validation.md)", s.file);
      runs[s.name] = run_point(s);
    }
    for (const Scenario& s : scenarios) {
      if (!selected(s) || s.reference.values.empty()) continue;   // a baseline only
      nlohmann::json row = runs.at(s.name);
      if (!s.reference.baseline.empty()) {
        row["ratio_to"] = runs.at(s.reference.baseline);
        row["ratios"] = s.reference.values;
      }
      t.rows.push_back(std::move(row));
    }
    if (!t.rows.empty()) report.push_back(std::move(t));
  }
  const auto json = results::validation_json(report);
  if (format == Format::Json) std::cout << json.dump(2) << "\n";
  else std::cout << results::validation_text(json);
  return 0;
}

}  // namespace dtsim::cli
