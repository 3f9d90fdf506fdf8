// `dtsim validate` as a library call: every point of each validation table simulated (each in its own process, as
// `run` does), its published figures (the point's `reference`) beside dtsim's; a table whose rows set keys their
// source does not state runs a second time from its stated columns only.
#include "sim/drivers/validate.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/drivers/run.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {

namespace {

// --only: every name must be a row of some table; the error lists the names there are.
void check_only(const std::vector<std::string>& only, const std::vector<const std::vector<scenario::Scenario>*>& tables) {
  std::set<std::string> names;
  for (const auto* table : tables)
    for (const scenario::Scenario& s : *table) names.insert(s.name);
  for (const auto& n : only)
    if (!names.contains(n))
      throw InputError("--only", n, "no validation row has this name", fmt::format("{}", fmt::join(names, ", ")));
}

// The rows of one table (`only` selects, their baselines run with them), run and paired with their references.
results::ValidationTable run_table(const std::string& name, const std::vector<scenario::Scenario>& scenarios,
                                   const std::vector<std::string>& only) {
  results::ValidationTable t{name, {}, {}, {}};
  const auto selected = [&](const scenario::Scenario& s) { return only.empty() || std::ranges::find(only, s.name) != only.end(); };
  // Ratio rows: each names its baseline, a row of the same file, which runs with it.
  std::set<std::string> names, baselines;
  for (const scenario::Scenario& s : scenarios) names.insert(s.name);
  for (const scenario::Scenario& s : scenarios) {
    const std::string& b = s.reference.baseline;
    if (b.empty()) continue;
    if (b == s.name || !names.contains(b))
      throw InputError("reference.baseline", b, "names no other row of this file",
                       fmt::format("{}", fmt::join(names, ", ")), s.file);
    if (selected(s)) baselines.insert(b);
  }
  std::map<std::string, nlohmann::json> runs;
  for (const scenario::Scenario& s : scenarios) {
    if (!selected(s) && !baselines.contains(s.name)) continue;
    if (s.reference.values.empty() && !baselines.contains(s.name))
      throw InputError("reference", "", "missing: validate compares a scenario's published figures with dtsim's",
                       "a reference section with at least one figure (see docs/validation.md)", s.file);
    runs[s.name] = run_point(s);
  }
  for (const scenario::Scenario& s : scenarios) {
    if (!selected(s) || s.reference.values.empty()) continue;   // a baseline only
    nlohmann::json row = runs.at(s.name);
    if (!s.reference.baseline.empty()) {
      row["ratio_to"] = runs.at(s.reference.baseline);
      row["ratios"] = s.reference.values;
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The keys a table's rows set that its source does not state (the first row's reference.unstated).
std::vector<std::string> unstated_keys(const std::vector<scenario::Scenario>& scenarios) {
  for (const scenario::Scenario& s : scenarios)
    if (!s.reference.unstated.empty()) return s.reference.unstated;
  return {};
}

// The keys its source states otherwise, as "key value" (the first row's reference.stated).
std::vector<std::string> stated_keys(const std::vector<scenario::Scenario>& scenarios) {
  for (const scenario::Scenario& s : scenarios)
    if (!s.reference.stated.empty()) {
      std::vector<std::string> out;
      for (const auto& [key, value] : s.reference.stated) out.push_back(key + " " + value);
      return out;
    }
  return {};
}

}  // namespace

std::vector<ValidationSource> validation_sources(const std::vector<std::string>& files) {
  std::vector<ValidationSource> out;
  if (files.empty())
    for (const auto& [origin, text] : scenario::validation_scenarios()) out.push_back({origin, text});
  for (const auto& f : files) out.push_back({f, scenario::read_scenario_text(f)});
  return out;
}

std::vector<results::ValidationTable> validate(const std::vector<ValidationSource>& sources,
                                               const std::vector<scenario::Override>& overrides,
                                               const std::vector<std::string>& only) {
  // (file, its rows as written, its rows from the source's stated columns only)
  struct Table {
    std::string name;
    std::vector<scenario::Scenario> written, stated;
  };
  std::vector<Table> tables;
  for (const auto& [name, text] : sources) {
    auto written = scenario::load_scenarios(text, name, overrides);
    auto stated = unstated_keys(written).empty() && stated_keys(written).empty()
                      ? std::vector<scenario::Scenario>{}
                      : scenario::load_stated_only(text, name, overrides);
    tables.push_back({name, std::move(written), std::move(stated)});
  }
  {
    std::vector<const std::vector<scenario::Scenario>*> written;   // the rows as written name every row there is
    for (const auto& t : tables) written.push_back(&t.written);
    check_only(only, written);
  }
  std::vector<results::ValidationTable> report;
  for (const auto& table : tables) {
    auto written = run_table(table.name, table.written, only);
    if (written.rows.empty()) continue;
    report.push_back(std::move(written));
    if (table.stated.empty()) continue;
    auto stated = run_table(table.name, table.stated, only);
    stated.unstated = unstated_keys(table.written);
    stated.stated = stated_keys(table.written);
    if (!stated.rows.empty()) report.push_back(std::move(stated));
  }
  return report;
}

}  // namespace dtsim::drivers
