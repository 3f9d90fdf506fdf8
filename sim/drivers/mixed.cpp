#include "sim/drivers/mixed.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <variant>

#include "sim/drivers/common.hpp"
#include "topology/error.hpp"

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

// Per micro-batch, the compute seconds of a class (its optimizer, outside micro-batches, left out).
double per_micro_batch(const workloads::RankClass& c, int micro_batches) {
  double sum = 0;
  for (const auto& op : c.ops)
    if (const auto* comp = std::get_if<ComputeOp>(&op.body); comp && comp->micro_batch >= 0) sum += comp->duration.value();
  return sum / micro_batches;
}

// The data-parallel replica of `rank` (context-parallel peers are one replica).
int replica_of(const workloads::Placement& placement, const workloads::ParallelPlan& plan, int rank) {
  return placement.coord(rank).dp / plan.cp;
}
int replica_of(const workloads::StepGraph& g, int rank) { return replica_of(g.placement, g.workload.plan, rank); }

// Each replica's micro-batch count: the plan's list, or the even split.
std::vector<int> replica_counts(const workloads::Workload& w) {
  if (!w.plan.replica_micro_batches.empty()) return w.plan.replica_micro_batches;
  return std::vector<int>(static_cast<std::size_t>(w.plan.dp), workloads::micro_batches(w.plan, *w.training));
}

