// The plan search of sim/search wired to scenarios. Each candidate is the scenario with its plan keys set and
// loaded again, so every framework default that follows the plan (sequence parallelism, TP comm overlap, the
// distributed optimizer, the gradient bucket) is resolved as for a scenario written by hand; the best are run on
// the SimGrid engine (each in its own process) and ranked by what it gives.
#include "sim/drivers/plan.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "results/energy.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/mixed.hpp"
#include "sim/drivers/run.hpp"
#include "sim/scenario/plan_template.hpp"
#include "sim/search/plan_search.hpp"
#include "topology/builders.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;
using sim::search::PlanChoice;

json choice_json(const PlanChoice& c, int gpus) {
  return {{"parallelism",
           {{"tp", c.tp}, {"pp", c.pp}, {"dp", gpus / (c.tp * c.pp)}, {"vpp", c.vpp}, {"zero", c.zero},
            {"order", workloads::order_name(c.order)}}},
          {"training",
           {{"micro_batch", c.micro_batch},
            {"recompute", std::string(to_string(c.recompute))},
            {"sequence_parallel", c.sequence_parallel}}}};
}

[[noreturn]] void nothing_fits(const scenario::Scenario& s, const sim::search::SearchResult& r, int gpus) {
  if (!r.nearest)
    throw InputError("parallelism", "", fmt::format("no candidate of the {} is a valid plan for this model on {} GPUs "
                                                    "(most common reason: {}); the search space has",
                                                    r.candidates, gpus, most_common_reason(r.pruned)),
                     "a cluster, model or batch that some plan can run", s.file);
  throw InputError("parallelism", plan_label(r.nearest->choice, gpus), nothing_fits_text(r, gpus) + ":",
                   "more or larger GPUs, a smaller global or micro batch, or more recompute", s.file);
}

}  // namespace

std::string most_common_reason(std::map<std::string, std::size_t> pruned) {
  pruned.erase(std::string(sim::search::kRecomputesMore));   // those fit: not a reason a plan was dropped
  const auto it = std::ranges::max_element(pruned, {}, [](const auto& kv) { return kv.second; });
  return it == pruned.end() ? std::string() : fmt::format("{} ({})", it->first, it->second);
}

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
  // A mixed cluster's splits, as the candidate was timed (drivers/mixed.hpp).
  const auto& plan = r.candidate.workload.plan;
  if (!plan.layers_per_stage.empty()) out["parallelism"]["layers_per_stage"] = plan.layers_per_stage;
  if (!plan.replica_micro_batches.empty()) out["parallelism"]["replica_micro_batches"] = plan.replica_micro_batches;
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
  if (!s.cluster.groups.empty())
    throw InputError("cluster.groups", std::to_string(s.cluster.groups.size()),
                     "groups of GPU kinds have no one node count to size:", "one GPU kind to size a cluster for", s.file);
  if (s.cluster.server_gpus > 0)
    throw InputError("cluster.nvlink_domain", std::to_string(s.cluster.nvlink_domain_gpus()),
                     "spans servers, which sizing by whole servers does not model yet:", "a cluster of servers", s.file);
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
    const scenario::Template t = make_template(sized);
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
  const scenario::Template t = make_template(s);
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
  // A mixed cluster's candidates are timed as run plays them: stages on their kinds, layers balanced.
  const sim::search::GraphFn graph = s.cluster.groups.empty() ? sim::search::GraphFn{} : mixed_graph_fn(s);
  // Memory is checked on the split that is timed.
  const auto made = [&](const PlanChoice& c) {
    auto m = make(t, c, out.gpus);
    if (m.workload && !s.cluster.groups.empty()) {
      m.workload = balanced(s, std::move(*m.workload));
      m.memory = mixed_memory(s, *m.workload);
    }
    return m;
  };
  out.search = sim::search::search(space, made, gpu, costs, score, graph);
  if (out.search.ranked.empty()) {
    if (nothing_fits_is_error) nothing_fits(s, out.search, out.gpus);
    return out;
  }
  // Model FLOPs a step do not depend on the plan: from the best candidate's graph, for every row's MFU.
  const double flops = workloads::model_flops(graph ? graph(out.search.ranked.front().workload)
                                                   : workloads::generate_step(out.search.ranked.front().workload, gpu))
                           .value();
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

json plan_json(const scenario::Scenario& s, const PointPlans& p, Objective objective) {
  json plans = json::array();
  for (const PlanRow& r : p.rows) plans.push_back(plan_row_json(r, p.gpus));
  return {{"name", s.name},
          {"objective", std::string(to_string(objective))},
          {"plans", plans},
          {"candidates", p.search.candidates},
          {"pruned", p.search.pruned}};
}

}  // namespace dtsim::drivers
