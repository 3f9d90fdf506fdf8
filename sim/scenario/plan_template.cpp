#include "sim/scenario/plan_template.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/scenario/sweep.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

// The keys the search sets, and those the loader resolves from them: a scenario that does not give one of these
// leaves it to the search (or to the framework's default for the candidate).
constexpr const char* kPlanKeys[] = {"parallelism.tp", "parallelism.pp", "parallelism.dp", "parallelism.vpp",
                                     "parallelism.zero", "parallelism.order", "training.micro_batch",
                                     "training.recompute", "training.sequence_parallel"};
constexpr const char* kDerivedKeys[] = {"training.tp_comm_overlap", "training.dp_bucket_MB", "training.distributed_optimizer",
                                        "training.overlap_param_gather", "training.overlap_grad_reduce",
                                        "parallelism.layers_per_stage", "parallelism.replica_micro_batches"};
// Keys a scenario may still give under an old name (the resolved scenario writes the new one).
constexpr std::pair<const char*, const char*> kOldNames[] = {{"training.overlap_grad_reduce", "training.dp_overlap"}};

}  // namespace

bool given(const Scenario& s, const std::string& key) {
  if (std::ranges::find(s.auto_keys, key) != s.auto_keys.end()) return false;
  if (s.origin.count(key) > 0) return true;
  for (const auto& [now, old] : kOldNames)
    if (key == now && given(s, old)) return true;
  return std::ranges::any_of(s.point.values, [&](const auto& kv) { return kv.first == key || key.starts_with(kv.first + "."); });
}

Template make_template(const Scenario& s) {
  Template t{s, YAML::Load(to_yaml(s)), {}, {}, s.workload->plan.cp};
  for (const char* key : kPlanKeys)
    if (!given(s, key)) erase_dotted(t.node, key);
  for (const char* key : kDerivedKeys)
    if (!given(s, key)) erase_dotted(t.node, key);
  t.node.remove("sweep");
  const auto& w = *s.workload;
  if (given(s, "parallelism.tp")) t.fixed.tp = w.plan.tp;
  if (given(s, "parallelism.pp")) t.fixed.pp = w.plan.pp;
  if (given(s, "parallelism.vpp")) t.fixed.vpp = w.plan.vpp;
  if (given(s, "parallelism.zero")) t.fixed.zero = w.plan.zero;
  if (given(s, "parallelism.order")) t.fixed.order = w.plan.order;
  if (given(s, "parallelism.dp")) t.dp = w.plan.dp;
  if (given(s, "training.micro_batch")) t.fixed.micro_batch = w.training->micro_batch;
  if (given(s, "training.recompute")) t.fixed.recompute = w.training->recompute;
  if (given(s, "training.sequence_parallel")) t.fixed.sequence_parallel = w.training->sequence_parallel;
  return t;
}

Scenario candidate(const Template& t, const sim::search::PlanChoice& c, int gpus, bool simgrid) {
  YAML::Node n = YAML::Clone(t.node);
  n["parallelism"]["tp"] = c.tp;
  n["parallelism"]["pp"] = c.pp;
  n["parallelism"]["dp"] = gpus / (c.tp * c.pp * t.cp);
  n["parallelism"]["vpp"] = c.vpp;
  n["parallelism"]["zero"] = c.zero;
  n["parallelism"]["order"] = workloads::order_name(c.order);
  n["training"]["micro_batch"] = c.micro_batch;
  n["training"]["recompute"] = std::string(to_string(c.recompute));
  n["training"]["sequence_parallel"] = c.sequence_parallel;
  n["simulation"]["engine"] = simgrid ? "simgrid" : "analytic";
  Scenario s = load_scenario(std::move(n), t.base.file);
  s.name = t.base.name;
  s.point = t.base.point;
  workloads::check_plan(*s.workload, gpus);
  return s;
}

sim::search::Made make(const Template& t, const sim::search::PlanChoice& c, int gpus) {
  if (t.dp && gpus / (c.tp * c.pp * t.cp) != *t.dp) return {std::nullopt, "parallelism.dp: fixed by the scenario", std::nullopt};
  try {
    return {candidate(t, c, gpus, false).workload, {}, std::nullopt};
  } catch (const InputError& e) {
    return {std::nullopt, fmt::format("{}: {}", e.key(), e.reason()), std::nullopt};
  }
}

}  // namespace dtsim::scenario
