// `dtsim run`: each scenario point simulated (sim/drivers/run.hpp), its result object printed as a table, JSON or
// CSV, and written with the resolved scenario under --out.
#include <fmt/format.h>
#include <iostream>

#include "results/files.hpp"
#include "results/run_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/run.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;

std::string json_text(const std::vector<json>& rows, bool sweep) {
  if (rows.size() == 1 && !sweep) return rows.front().dump(2) + "\n";
  return json(rows).dump(2) + "\n";
}

void write_outputs(const std::string& dir, const std::vector<scenario::Scenario>& scenarios, const std::vector<json>& rows, bool sweep) {
  results::write_file(dir + "/result.json", json_text(rows, sweep), "--out");
  results::write_file(dir + "/result.csv", results::run_csv(rows), "--out");
  std::string yaml;
  for (const auto& s : scenarios) yaml += (yaml.empty() ? "" : "---\n") + scenario::to_yaml(s);
  results::write_file(dir + "/scenario.resolved.yaml", yaml, "--out");
}

}  // namespace

int run_command(const ScenarioArgs& args, const RunOutputs& outputs) {
  const auto scenarios = load(args);
  drivers::TraceRequest trace{outputs.trace, {results::parse_trace_ranks(outputs.trace_ranks), outputs.trace_links}};
  if (outputs.trace.empty() && outputs.dir.empty() && (outputs.trace_links || outputs.trace_ranks != "stages"))
    throw InputError(outputs.trace_links ? "--trace-links" : "--trace-ranks", outputs.trace_links ? "" : outputs.trace_ranks,
                     "shapes a trace, and none is written without", "--trace FILE or --out DIR");
  if (outputs.trace_links)
    for (const auto& s : scenarios)
      if (s.simulation.engine == scenario::EngineKind::Analytic)
        throw InputError("--trace-links", "", "counts the transfers the SimGrid engine plays; the analytic engine plays none, so",
                         "simulation.engine: simgrid", s.file);
  if (trace.path.empty() && !outputs.dir.empty() && scenarios.size() == 1) trace.path = outputs.dir + "/trace.json";
  if (!outputs.trace.empty() && scenarios.size() != 1)
    throw InputError("--trace", outputs.trace, fmt::format("the scenario has {} points; --trace takes", scenarios.size()),
                     "a scenario without sweep axes (one point's resolved scenario is in --out DIR)");
  if (!outputs.dir.empty()) results::make_directory(outputs.dir);   // before the runs: the trace goes there
  // As run: what auto chose written into the resolved scenarios.
  const auto [resolved, rows] = drivers::run(scenarios, trace);
  const bool sweep = scenarios.front().point.index >= 0;
  if (!outputs.dir.empty()) write_outputs(outputs.dir, resolved, rows, sweep);
  if (args.format == Format::Json) std::cout << json_text(rows, sweep);
  else if (args.format == Format::Csv) std::cout << results::run_csv(rows);
  else std::cout << results::run_table(rows);
  return 0;
}

}  // namespace dtsim::cli
