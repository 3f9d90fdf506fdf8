#include "workloads/schedule.hpp"

#include <algorithm>

#include "topology/error.hpp"

namespace dtsim::workloads {
namespace {

std::vector<PipeStep> gpipe(int m) {
  std::vector<PipeStep> out;
  for (int i = 0; i < m; ++i) out.push_back({Pass::Forward, i, 0});
  for (int i = 0; i < m; ++i) out.push_back({Pass::Backward, i, 0});
  return out;
}

int one_f_one_b_warmup(int m, int pp, int stage, int extra) { return std::min(pp - stage - 1 + extra, m); }
int interleaved_warmup(int m, int pp, int vpp, int stage, int extra) {
  const int total = m * vpp;
  return m == pp ? total : std::min((pp - stage - 1) * 2 + (vpp - 1) * pp + extra, total);
}

// 1F1B (PipeDream-flush, Megatron-LM's default): warm-up forwards, then one forward one backward, then drain.
std::vector<PipeStep> one_f_one_b(int m, int pp, int stage, int extra) {
  const int warmup = one_f_one_b_warmup(m, pp, stage, extra);
  std::vector<PipeStep> out;
  for (int i = 0; i < warmup; ++i) out.push_back({Pass::Forward, i, 0});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({Pass::Forward, warmup + i, 0});
    out.push_back({Pass::Backward, i, 0});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({Pass::Backward, i, 0});
  return out;
}

// Interleaved 1F1B as Megatron-LM orders it: virtual micro-batch k runs chunk (k / pp) % vpp (reversed for
// backward) on micro-batch (k / (pp * vpp)) * pp + k % pp.
PipeStep virtual_step(int k, int pp, int vpp, Pass pass) {
  const int in_group = k % (pp * vpp);
  int chunk = in_group / pp;
  if (pass == Pass::Backward) chunk = vpp - 1 - chunk;
  return {pass, (k / (pp * vpp)) * pp + k % pp, chunk};
}

std::vector<PipeStep> interleaved(int m, int pp, int vpp, int stage, int extra) {
  const int total = m * vpp;
  const int warmup = interleaved_warmup(m, pp, vpp, stage, extra);
  std::vector<PipeStep> out;
  for (int k = 0; k < warmup; ++k) out.push_back(virtual_step(k, pp, vpp, Pass::Forward));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(virtual_step(warmup + k, pp, vpp, Pass::Forward));
    out.push_back(virtual_step(k, pp, vpp, Pass::Backward));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(virtual_step(k, pp, vpp, Pass::Backward));
  return out;
}

}  // namespace

std::vector<PipeStep> schedule_order(const ParallelPlan& plan, int micro_batches, int stage, int extra_warmup) {
  DTSIM_ASSERT(micro_batches >= 1 && stage >= 0 && stage < plan.pp, "schedule of a stage outside the plan");
  DTSIM_ASSERT(extra_warmup >= 0, "a warm-up is never shorter than 1F1B's");
  if (plan.schedule == Schedule::Gpipe) {
    DTSIM_ASSERT(plan.vpp == 1, "GPipe has no virtual stages");
    return gpipe(micro_batches);
  }
  if (plan.vpp == 1) return one_f_one_b(micro_batches, plan.pp, stage, extra_warmup);
  DTSIM_ASSERT(micro_batches % plan.pp == 0, "interleaved 1F1B needs micro-batches divisible by pp");
  return interleaved(micro_batches, plan.pp, plan.vpp, stage, extra_warmup);
}

bool combined_steps(const Workload& w) {
  return w.training && w.training->overlap_moe_expert_parallel_comm && w.model.moe() && w.plan.ep > 1;
}

std::vector<PipeStep> schedule_order(const Workload& w, int micro_batches, int stage) {
  return schedule_order(w.plan, micro_batches, stage, combined_steps(w) ? 1 : 0);
}

int warmup_forwards(const Workload& w, int micro_batches, int stage) {
  const ParallelPlan& p = w.plan;
  const int extra = combined_steps(w) ? 1 : 0;
  if (p.schedule == Schedule::Gpipe) return micro_batches;
  if (p.vpp == 1) return one_f_one_b_warmup(micro_batches, p.pp, stage, extra);
  return interleaved_warmup(micro_batches, p.pp, p.vpp, stage, extra);
}

int peak_in_flight(const std::vector<PipeStep>& order) {
  int live = 0;
  int peak = 0;
  for (const PipeStep& s : order) {
    live += s.pass == Pass::Forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace dtsim::workloads
