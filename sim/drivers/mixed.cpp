#include "sim/drivers/mixed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <variant>

#include "sim/drivers/common.hpp"

namespace dtsim::drivers {
namespace {

using workloads::ComputeOp;

// Per class, the compute seconds of its ops: every op, and those of layers.
struct Busy {
  double all = 0;
  double layers = 0;
};
Busy busy(const workloads::RankClass& c) {
  Busy b;
  for (const auto& op : c.ops)
    if (const auto* comp = std::get_if<ComputeOp>(&op.body)) {
      b.all += comp->duration.value();
      if (comp->scope == workloads::Scope::Layer) b.layers += comp->duration.value();
    }
  return b;
}

// The step generated on each group's GPU (groups of one kind share it).
std::vector<workloads::StepGraph> per_group_steps(const scenario::Scenario& s) {
  std::vector<workloads::StepGraph> out;
  std::map<std::string, std::size_t> seen;
  for (const auto& g : s.cluster.groups) {
    if (const auto it = seen.find(g.gpu.name); it != seen.end()) {
      out.push_back(out[it->second]);
      continue;
    }
    seen[g.gpu.name] = out.size();
    out.push_back(located(s, [&] { return workloads::generate_step(*s.workload, g.gpu, {s.simulation.granularity}); }));
  }
  return out;
}

}  // namespace

std::vector<int> group_of_ranks(const topology::ClusterSpec& c, int ranks) {
  std::vector<int> out;
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    for (int i = 0; i < c.groups[g].gpus(); ++i) out.push_back(static_cast<int>(g));
  out.resize(static_cast<std::size_t>(ranks), out.empty() ? 0 : out.back());
  return out;
}

MixedStep mixed_step(const scenario::Scenario& s) {
  std::vector<workloads::StepGraph> steps = per_group_steps(s);
  MixedStep out{steps.front(), {}};
  int ranks = 0;
  for (const auto& c : out.graph.classes) ranks += static_cast<int>(c.ranks.size());
  const std::vector<int> group = group_of_ranks(s.cluster, ranks);
  out.relative.assign(static_cast<std::size_t>(ranks), 1.0);
  for (std::size_t c = 0; c < out.graph.classes.size(); ++c) {
    // Each group's compute on this stage, once (its ranks only read it).
    std::vector<double> busy_of(steps.size());
    for (std::size_t g = 0; g < steps.size(); ++g) busy_of[g] = busy(steps[g].classes[c]).all;
    std::size_t slowest = 0;
    double most = -1;
    for (int r : out.graph.classes[c].ranks) {
      const auto g = static_cast<std::size_t>(group[static_cast<std::size_t>(r)]);
      if (busy_of[g] > most) most = busy_of[g], slowest = g;
    }
    out.graph.classes[c].ops = steps[slowest].classes[c].ops;
    for (int r : out.graph.classes[c].ranks) {
      const auto g = static_cast<std::size_t>(group[static_cast<std::size_t>(r)]);
      out.relative[static_cast<std::size_t>(r)] = most > 0 ? busy_of[g] / most : 1.0;
    }
  }
  return out;
}

workloads::Workload balanced(const scenario::Scenario& s, workloads::Workload w) {
  if (s.cluster.groups.empty()) return w;
  scenario::Scenario candidate = s;
  candidate.workload = std::move(w);
  return *balance_stages(std::move(candidate)).workload;
}

std::function<workloads::StepGraph(const workloads::Workload&)> mixed_graph_fn(const scenario::Scenario& s) {
  return [&s](const workloads::Workload& w) {
    scenario::Scenario candidate = s;
    candidate.workload = balanced(s, w);
    return mixed_step(candidate).graph;
  };
}

scenario::Scenario balance_stages(scenario::Scenario s) {
  if (s.cluster.groups.empty() || !s.workload || !s.workload->training) return s;
  workloads::Workload& w = *s.workload;
  const int pp = w.plan.pp, stages = pp * w.plan.vpp;
  if (pp < 2 || !w.plan.layers_per_stage.empty() || w.model.layers < stages) return s;
  const MixedStep step = mixed_step(s);
  // Each physical stage's seconds per layer and the rest of its compute, from the even split.
  const std::vector<int> even = workloads::stage_layers(w.plan, w.model.layers);
  std::vector<double> per_layer(static_cast<std::size_t>(pp)), rest(static_cast<std::size_t>(pp));
  std::vector<int> layers(static_cast<std::size_t>(pp), 0);
  for (int v = 0; v < stages; ++v) layers[static_cast<std::size_t>(v % pp)] += even[static_cast<std::size_t>(v)];
  bool differ = false;
  for (int p = 0; p < pp; ++p) {
    const Busy b = busy(step.graph.classes[static_cast<std::size_t>(p)]);
    const auto i = static_cast<std::size_t>(p);
    per_layer[i] = b.layers / layers[i];
    rest[i] = b.all - b.layers;
    differ = differ || std::abs(per_layer[i] - per_layer[0]) > 1e-3 * per_layer[0];
  }
  if (!differ) return s;
  // One layer per virtual stage, then each further layer where its physical stage's total grows least.
  std::vector<int> split(static_cast<std::size_t>(stages), 1);
  std::vector<double> total(rest);
  for (int v = 0; v < stages; ++v) total[static_cast<std::size_t>(v % pp)] += per_layer[static_cast<std::size_t>(v % pp)];
  for (int left = w.model.layers - stages; left > 0; --left) {
    // The physical stage whose compute grows least, then its virtual stage with the fewest layers.
    std::size_t p = 0;
    for (std::size_t q = 1; q < total.size(); ++q)
      if (total[q] + per_layer[q] < total[p] + per_layer[p]) p = q;
    std::size_t best = p;
    for (auto v = p + static_cast<std::size_t>(pp); v < split.size(); v += static_cast<std::size_t>(pp))
      if (split[v] < split[best]) best = v;
    ++split[best];
    total[p] += per_layer[p];
  }
  w.plan.layers_per_stage = split;
  std::string chosen = "[";
  for (std::size_t i = 0; i < split.size(); ++i) chosen += fmt::format("{}{}", i == 0 ? "" : ", ", split[i]);
  s.auto_chosen.emplace_back("parallelism.layers_per_stage", chosen + "]");
  return s;
}

}  // namespace dtsim::drivers
