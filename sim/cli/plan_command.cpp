// `dtsim plan`: the search of sim/search wired to scenarios. Each candidate is the scenario with its plan keys set
// and loaded again, so every framework default that follows the plan (sequence parallelism, TP comm overlap, the
// distributed optimizer, the gradient bucket) is resolved as for a scenario written by hand; the best are run on
// the SimGrid engine (each in its own process) and ranked by what it gives.
#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <iostream>
#include <yaml-cpp/yaml.h>

#include "results/run_report.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/plan_emit.hpp"
#include "sim/drivers/plan.hpp"
#include "sim/drivers/serving_plan.hpp"
#include "sim/scenario/plan_template.hpp"
#include "topology/error.hpp"
#include "results/energy.hpp"
#include "sim/search/plan_search.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;
using sim::search::PlanChoice;
using workloads::Recompute;

std::string breakdown_line(const std::string& who, const json& b) {
  return fmt::format("  {:<4} compute {:.3f} s, exposed comm {:.3f} s, bubble {:.3f} s, other {:.3f} s, interference {:.3f} s\n",
                     who, b.at("compute").get<double>(), b.at("exposed_comm").get<double>(),
                     b.at("pipeline_bubble").get<double>(), b.at("other").get<double>(),
                     b.at("interference").get<double>());
}

std::string objective_figure(drivers::Objective o, double v) {
  switch (o) {
    case drivers::Objective::Time: return fmt::format("{:.3f} s a step", v);
    case drivers::Objective::Cost: return fmt::format("{:.4f} USD a step", v);
    case drivers::Objective::Energy: return fmt::format("{:.0f} J a step", v);
  }
  return {};
}

// Why #1 is ahead of #2: the objective's figures, and the two SimGrid breakdowns side by side. Where only #1 was
// confirmed (--confirm 1), its figure and #2's come from different engines and are not compared as one.
std::string why_it_wins(const drivers::PointPlans& p, drivers::Objective o) {
  if (p.rows.size() < 2) return {};
  const drivers::PlanRow& a = p.rows[0];
  const drivers::PlanRow& b = p.rows[1];
  if (a.run.has_value() != b.run.has_value())
    return fmt::format("why #1 is first: the analytic engine ranked it first{} and the SimGrid engine confirmed it at "
                       "{}; #2 was not run on the SimGrid engine ({} on the analytic engine): --confirm 2 compares "
                       "the two on one engine\n",
                       o == drivers::Objective::Time ? fmt::format(" ({})", objective_figure(o, a.candidate.analytic_step.value()))
                                            : std::string(),
                       objective_figure(o, a.objective(o)), objective_figure(o, b.objective(o)));
  std::string out = fmt::format("why #1 wins: {} against {} for #2 ({:.2f} % better){}\n", objective_figure(o, a.objective(o)),
                                objective_figure(o, b.objective(o)), 100 * (b.objective(o) / a.objective(o) - 1),
                                a.run && b.run ? ", on the SimGrid engine" : ", on the analytic engine");
  if (a.run && b.run) out += breakdown_line("#1", a.run->at("breakdown_s")) + breakdown_line("#2", b.run->at("breakdown_s"));
  return out;
}