std::string list_text(const std::vector<int>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// The steps generated on each GPU kind and micro-batch count (per replica), each once.
class Steps {
 public:
  explicit Steps(const scenario::Scenario& s) : s_(s) {}

  const workloads::StepGraph& get(int group, int micro_batches) {
    const auto key = std::make_pair(s_.cluster.groups[static_cast<std::size_t>(group)].gpu.name, micro_batches);
    if (const auto it = made_.find(key); it != made_.end()) return it->second;
    workloads::Workload w = *s_.workload;
    w.plan.replica_micro_batches.clear();
    w.training->global_batch = micro_batches * w.training->micro_batch * w.plan.dp;
    const auto& gpu = s_.cluster.groups[static_cast<std::size_t>(group)].gpu;
    return made_
        .emplace(key, located(s_, [&] { return workloads::generate_step(w, gpu, {s_.simulation.granularity}); }))
        .first->second;
  }

 private:
  const scenario::Scenario& s_;
  std::map<std::pair<std::string, int>, workloads::StepGraph> made_;
};

// The collectives of `c` on groups that reach other data-parallel replicas, as (group, kind, bytes).
std::vector<std::tuple<int, int, double>> crossing(const workloads::StepGraph& g, const workloads::RankClass& c) {
  std::array<int, workloads::kGroupCount> crosses{};   // 0 unknown, 1 no, 2 yes
  const int rank = c.ranks.front(), replica = replica_of(g, rank);
  std::vector<std::tuple<int, int, double>> out;
  for (const auto& op : c.ops) {
    const auto* coll = std::get_if<workloads::CollectiveOp>(&op.body);
    if (coll == nullptr) continue;
    int& known = crosses[static_cast<std::size_t>(coll->group)];
    if (known == 0) {
      known = 1;
      for (int r : g.group_ranks(rank, coll->group))
        if (replica_of(g, r) != replica) known = 2;
    }
    if (known == 2) out.emplace_back(static_cast<int>(coll->group), static_cast<int>(coll->kind), coll->bytes.value());
  }
  return out;
}

// Whether two steps of one plan at different micro-batch counts exchange the same across replicas, class by class:
// uneven counts need the replicas to meet only where the count changes nothing (the gradients' reduction), not
// where it does (experts exchanged across replicas, FSDP's gathers).
bool meet_alike(const workloads::StepGraph& a, const workloads::StepGraph& b) {
  for (std::size_t c = 0; c < a.classes.size(); ++c)
    if (crossing(a, a.classes[c]) != crossing(b, b.classes[c])) return false;
  return true;
}

// meet_alike, or the one-line error at the key.
void check_cohorts_meet(const scenario::Scenario& s, const workloads::StepGraph& a, const workloads::StepGraph& b) {
  if (!meet_alike(a, b))
    throw InputError("parallelism.replica_micro_batches", "",
                     "gives replicas different micro-batch counts, and this plan's replicas exchange data every "
                     "micro-batch (experts, or parameters gathered), which needs the same count in each:",
                     "the key left out (an even split)", scenario::locate(s, "parallelism"));
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
  const workloads::Workload& w = *s.workload;
  const int even = workloads::micro_batches(w.plan, *w.training);
  Steps steps(s);
  const workloads::StepGraph& base = steps.get(0, even);
  MixedStep out{base, {}};
  out.graph.workload = w;
  out.graph.classes.clear();
  const int ranks = base.placement.ranks();
  const std::vector<int> group = group_of_ranks(s.cluster, ranks);
  // The cohorts: replicas of one micro-batch count, in the order of their first replica.
  const std::vector<int> count = replica_counts(w);
  std::vector<int> cohort_count;
  for (int m : count)
    if (std::ranges::find(cohort_count, m) == cohort_count.end()) cohort_count.push_back(m);
  out.graph.micro_batches = cohort_count.front();
  out.relative.assign(static_cast<std::size_t>(ranks), 1.0);
  for (const auto& stage : base.classes)
    for (std::size_t k = 0; k < cohort_count.size(); ++k) {
      const int m = cohort_count[k];
      workloads::RankClass cls{stage.stage, {}, {}, static_cast<int>(k)};
      for (int r : stage.ranks)
        if (count[static_cast<std::size_t>(replica_of(base, r))] == m) cls.ranks.push_back(r);
      // Each group's compute on this stage at this count, once (its ranks only read it); the ops of the slowest.
      const auto stage_index = static_cast<std::size_t>(stage.stage);
      std::map<int, double> busy_of;
      int slowest = -1;
      for (int r : cls.ranks) {
        const int g = group[static_cast<std::size_t>(r)];
        if (!busy_of.contains(g)) busy_of[g] = busy(steps.get(g, m).classes[stage_index]).all;
        if (slowest < 0 || busy_of[g] > busy_of[slowest]) slowest = g;
      }
      cls.ops = steps.get(slowest, m).classes[stage_index].ops;
      for (int r : cls.ranks) {
        const double most = busy_of[slowest];
        out.relative[static_cast<std::size_t>(r)] = most > 0 ? busy_of[group[static_cast<std::size_t>(r)]] / most : 1.0;
      }
      out.graph.classes.push_back(std::move(cls));
    }
  for (std::size_t k = 1; k < cohort_count.size(); ++k) check_cohorts_meet(s, base, steps.get(0, cohort_count[k]));
  return out;
}

workloads::MemoryPlan mixed_memory(const scenario::Scenario& s, const workloads::Workload& w) {
  if (s.cluster.groups.empty() || !w.training || w.model.kind != workloads::ModelKind::Transformer)
    return workloads::plan_memory(w, s.cluster.gpu);
  const workloads::Placement placement(w.plan);
  const std::vector<int> group = group_of_ranks(s.cluster, placement.ranks());
  const auto capacity = [](const topology::GpuSpec& g) { return (g.memory - g.memory_reserve).value(); };
  // Each micro-batch count the replicas run (their activations in flight follow it): planned at that count, each
  // stage on the smallest kind among the ranks of the replicas that run it; the plan with the least to spare.
  const std::vector<int> count = replica_counts(w);
  std::map<int, std::vector<const topology::GpuSpec*>> smallest;   // count -> per stage
  for (int r = 0; r < placement.ranks(); ++r) {
    auto& stages = smallest[count[static_cast<std::size_t>(replica_of(placement, w.plan, r))]];
    stages.resize(static_cast<std::size_t>(w.plan.pp), nullptr);
    const auto& gpu = s.cluster.groups[static_cast<std::size_t>(group[static_cast<std::size_t>(r)])].gpu;
    auto& least = stages[static_cast<std::size_t>(placement.coord(r).pp)];
    if (least == nullptr || capacity(gpu) < capacity(*least)) least = &gpu;
  }
  std::optional<workloads::MemoryPlan> worst;
  for (const auto& [m, stages] : smallest) {
    workloads::Workload at = w;
    at.plan.replica_micro_batches.clear();
    at.training->global_batch = m * w.training->micro_batch * w.plan.dp;
    std::vector<topology::GpuSpec> stage_gpus;
    for (const auto* g : stages) stage_gpus.push_back(*g);
    workloads::MemoryPlan plan = workloads::plan_memory(at, stage_gpus);
    if (!worst || plan.margin < worst->margin) worst = std::move(plan);
  }
  return *worst;
}

workloads::Workload balanced(const scenario::Scenario& s, workloads::Workload w) {
  if (s.cluster.groups.empty()) return w;
  scenario::Scenario candidate = s;
  candidate.workload = std::move(w);
  return *balance(std::move(candidate)).workload;
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
  // Probed at even batch shares (as the first pass, before balance_batches, sees them): one class per stage.
  scenario::Scenario even_shares = s;
  even_shares.workload->plan.replica_micro_batches.clear();
  const MixedStep step = mixed_step(even_shares);
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
  s.auto_chosen.emplace_back("parallelism.layers_per_stage", list_text(split));
  return s;
}

scenario::Scenario balance_batches(scenario::Scenario s) {
  if (s.cluster.groups.empty() || !s.workload || !s.workload->training) return s;
  workloads::Workload& w = *s.workload;
  const workloads::ParallelPlan& p = w.plan;
  if (p.dp < 2 || !p.replica_micro_batches.empty()) return s;
  const int even = workloads::micro_batches(p, *w.training);
  const int unit = p.vpp > 1 ? p.pp : 1;   // interleaved 1F1B runs multiples of pp
  Steps steps(s);
  const workloads::StepGraph& base = steps.get(0, even);
  const std::vector<int> group = group_of_ranks(s.cluster, base.placement.ranks());
  // Each replica's seconds per micro-batch: its slowest stage's, each stage at its slowest kind among its ranks.
  std::vector<double> per_mb(static_cast<std::size_t>(p.dp), 0.0);
  for (const auto& stage : base.classes)
    for (int r : stage.ranks) {
      const int g = group[static_cast<std::size_t>(r)];
      double& most = per_mb[static_cast<std::size_t>(replica_of(base, r))];
      most = std::max(most, per_micro_batch(steps.get(g, even).classes[static_cast<std::size_t>(stage.stage)], even));
    }
  const auto [low, high] = std::ranges::minmax(per_mb);
  if (high - low <= 1e-3 * high) return s;
  // Does a replica's count change what replicas exchange? Then the split stays even.
  if (!meet_alike(base, steps.get(0, even + unit))) return s;
  // Each replica's step grows as (micro-batches + the bubble's (pp - 1) / vpp) x its seconds per micro-batch (1F1B):
  // every replica first takes one unit, then each further unit goes where the step grows least.
  const double bubble = static_cast<double>(p.pp - 1) / p.vpp;
  std::vector<int> count(static_cast<std::size_t>(p.dp), unit);
  using Next = std::pair<double, int>;   // (the replica's step with one unit more, replica)
  std::priority_queue<Next, std::vector<Next>, std::greater<>> next;
  for (int r = 0; r < p.dp; ++r) next.emplace((2 * unit + bubble) * per_mb[static_cast<std::size_t>(r)], r);
  for (long long left = static_cast<long long>(even - unit) * p.dp; left > 0; left -= unit) {
    const int r = next.top().second;
    next.pop();
    auto& n = count[static_cast<std::size_t>(r)];
    n += unit;
    next.emplace((n + unit + bubble) * per_mb[static_cast<std::size_t>(r)], r);
  }
  if (std::ranges::all_of(count, [&](int n) { return n == even; })) return s;
  w.plan.replica_micro_batches = count;
  s.auto_chosen.emplace_back("parallelism.replica_micro_batches", list_text(count));
  return s;
}

scenario::Scenario balance(scenario::Scenario s) { return balance_batches(balance_stages(std::move(s))); }

}  // namespace dtsim::drivers
