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
#include "sim/cli/plan_emit.hpp"
#include "sim/cli/plan_support.hpp"
#include "sim/cli/plan_template.hpp"
#include "topology/error.hpp"
#include "results/energy.hpp"
#include "sim/search/plan_search.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;
using sim::search::PlanChoice;
using workloads::Recompute;

json choice_json(const PlanChoice& c, int gpus) {
  return {{"parallelism",
           {{"tp", c.tp}, {"pp", c.pp}, {"dp", gpus / (c.tp * c.pp)}, {"vpp", c.vpp}, {"zero", c.zero},
            {"order", workloads::order_name(c.order)}}},
          {"training",
           {{"micro_batch", c.micro_batch},
            {"recompute", std::string(to_string(c.recompute))},
            {"sequence_parallel", c.sequence_parallel}}}};
}

std::string most_common(std::map<std::string, std::size_t> pruned) {
  pruned.erase(std::string(sim::search::kRecomputesMore));   // those fit: not a reason a plan was dropped
  const auto it = std::ranges::max_element(pruned, {}, [](const auto& kv) { return kv.second; });
  return it == pruned.end() ? std::string() : fmt::format("{} ({})", it->first, it->second);
}

std::string breakdown_line(const std::string& who, const json& b) {
  return fmt::format("  {:<4} compute {:.3f} s, exposed comm {:.3f} s, bubble {:.3f} s, other {:.3f} s, interference {:.3f} s\n",
                     who, b.at("compute").get<double>(), b.at("exposed_comm").get<double>(),
                     b.at("pipeline_bubble").get<double>(), b.at("other").get<double>(),
                     b.at("interference").get<double>());
}

std::string objective_figure(Objective o, double v) {
  switch (o) {
    case Objective::Time: return fmt::format("{:.3f} s a step", v);
    case Objective::Cost: return fmt::format("{:.4f} USD a step", v);
    case Objective::Energy: return fmt::format("{:.0f} J a step", v);
  }
  return {};
}

// Why #1 is ahead of #2: the objective's figures, and the two SimGrid breakdowns side by side. Where only #1 was
// confirmed (--confirm 1), its figure and #2's come from different engines and are not compared as one.
std::string why_it_wins(const PointPlans& p, Objective o) {
  if (p.rows.size() < 2) return {};
  const PlanRow& a = p.rows[0];
  const PlanRow& b = p.rows[1];
  if (a.run.has_value() != b.run.has_value())
    return fmt::format("why #1 is first: the analytic engine ranked it first{} and the SimGrid engine confirmed it at "
                       "{}; #2 was not run on the SimGrid engine ({} on the analytic engine): --confirm 2 compares "
                       "the two on one engine\n",
                       o == Objective::Time ? fmt::format(" ({})", objective_figure(o, a.candidate.analytic_step.value()))
                                            : std::string(),
                       objective_figure(o, a.objective(o)), objective_figure(o, b.objective(o)));
  std::string out = fmt::format("why #1 wins: {} against {} for #2 ({:.2f} % better){}\n", objective_figure(o, a.objective(o)),
                                objective_figure(o, b.objective(o)), 100 * (b.objective(o) / a.objective(o) - 1),
                                a.run && b.run ? ", on the SimGrid engine" : ", on the analytic engine");
  if (a.run && b.run) out += breakdown_line("#1", a.run->at("breakdown_s")) + breakdown_line("#2", b.run->at("breakdown_s"));
  return out;
}