std::string table(const scenario::Scenario& s, const drivers::PointPlans& p, drivers::Objective o) {
  const auto& r = p.search;
  const auto more = r.pruned.find(std::string(sim::search::kRecomputesMore));
  const std::size_t untimed = more == r.pruned.end() ? 0 : more->second;
  std::string out = fmt::format("{}: {} candidate plans on {} GPUs, {} fit ({} timed, {} only recompute more)", s.name,
                                r.candidates, p.gpus, r.ranked.size() + untimed, r.ranked.size(), untimed);
  std::size_t dropped = 0;
  for (const auto& [why, n] : r.pruned) dropped += n;
  dropped -= untimed;
  out += dropped > 0 ? fmt::format(", {} dropped (most: {})", dropped, drivers::most_common_reason(r.pruned)) : "";
  out += fmt::format("; ranked by {}\n", to_string(o));
  const bool length = !p.rows.empty() && p.rows.front().accounting.cost.time.has_value();
  out += fmt::format("{:>4}  {:<46} {:>10} {:>9} {:>9} {:>5} {:>7} {:>9} {:>8} {:>9}{}\n", "rank", "plan", "analytic_s",
                     "simgrid_s", "tokens/s", "MFU", "spare", "USD/Mtok", "J/token", "kW",
                     length ? fmt::format(" {:>8} {:>12} {:>8}", "days", "total_USD", "MWh") : "");
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const drivers::PlanRow& row = p.rows[i];
    const auto& a = row.accounting;
    out += fmt::format("{:>4}  {:<46} {:>10.3f} {:>9} {:>9.0f} {:>4.0f}% {:>6.1f}G {:>9.3f} {:>8.3f} {:>9.1f}", i + 1,
                       drivers::plan_label(row.candidate.choice, p.gpus), row.candidate.analytic_step.value(),
                       row.run ? fmt::format("{:.3f}", row.step()) : "-", a.tokens_per_step / row.step(), 100 * row.mfu,
                       to_gibibytes(row.candidate.memory.margin), a.cost.usd_per_million_tokens,
                       a.energy.facility.value() / a.tokens_per_step, a.energy.facility.value() / row.step() / 1e3);
    if (length)
      out += fmt::format(" {:>8.1f} {:>12.0f} {:>8.1f}", a.cost.time->value() / 86400, a.cost.total->value(),
                         to_megawatt_hours(*a.cost.energy));
    out += "\n";
  }
  out += fmt::format("(spare: GPU memory left; {} cost; kW and J/token: the facility's, PUE {:g})\n",
                     p.rows.empty() ? "" : std::string(results::to_string(p.rows.front().accounting.prices.mode)),
                     p.rows.empty() ? 1.0 : p.rows.front().accounting.prices.pue);
  return out + why_it_wins(p, o);
}

// The CSV's columns after the rank, each with where a ranked plan's JSON holds it.
constexpr std::pair<const char*, const char*> kPlanCsvCells[] = {
    {"tp", "/parallelism/tp"}, {"pp", "/parallelism/pp"}, {"dp", "/parallelism/dp"}, {"vpp", "/parallelism/vpp"},
    {"zero", "/parallelism/zero"}, {"order", "/parallelism/order"}, {"micro_batch", "/training/micro_batch"},
    {"recompute", "/training/recompute"}, {"sequence_parallel", "/training/sequence_parallel"},
    {"analytic_step_time_s", "/analytic_step_time_s"}, {"step_time_s", "/step_time_s"}, {"confirmed", "/confirmed"},
    {"tokens_per_s", "/tokens_per_s"}, {"mfu", "/mfu"}, {"margin_bytes", "/margin_bytes"},
    {"usd_per_million_tokens", "/cost/usd_per_million_tokens"}, {"step_J", "/energy/step_J"},
    {"per_token_J", "/energy/per_token_J"}, {"days", "/cost/days"}, {"gpu_hours", "/cost/gpu_hours"},
    {"total_usd", "/cost/total_usd"}, {"total_MWh", "/energy/total_MWh"}};

std::string csv(const std::vector<std::pair<std::string, json>>& points) {
  std::vector<std::string> columns{"rank"};
  for (const auto& [column, path] : kPlanCsvCells) columns.emplace_back(column);
  std::vector<std::pair<std::string, json>> rows;
  for (const auto& [name, point] : points) {
    int rank = 0;
    for (const json& p : point.at("plans")) {
      json cells = {{"rank", ++rank}};
      for (const auto& [column, path] : kPlanCsvCells) cells[column] = p.at(json::json_pointer(path));
      rows.emplace_back(name, std::move(cells));
    }
  }
  return results::csv_rows(columns, rows);
}

}  // namespace

