#include "sim/drivers/auto_knobs.hpp"

#include <algorithm>

#include "sim/drivers/common.hpp"
#include "sim/drivers/mixed.hpp"
#include "sim/drivers/run.hpp"
#include "sim/scenario/plan_template.hpp"
#include "topology/builders.hpp"

namespace dtsim::drivers {
namespace {


std::string chosen_value(const std::string& key, const workloads::Workload& w) {
  if (key == "training.micro_batch") return std::to_string(w.training->micro_batch);
  if (key == "parallelism.vpp") return std::to_string(w.plan.vpp);
  if (key == "training.offload_layers") return std::to_string(w.training->offload_layers);
  return std::string(to_string(w.training->recompute));
}

bool left(const scenario::Scenario& s, const char* key) { return std::ranges::find(s.auto_keys, key) != s.auto_keys.end(); }

// Activation offloading (training.offload_layers left open): `best`'s plan without recomputation, with the fewest
// offloaded layers that make it fit (memory falls as layers leave), when it runs faster than `best` on the analytic
// engine or `best` does not fit; nullopt otherwise. What a practitioner does on a GB200 where a plan fits only
// with recomputation: NVIDIA's Megatron-Bridge recipes for Llama 3 70B on 64 GB200 offload 40 layers
// (src/megatron/bridge/perf_recipes/llama/gb200/llama3.py at 067f987d).
std::optional<sim::search::Candidate> offload_instead(const scenario::Template& t, const sim::search::Candidate& best,
                                                      bool best_fits, int gpus, const topology::GpuSpec& gpu,
                                                      const sim::CommCosts& costs) {
  sim::search::PlanChoice c = best.choice;
  c.recompute = workloads::Recompute::None;
  const int layers = best.workload.model.layers;
  scenario::Template o = t;
  const auto with = [&](int k) -> std::optional<std::pair<workloads::Workload, workloads::MemoryPlan>> {
    o.node = YAML::Clone(t.node);
    o.node["training"]["offload_layers"] = k;
    auto made = scenario::make(o, c, gpus);
    if (!made.workload) return std::nullopt;
    auto memory = workloads::plan_memory(*made.workload, gpu);
    return std::pair{std::move(*made.workload), std::move(memory)};
  };
  const auto most = with(layers - 1);
  if (!most || !most->second.fits) return std::nullopt;
  int lo = 1, hi = layers - 1;   // the fewest layers that fit lies in [lo, hi]; hi fits
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    const auto m = with(mid);
    if (m && m->second.fits) hi = mid;
    else lo = mid + 1;
  }
  auto fit = hi == layers - 1 ? most : with(hi);
  if (!fit) return std::nullopt;
  const sim::search::Screened screened = sim::search::screen(fit->first, gpu, costs);
  if (best_fits && screened.step.value() >= best.analytic_step.value()) return std::nullopt;
  return sim::search::Candidate{c, std::move(fit->first), std::move(fit->second), screened.step, screened.gpu_energy,
                                screened.step.value()};
}

}  // namespace

std::vector<int> auto_vpp_choices(int layers, int pp, workloads::Framework f) {
  std::vector<int> out{1};
  for (int v = 2; v * pp <= layers; ++v)
    if (workloads::framework_interleaves(f, layers, pp, v, sim::search::kMostChunks)) out.push_back(v);
  return out;
}

scenario::Scenario resolve_auto(scenario::Scenario s) {
  if (s.auto_keys.empty() || !s.workload || !s.workload->training) {
    s.auto_keys.clear();
    return s;
  }
  const auto& w = *s.workload;
  scenario::Template t = make_template(s);
  // Everything but the auto knobs as loaded: the search varies only what the scenario left open.
  t.fixed.tp = w.plan.tp;
  t.fixed.pp = w.plan.pp;
  t.fixed.zero = w.plan.zero;
  t.fixed.order = w.plan.order;
  t.fixed.sequence_parallel = w.training->sequence_parallel;
  t.dp = w.plan.dp;
  if (!left(s, "training.micro_batch")) t.fixed.micro_batch = w.training->micro_batch;
  if (!left(s, "parallelism.vpp")) t.fixed.vpp = w.plan.vpp;
  if (!left(s, "training.recompute")) t.fixed.recompute = w.training->recompute;
  const int gpus = cluster_gpus(s);
  auto space = sim::search::default_space(w, gpus, s.cluster.gpus_per_node, t.fixed);
  if (left(s, "parallelism.vpp")) space.vpp = auto_vpp_choices(w.model.layers, w.plan.pp, w.training->framework);
  const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  const auto costs = scenario_costs(s, built.topology);
  auto result = located(s, [&] {
    // A mixed cluster's candidates: memory checked on the split run will play (the workload left unsplit, so that
    // run records the split it chooses).
    const auto made = [&](const sim::search::PlanChoice& c) {
      auto m = make(t, c, gpus);
      if (m.workload && !s.cluster.groups.empty()) m.memory = mixed_memory(s, balanced(s, *m.workload));
      return m;
    };
    return sim::search::search(space, made,
                               s.cluster.gpu, costs, {},
                               s.cluster.groups.empty() ? sim::search::GraphFn{} : mixed_graph_fn(s));
  });
  std::optional<sim::search::Candidate> best;
  const bool fits = !result.ranked.empty();
  if (fits) best = std::move(result.ranked.front());
  else best = std::move(result.nearest);
  if (best && left(s, "training.offload_layers") && s.cluster.groups.empty() &&
      (!fits || best->workload.training->recompute != workloads::Recompute::None))
    if (auto offloaded = located(s, [&] { return offload_instead(t, *best, fits, gpus, s.cluster.gpu, costs); }))
      best = std::move(offloaded);
  // No candidate is a plan: the scenario's plan itself is not one, which the caller's check reports at its key;
  // nothing was chosen, so nothing is said to be.
  if (best) {
    s.workload = std::move(best->workload);
    // Offloading is said to be chosen only where it was (above 0): left at 0, the run is the search's alone.
    for (const std::string& key : s.auto_keys)
      if (key != "training.offload_layers" || s.workload->training->offload_layers > 0)
        s.auto_chosen.emplace_back(key, chosen_value(key, *s.workload));
  }
  s.auto_keys.clear();
  return s;
}

}  // namespace dtsim::drivers