std::string table(const scenario::Scenario& s, const PointPlans& p, Objective o) {
  const auto& r = p.search;
  const auto more = r.pruned.find(std::string(sim::search::kRecomputesMore));
  const std::size_t untimed = more == r.pruned.end() ? 0 : more->second;
  std::string out = fmt::format("{}: {} candidate plans on {} GPUs, {} fit ({} timed, {} only recompute more)", s.name,
                                r.candidates, p.gpus, r.ranked.size() + untimed, r.ranked.size(), untimed);
  std::size_t dropped = 0;
  for (const auto& [why, n] : r.pruned) dropped += n;
  dropped -= untimed;
  out += dropped > 0 ? fmt::format(", {} dropped (most: {})", dropped, most_common(r.pruned)) : "";
  out += fmt::format("; ranked by {}\n", to_string(o));
  const bool length = !p.rows.empty() && p.rows.front().accounting.cost.time.has_value();
  out += fmt::format("{:>4}  {:<46} {:>10} {:>9} {:>9} {:>5} {:>7} {:>9} {:>8} {:>9}{}\n", "rank", "plan", "analytic_s",
                     "simgrid_s", "tokens/s", "MFU", "spare", "USD/Mtok", "J/token", "kW",
                     length ? fmt::format(" {:>8} {:>12} {:>8}", "days", "total_USD", "MWh") : "");
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const PlanRow& row = p.rows[i];
    const auto& a = row.accounting;
    out += fmt::format("{:>4}  {:<46} {:>10.3f} {:>9} {:>9.0f} {:>4.0f}% {:>6.1f}G {:>9.3f} {:>8.3f} {:>9.1f}", i + 1,
                       plan_label(row.candidate.choice, p.gpus), row.candidate.analytic_step.value(),
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

[[noreturn]] void nothing_fits(const scenario::Scenario& s, const sim::search::SearchResult& r, int gpus) {
  if (!r.nearest)
    throw InputError("parallelism", "", fmt::format("no candidate of the {} is a valid plan for this model on {} GPUs "
                                                    "(most common reason: {}); the search space has",
                                                    r.candidates, gpus, most_common(r.pruned)),
                     "a cluster, model or batch that some plan can run", s.file);
  throw InputError("parallelism", plan_label(r.nearest->choice, gpus), nothing_fits_text(r, gpus) + ":",
                   "more or larger GPUs, a smaller global or micro batch, or more recompute", s.file);
}

const std::vector<std::string> kPlanCsvColumns = {
    "rank", "tp", "pp", "dp", "vpp", "zero", "order", "micro_batch", "recompute", "sequence_parallel", "analytic_step_time_s",
    "step_time_s", "confirmed", "tokens_per_s", "mfu", "margin_bytes", "usd_per_million_tokens", "step_J",
    "per_token_J", "days", "gpu_hours", "total_usd", "total_MWh"};

std::string csv(const std::vector<std::pair<std::string, json>>& points) {
  std::string out = "name";
  for (const auto& c : kPlanCsvColumns) {
    out += ',';
    out += c;
  }
  out += "\n";
  for (const auto& [name, point] : points) {
    int rank = 0;
    for (const json& p : point.at("plans")) {
      const json cells = {{"rank", ++rank},
                          {"tp", p["parallelism"]["tp"]},
                          {"pp", p["parallelism"]["pp"]},
                          {"dp", p["parallelism"]["dp"]},
                          {"vpp", p["parallelism"]["vpp"]},
                          {"zero", p["parallelism"]["zero"]},
                          {"order", p["parallelism"]["order"]},
                          {"micro_batch", p["training"]["micro_batch"]},
                          {"recompute", p["training"]["recompute"]},
                          {"sequence_parallel", p["training"]["sequence_parallel"]},
                          {"analytic_step_time_s", p["analytic_step_time_s"]},
                          {"step_time_s", p["step_time_s"]},
                          {"confirmed", p["confirmed"]},
                          {"tokens_per_s", p["tokens_per_s"]},
                          {"mfu", p["mfu"]},
                          {"margin_bytes", p["margin_bytes"]},
                          {"usd_per_million_tokens", p["cost"]["usd_per_million_tokens"]},
                          {"step_J", p["energy"]["step_J"]},
                          {"per_token_J", p["energy"]["per_token_J"]},
                          {"days", p["cost"]["days"]},
                          {"gpu_hours", p["cost"]["gpu_hours"]},
                          {"total_usd", p["cost"]["total_usd"]},
                          {"total_MWh", p["energy"]["total_MWh"]}};
      out += results::csv_field(name);
      for (const auto& c : kPlanCsvColumns) {
        out += ',';
        out += results::csv_cell(cells.at(c));
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace

Objective parse_objective(const std::string& text) {
  if (text == "time") return Objective::Time;
  if (text == "cost") return Objective::Cost;
  if (text == "energy") return Objective::Energy;
  throw InputError("--objective", text, "unknown objective", "time, cost, energy");
}

std::string_view to_string(Objective o) {
  switch (o) {
    case Objective::Time: return "time";
    case Objective::Cost: return "cost";
    case Objective::Energy: return "energy";
  }
  return "?";
}

double PlanRow::step() const {
  return run ? run->at("step_time_s").get<double>() : candidate.analytic_step.value();
}

double PlanRow::objective(Objective o) const {
  switch (o) {
    case Objective::Time: return step();
    case Objective::Cost: return accounting.cost.step.value();
    case Objective::Energy: return accounting.energy.facility.value();
  }
  return step();
}

std::string plan_label(const PlanChoice& c, int gpus) {
  const bool usual = c.order == sim::search::PlanChoice{}.order;
  return fmt::format("tp {} pp {} dp {} vpp {} zero {} mb {} {}{}{}", c.tp, c.pp, gpus / (c.tp * c.pp), c.vpp, c.zero,
                     c.micro_batch, to_string(c.recompute), c.sequence_parallel ? " sp" : "",
                     usual ? std::string() : fmt::format(" {}", workloads::order_name(c.order)));
}

json plan_row_json(const PlanRow& r, int gpus) {
  json out = choice_json(r.candidate.choice, gpus);
  out["analytic_step_time_s"] = r.candidate.analytic_step.value();
  out["step_time_s"] = r.step();
  out["confirmed"] = r.run.has_value();
  out["fits"] = r.candidate.memory.fits;
  out["margin_bytes"] = r.candidate.memory.margin.value();
  out["tokens_per_s"] = r.accounting.tokens_per_step / r.step();
  out["mfu"] = r.mfu;
  if (r.run) out["breakdown_s"] = r.run->at("breakdown_s");
  add_accounting(out, r.accounting, Seconds(r.step()));
  return out;
}

std::string nothing_fits_text(const sim::search::SearchResult& r, int gpus) {
  if (!r.nearest) return fmt::format("no candidate of the {} is a valid plan on {} GPUs", r.candidates, gpus);
  return fmt::format("no plan of the {} fits in memory on {} GPUs; the nearest lacks {:.1f} GiB per GPU", r.candidates,
                     gpus, -to_gibibytes(r.nearest->memory.margin));
}

std::optional<SmallestCluster> smallest_cluster(const scenario::Scenario& s, int most_gpus) {
  if (!s.workload || !s.workload->training)
    throw InputError("training", "", "missing section: sizing searches a training step's parallel plan",
                     "a scenario with model and training sections", s.file);
  const int per_node = s.cluster.gpus_per_node;
  std::vector<std::pair<int, int>> sizes;   // (nodes, gpus per node)
  for (int g = 1; g < per_node; g *= 2) sizes.emplace_back(1, g);
  for (int nodes = 1; nodes * per_node <= most_gpus; ++nodes) sizes.emplace_back(nodes, per_node);
  for (const auto& [nodes, gpn] : sizes) {
    YAML::Node n = make_template(s).node;
    n["cluster"]["nodes"] = nodes;
    n["cluster"]["gpus_per_node"] = gpn;
    if (nodes == 1) {   // one machine: no fabric to size
      n["cluster"].remove("inter");
      n["cluster"].remove("inter_link");
      n["cluster"].remove("nics_per_node");
      n["cluster"].remove("fabric");
    }
    auto loaded = scenario::load_scenarios(YAML::Dump(n), s.file);
    DTSIM_ASSERT(loaded.size() == 1, "a resized scenario is one scenario");
    scenario::Scenario sized = std::move(loaded.front());
    sized.name = s.name;
    const int gpus = nodes * gpn;
    const Template t = make_template(sized);
    const auto space = sim::search::default_space(*sized.workload, gpus, gpn, t.fixed);
    for (const PlanChoice& c : sim::search::enumerate(space)) {
      const auto made = make(t, c, gpus);
      if (made.workload && workloads::plan_memory(*made.workload, sized.cluster.gpu).fits)
        return SmallestCluster{std::move(sized), c, gpus};
    }
  }
  return std::nullopt;
}

PointPlans plan_point(const scenario::Scenario& s, int top, int confirm, Objective objective, bool nothing_fits_is_error) {
  if (!s.workload || !s.workload->training)
    throw InputError("training", "", "missing section: plan searches a training step's parallel plan",
                     "a scenario with model and training sections", s.file);
  if (s.cluster.graph)
    throw InputError("cluster.graph", *s.cluster.graph, "is a user graph; plan searches clusters the builders make:",
                     "a cluster of gpu, nodes, intra and inter", s.file);
  if (s.workload->model.kind == workloads::ModelKind::Layers)
    throw InputError("model.kind", "layers", "trains data-parallel only: plan has nothing to search for it;",
                     "a transformer model, or run", s.file);
  if (s.workload->plan.cp > 1)
    throw InputError("parallelism.cp", std::to_string(s.workload->plan.cp),
                     "is not among the degrees plan searches (tp, pp, dp, vpp, zero):", "1, or run", s.file);
  PointPlans out;
  out.gpus = cluster_gpus(s);
  const Template t = make_template(s);
  const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  const auto bom = scenario_bom(s, built.topology);
  const auto prices = scenario_prices(s, bom);
  const auto costs = scenario_costs(s, built.topology);
  const auto& gpu = s.cluster.gpu;
  const double tokens = tokens_per_step(*s.workload);
  const Watts network = bom.network_power();
  const sim::search::ScoreFn score = [&](Seconds step, Joules gpu_energy) {
    const auto energy = results::step_energy(gpu_energy, step, network, topology::power_model(), prices.pue);
    if (objective == Objective::Energy) return energy.facility.value();
    if (objective == Objective::Cost) return results::training_cost(step, tokens, out.gpus, energy, prices, {}).step.value();
    return step.value();
  };
  const auto space = sim::search::default_space(*s.workload, out.gpus, s.cluster.gpus_per_node, t.fixed);
  out.search = sim::search::search(space, [&](const PlanChoice& c) { return make(t, c, out.gpus); }, gpu, costs, score);
  if (out.search.ranked.empty()) {
    if (nothing_fits_is_error) nothing_fits(s, out.search, out.gpus);
    return out;
  }
  // Model FLOPs a step do not depend on the plan: from the best candidate's graph, for every row's MFU.
  const double flops = workloads::model_flops(workloads::generate_step(out.search.ranked.front().workload, gpu)).value();
  const double peak = gpu.peak_for(s.workload->training->precision).value_or(FlopsPerSecond(1)).value();
  const std::size_t keep = std::min(out.search.ranked.size(), static_cast<std::size_t>(std::max(top, confirm)));
  for (std::size_t i = 0; i < keep; ++i) {
    PlanRow row{out.search.ranked[i], std::nullopt, {}, 0};
    Seconds step = row.candidate.analytic_step;
    Joules energy = row.candidate.gpu_energy;
    if (i < static_cast<std::size_t>(confirm)) {
      row.run = run_point(candidate(t, row.candidate.choice, out.gpus, true));
      step = Seconds(row.run->at("step_time_s").get<double>());
      energy = Joules(row.run->at("energy").at("gpu_step_J").get<double>());
    }
    row.accounting = account(s, bom, energy, step);
    row.mfu = flops / (step.value() * out.gpus * peak);
    out.rows.push_back(std::move(row));
  }
  std::ranges::stable_sort(out.rows, [&](const PlanRow& a, const PlanRow& b) {   // confirmed first, by what SimGrid gave
    if (a.run.has_value() != b.run.has_value()) return a.run.has_value();
    return a.objective(objective) < b.objective(objective);
  });
  out.rows.resize(std::min(out.rows.size(), static_cast<std::size_t>(top)));
  return out;
}

namespace {

// The best plan the framework can run: the first of the ranked rows (confirmed first), then of every fitting plan
// the search ranked, that it has flags for; none: the error about the best one.
std::string emit_best(const std::string& framework, const scenario::Scenario& s, const PointPlans& p) {
  std::optional<InputError> first;
  const auto attempt = [&](const sim::search::Candidate& c, double step) -> std::optional<std::string> {
    try {
      return emit_plan(framework, s, c.workload, step);
    } catch (const InputError& e) {
      if (!first) first = e;
      return std::nullopt;
    }
  };
  for (const PlanRow& r : p.rows)
    if (auto script = attempt(r.candidate, r.step())) return *script;
  for (const auto& c : p.search.ranked)
    if (auto script = attempt(c, c.analytic_step.value())) return *script;
  if (!first) throw InputError("--emit", framework, "no plan fits to write", "a scenario with a plan that fits");
  throw *first;
}

}  // namespace

int plan_command(const ScenarioArgs& args, const PlanArgs& plan) {
  if (plan.top < 1) throw InputError("--top", std::to_string(plan.top), "out of range", "an integer >= 1");
  if (plan.confirm < 0) throw InputError("--confirm", std::to_string(plan.confirm), "out of range", "an integer >= 0");
  const Objective objective = parse_objective(plan.objective);
  if (!plan.out.empty()) make_directory(plan.out);
  std::vector<std::pair<std::string, json>> points;
  std::string text;
  if (!plan.emit.empty()) check_emit_framework(plan.emit);   // before any search
  const std::vector<scenario::Scenario> scenarios = load(args);
  if (!plan.emit.empty() && plan.out.empty() && scenarios.size() > 1)
    throw InputError("--emit", plan.emit, fmt::format("writes one script a point, and the scenario has {}:", scenarios.size()),
                     "--out DIR for the scripts");
  for (const scenario::Scenario& s : scenarios) {
    const PointPlans p = plan_point(s, plan.top, plan.confirm, objective);
    if (!plan.emit.empty()) {
      const std::string script = emit_best(plan.emit, s, p);
      if (plan.out.empty()) {
        std::cout << script;
        return 0;
      }
      write_file(plan.out + "/" + emit_file_name(plan.emit, s.name), script, "--out");
    }
    json plans = json::array();
    for (const PlanRow& r : p.rows) plans.push_back(plan_row_json(r, p.gpus));
    points.emplace_back(s.name, json{{"name", s.name},
                                     {"objective", std::string(to_string(objective))},
                                     {"plans", plans},
                                     {"candidates", p.search.candidates},
                                     {"pruned", p.search.pruned}});
    text += table(s, p, objective);
  }
  json all = json::array();
  for (const auto& [name, point] : points) all.push_back(point);
  const std::string json_text = (all.size() == 1 ? all.front() : all).dump(2) + "\n";
  if (!plan.out.empty()) {
    write_file(plan.out + "/plans.json", json_text, "--out");
    write_file(plan.out + "/plans.csv", csv(points), "--out");
  }
  if (args.format == Format::Json) std::cout << json_text;
  else if (args.format == Format::Csv) std::cout << csv(points);
  else std::cout << text;
  return 0;
}

}  // namespace dtsim::cli
