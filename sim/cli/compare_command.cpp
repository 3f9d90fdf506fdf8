// `dtsim compare`: the buyer's table. Each point of the scenario (a sweep over clusters) gets its plan searched
// (plan_point), and its best plan becomes one row: step time, time, cost and energy to train, the bill of
// materials' capital, and whether the row is on the Pareto front of time against cost. A cluster on which nothing
// fits is a row that says by how much, not an error: "it does not fit" is an answer to the buyer's question.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iostream>

#include "results/cost.hpp"
#include "results/run_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/plan.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;

std::string cluster_label(const topology::ClusterSpec& c) {
  std::string out = fmt::format("{} x {} ({}", c.nodes * c.gpus_per_node, c.gpu.name, topology::to_string(c.intra));
  if (c.inter != topology::InterKind::None)
    out += fmt::format("; {} x {} {}", c.effective_nics_per_node(), c.inter_link.name, topology::to_string(c.inter));
  return out + ")";
}

// The two axes of the front: time and cost to train when the run's length is known, else per million tokens.
struct Axes {
  bool length = false;
  [[nodiscard]] double time(const json& plan) const {
    return length ? plan["cost"]["days"].get<double>() : 1e6 / plan["tokens_per_s"].get<double>();
  }
  [[nodiscard]] double cost(const json& plan) const {
    return length ? plan["cost"]["total_usd"].get<double>() : plan["cost"]["usd_per_million_tokens"].get<double>();
  }
};

// Marks each fitting row `pareto`: no other row is at least as fast and as cheap, and better in one.
void mark_front(json& rows, const Axes& axes) {
  for (json& r : rows) {
    if (!r["fits"].get<bool>()) continue;
    const double t = axes.time(r["plan"]), c = axes.cost(r["plan"]);
    bool dominated = false;
    for (const json& o : rows) {
      if (&o == &r || !o["fits"].get<bool>()) continue;
      const double ot = axes.time(o["plan"]), oc = axes.cost(o["plan"]);
      dominated = dominated || (ot <= t && oc <= c && (ot < t || oc < c));
    }
    r["pareto"] = !dominated;
  }
}

std::string table(const json& doc, const Axes& axes) {
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
                       axes.length ? p["energy"]["total_MWh"].get<double>() : p["energy"]["per_token_J"].get<double>(),
                       axes.length ? 1 : 3);
  }
  out += "(* on the Pareto front of time against cost; cost_USD as each scenario's cost.mode prices it; capital: the "
         "bill of materials)\n";
  for (const json& r : doc["clusters"])
    out += fmt::format("  {:<28} {}\n", r["name"].get<std::string>(), r["cluster"].get<std::string>());
  return out;
}

const std::vector<std::string> kCompareCsvColumns = {
    "name", "cluster", "gpus", "fits", "pareto", "tp", "pp", "dp", "vpp", "zero", "order", "micro_batch", "recompute",
    "sequence_parallel", "step_time_s", "tokens_per_s", "mfu", "days", "gpu_hours", "total_usd", "capital_usd",
    "usd_per_million_tokens", "per_token_J", "total_MWh", "why"};

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
  if (compare.confirm < 0) throw InputError("--confirm", std::to_string(compare.confirm), "out of range", "an integer >= 0");
  const drivers::Objective objective = drivers::parse_objective(compare.objective);
  if (!compare.out.empty()) results::make_directory(compare.out);
  json rows = json::array();
  Axes axes{true};
  for (const scenario::Scenario& s : load(args)) {
    const drivers::PointPlans p = drivers::plan_point(s, 1, compare.confirm, objective, false);
    const auto built = drivers::located(s, [&] { return topology::build_cluster(s.cluster); });
    const auto bom = drivers::scenario_bom(s, built.topology);
    json row = {{"name", s.name},
                {"cluster", cluster_label(s.cluster)},
                {"gpu", s.cluster.gpu.name},
                {"gpus", p.gpus},
                {"capital_usd", bom.total().value()},
                {"bill_complete", bom.complete()},
                {"candidates", p.search.candidates},
                {"fitting", p.search.ranked.size()},
                {"fits", !p.rows.empty()},
                {"pareto", false}};
    if (p.rows.empty()) {
      row["why"] = drivers::nothing_fits_text(p.search, p.gpus);
      if (p.search.nearest) {
        row["nearest"] = drivers::plan_label(p.search.nearest->choice, p.gpus);
        row["lacks_bytes"] = -p.search.nearest->memory.margin.value();
      }
    } else {
      row["plan"] = drivers::plan_row_json(p.rows.front(), p.gpus);
      row["plan_label"] = drivers::plan_label(p.rows.front().candidate.choice, p.gpus);
      axes.length = axes.length && !row["plan"]["cost"]["days"].is_null();
    }
    rows.push_back(std::move(row));
  }
  mark_front(rows, axes);
  const json doc = {{"objective", std::string(to_string(objective))},
                    {"axes", axes.length ? json{{"time", "days"}, {"cost", "total_usd"}}
                                         : json{{"time", "s_per_million_tokens"}, {"cost", "usd_per_million_tokens"}}},
                    {"clusters", rows}};
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
