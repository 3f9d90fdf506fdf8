// `dtsim compare`: the buyer's table (sim/drivers/compare.hpp) printed as a table, JSON or CSV.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iostream>

#include "results/cost.hpp"
#include "results/run_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/compare.hpp"
#include "sim/drivers/plan.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;


std::string table(const json& doc, const drivers::CompareAxes& axes) {
  std::string out = fmt::format("compare: {} cluster options, each with its best plan by {}{}\n",
                                doc["clusters"].size(), doc["objective"].get<std::string>(),
                                axes.length ? "" : " (no training.tokens or training.steps: figures per million tokens)");
  out += fmt::format("{:<2}{:<28} {:>5}  {:<40} {:>8} {:>9} {:>5} {:>8} {:>10} {:>10} {:>9} {:>9}\n", "", "cluster", "gpus",
                     "best plan", "step_s", "tokens/s", "MFU", axes.length ? "days" : "s/Mtok",
                     axes.length ? "cost_USD" : "USD/Mtok", "capital", "USD/Mtok", axes.length ? "MWh" : "J/token");
  for (const json& r : doc["clusters"]) {
    const std::string name = r["name"].get<std::string>();
    if (!r["fits"].get<bool>()) {
      out += fmt::format("  {:<28} {:>5}  does not fit: {}\n", name, r["gpus"].get<int>(), r["why"].get<std::string>());
      continue;
    }
    const json& p = r["plan"];
    out += fmt::format("{:<2}{:<28} {:>5}  {:<40} {:>8.3f} {:>9.0f} {:>4.0f}% {:>8.{}f} {:>10} {:>10} {:>9.3f} {:>9.{}f}\n",
                       r["pareto"].get<bool>() ? "*" : "", name, r["gpus"].get<int>(), r["plan_label"].get<std::string>(),
                       p["step_time_s"].get<double>(), p["tokens_per_s"].get<double>(), 100 * p["mfu"].get<double>(),
                       axes.time(p), axes.length ? 1 : 2, axes.length ? results::dollars_text(axes.cost(p)) : fmt::format("{:.3f}", axes.cost(p)),
                       results::dollars_text(r["capital_usd"].get<double>()), p["cost"]["usd_per_million_tokens"].get<double>(),
                       axes.length ? axes.energy_MWh(p) : p["energy"]["per_token_J"].get<double>(),
                       axes.length ? 1 : 3);
  }
  out += fmt::format("(* on the Pareto front of time against cost; {}cost_USD as each scenario's cost.mode prices it; "
                     "capital: the bill of materials)\n",
                     axes.length ? "days, cost_USD and MWh of the whole run, failures and checkpoints included; " : "");
  for (const json& r : doc["clusters"])
    out += fmt::format("  {:<28} {}\n", r["name"].get<std::string>(), r["cluster"].get<std::string>());
  return out;
}

const std::vector<std::string> kCompareCsvColumns = {
    "name", "cluster", "gpus", "fits", "pareto", "tp", "pp", "dp", "vpp", "zero", "order", "micro_batch", "recompute",
    "sequence_parallel", "step_time_s", "tokens_per_s", "mfu", "days", "gpu_hours", "total_usd", "capital_usd",
    "usd_per_million_tokens", "per_token_J", "total_MWh", "goodput", "wall_days", "run_total_usd", "why"};

std::string csv(const json& doc) {
  std::string out;
  for (const auto& c : kCompareCsvColumns) {
    if (!out.empty()) out += ',';
    out += c;
  }
  out += '\n';
  for (const json& r : doc["clusters"]) {
    json cells = {{"name", r["name"]}, {"cluster", r["cluster"]}, {"gpus", r["gpus"]}, {"fits", r["fits"]},
                  {"pareto", r.value("pareto", false)}, {"capital_usd", r["capital_usd"]}, {"why", r.value("why", "")}};
    if (r["fits"].get<bool>()) {
      const json& p = r["plan"];
      for (const char* k : {"tp", "pp", "dp", "vpp", "zero", "order"}) cells[k] = p["parallelism"][k];
      for (const char* k : {"micro_batch", "recompute", "sequence_parallel"}) cells[k] = p["training"][k];
      for (const char* k : {"step_time_s", "tokens_per_s", "mfu"}) cells[k] = p[k];
      for (const char* k : {"days", "gpu_hours", "total_usd", "usd_per_million_tokens"}) cells[k] = p["cost"][k];
      for (const char* k : {"per_token_J", "total_MWh"}) cells[k] = p["energy"][k];
      if (p.contains("training_run")) {
        const json& t = p["training_run"];
        cells["goodput"] = t["goodput"];
        cells["wall_days"] = t["wall_days"];
        cells["run_total_usd"] = t["total_usd"];
      }
    }
    std::string line;
    for (const auto& c : kCompareCsvColumns) {
      if (!line.empty()) line += ',';
      line += results::csv_cell(cells.value(c, json()));
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

int compare_command(const ScenarioArgs& args, const CompareArgs& compare) {
  drivers::check_count("--confirm", compare.confirm, 0);
  const drivers::Objective objective = drivers::parse_objective(compare.objective);
  if (!compare.out.empty()) results::make_directory(compare.out);
  const json doc = drivers::compare(load(args), compare.confirm, objective);
  const drivers::CompareAxes axes{doc["axes"]["time"] == "days"};
  if (!compare.out.empty()) {
    results::write_file(compare.out + "/compare.json", doc.dump(2) + "\n", "--out");
    results::write_file(compare.out + "/compare.csv", csv(doc), "--out");
  }
  if (args.format == Format::Json) std::cout << doc.dump(2) << "\n";
  else if (args.format == Format::Csv) std::cout << csv(doc);
  else std::cout << table(doc, axes);
  return 0;
}

}  // namespace dtsim::cli