namespace {

// The best plan the framework can run: the first of the ranked rows (confirmed first), then of every fitting plan
// the search ranked, that it has flags for; none: the error about the best one.
std::string emit_best(const std::string& framework, const scenario::Scenario& s, const drivers::PointPlans& p) {
  std::optional<InputError> first;
  const auto attempt = [&](const sim::search::Candidate& c, double step) -> std::optional<std::string> {
    try {
      // A plan behind faster ones says why they were not written (the first one's reason).
      return drivers::emit_plan(framework, s, c.workload, step, first ? first->reason() : std::string());
    } catch (const InputError& e) {
      if (!first) first = e;
      return std::nullopt;
    }
  };
  for (const drivers::PlanRow& r : p.rows)
    if (auto script = attempt(r.candidate, r.step())) return *script;
  for (const auto& c : p.search.ranked)
    if (auto script = attempt(c, c.analytic_step.value())) return *script;
  if (!first) throw InputError("--emit", framework, "no plan fits to write", "a scenario with a plan that fits");
  throw *first;
}

// The same for a serving point: the first of its ranked splits the engine can launch.
std::string emit_best_serving(const std::string& framework, const drivers::ServingPlans& p) {
  std::optional<InputError> first;
  int rank = 0;
  for (const drivers::ServingPlanRow& r : p.rows) {
    try {
      return drivers::emit_serving_plan(framework, r.scenario, r.run, ++rank);
    } catch (const InputError& e) {
      if (!first) first = e;
    }
  }
  if (!first) throw InputError("--emit", framework, "no plan serves to write", "a scenario with a plan that serves");
  throw *first;
}

}  // namespace

int plan_command(const ScenarioArgs& args, const PlanArgs& plan) {
  drivers::check_count("--top", plan.top, 1);
  drivers::check_count("--confirm", plan.confirm, 0);
  const drivers::Objective objective = drivers::parse_objective(plan.objective);
  if (!plan.out.empty()) results::make_directory(plan.out);
  std::vector<std::pair<std::string, json>> points;
  std::string text;
  if (!plan.emit.empty()) drivers::check_emit_framework(plan.emit);   // before any search
  const std::vector<scenario::Scenario> scenarios = load(args);
  if (!plan.emit.empty() && plan.out.empty() && scenarios.size() > 1)
    throw InputError("--emit", plan.emit, fmt::format("writes one script a point, and the scenario has {}:", scenarios.size()),
                     "--out DIR for the scripts");
  const auto serves = [](const scenario::Scenario& s) { return s.workload && s.workload->inference.has_value(); };
  const bool serving = !scenarios.empty() && serves(scenarios.front());
  for (const scenario::Scenario& s : scenarios)
    if (serves(s) != serving)
      throw InputError("inference", s.name, "mixes serving and training points in one plan; their plans are not one "
                       "table:", "one kind a file", s.file);
  if (!plan.emit.empty()) drivers::check_emit_kind(plan.emit, serving);   // before any search
  for (const scenario::Scenario& s : scenarios) {
    std::string script;
    if (serving) {   // a serving point: the split of its GPUs into replicas
      const drivers::ServingPlans p = drivers::plan_serving(s, plan.top, plan.confirm, objective);
      if (!plan.emit.empty()) script = emit_best_serving(plan.emit, p);
      points.emplace_back(s.name, drivers::serving_plan_json(s, p, objective));
      text += drivers::serving_plan_table(s, p, objective);
    } else {
      const drivers::PointPlans p = drivers::plan_point(s, plan.top, plan.confirm, objective);
      if (!plan.emit.empty()) script = emit_best(plan.emit, s, p);
      points.emplace_back(s.name, drivers::plan_json(s, p, objective));
      text += table(s, p, objective);
    }
    if (plan.emit.empty()) continue;
    if (plan.out.empty()) {
      std::cout << script;
      return 0;
    }
    results::write_file(plan.out + "/" + drivers::emit_file_name(plan.emit, s.name), script, "--out");
  }
  json all = json::array();
  for (const auto& [name, point] : points) all.push_back(point);
  const std::string json_text = (all.size() == 1 ? all.front() : all).dump(2) + "\n";
  const auto csv_text = [&] { return serving ? drivers::serving_plan_csv(points) : csv(points); };
  if (!plan.out.empty()) {
    results::write_file(plan.out + "/plans.json", json_text, "--out");
    results::write_file(plan.out + "/plans.csv", csv_text(), "--out");
  }
  if (args.format == Format::Json) std::cout << json_text;
  else if (args.format == Format::Csv) std::cout << csv_text();
  else std::cout << text;
  return 0;
}

}  // namespace dtsim::cli
