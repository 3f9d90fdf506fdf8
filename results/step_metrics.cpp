#include "results/step_metrics.hpp"

#include <algorithm>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/error.hpp"

namespace dtsim::results {
namespace {

using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::Op;

std::size_t critical_class(const sim::Timeline& t) {
  std::size_t best = 0;
  for (std::size_t c = 1; c < t.classes.size(); ++c)
    if (t.classes[c].end > t.classes[best].end) best = c;
  return best;
}

enum class Cause { Pipeline, Communication, Other };

// What a compute op waited for: the dependency that ended last.
Cause cause_of(const std::vector<Op>& ops, const std::vector<sim::OpTime>& times, const Op& op) {
  const std::uint32_t* latest = nullptr;
  for (const auto& d : op.deps)
    if (!latest || times[d].end > times[*latest].end) latest = &d;
  if (!latest) return Cause::Other;
  const auto& body = ops[*latest].body;
  if (std::holds_alternative<workloads::RecvOp>(body)) return Cause::Pipeline;
  if (const auto* k = std::get_if<CollectiveOp>(&body))
    return k->purpose == workloads::CommPurpose::PipelineGather ? Cause::Pipeline : Cause::Communication;
  return Cause::Other;
}

// Idle gaps on the critical class's compute stream, each charged to what the op after it waited for; the tail
// after the last compute op (gradient reductions, parameter gathers) is communication. The step's fixed costs
// (the optimizer step, the gradient norm, unscale and zeroing: Scope::Optimizer) are `other`, not compute.
Breakdown breakdown(const workloads::RankClass& c, const sim::ClassTimeline& t, Seconds step_time) {
  Breakdown b;
  Seconds stream_free;
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const auto* comp = std::get_if<ComputeOp>(&c.ops[i].body);
    if (!comp) continue;
    const Seconds gap = t.ops[i].start - stream_free;
    if (gap.value() > 0) {
      const Cause cause = cause_of(c.ops, t.ops, c.ops[i]);
      (cause == Cause::Pipeline ? b.pipeline_bubble : cause == Cause::Communication ? b.exposed_comm : b.other) += gap;
    }
    (comp->scope == workloads::Scope::Optimizer ? b.other : b.compute) += comp->duration;
    stream_free = t.ops[i].end;
  }
  b.exposed_comm += std::max(Seconds(0), t.end - stream_free);
  b.interference = t.interference;
  b.other += std::max(Seconds(0), step_time - t.end);   // another class ended later than this one
  return b;
}

void tp_traffic(const workloads::RankClass& c, const sim::ClassTimeline& t, StepMetrics& m) {
  for (std::size_t i = 0; i < c.ops.size(); ++i)
    if (const auto* k = std::get_if<CollectiveOp>(&c.ops[i].body); k && k->group == workloads::Group::Tp) {
      m.tp_comm += t.ops[i].end - t.ops[i].start;
      m.tp_comm_bytes += k->bytes;
    }
}

}  // namespace

StepMetrics step_metrics(const workloads::StepGraph& g, const sim::Timeline& t, const topology::GpuSpec& gpu,
                         Seconds single_gpu) {
  DTSIM_ASSERT(t.classes.size() == g.classes.size() && t.step_time.value() > 0, "a timeline of this graph");
  const auto& w = g.workload;
  StepMetrics m;
  m.gpus = g.placement.ranks();
  m.step_time = t.step_time;
  const double tokens = static_cast<double>(w.training->global_batch) * w.model.seq_length;
  m.tokens_per_s = tokens / t.step_time.value();
  const double per_gpu = t.step_time.value() * m.gpus;
  m.tflops_per_gpu = workloads::model_flops(g).value() / per_gpu / 1e12;
  m.hw_tflops_per_gpu = workloads::hardware_flops(g).value() / per_gpu / 1e12;
  const auto peak = gpu.peak_for(w.training->precision);
  DTSIM_ASSERT(peak.has_value(), "the compute model refuses a precision the GPU lacks");
  m.mfu = m.tflops_per_gpu / to_teraflops(*peak);
  m.hfu = m.hw_tflops_per_gpu / to_teraflops(*peak);
  m.ideal_time = single_gpu / m.gpus;
  m.scaling_efficiency = m.ideal_time / t.step_time;
  const std::size_t c = critical_class(t);
  m.breakdown = breakdown(g.classes[c], t.classes[c], t.step_time);
  tp_traffic(g.classes[c], t.classes[c], m);
  return m;
}

// Every micro-batch of a one-GPU step computes the same ops: one micro-batch's graph is generated, its
// forward and backward counted once per micro-batch and the step's optimizer once.
Seconds single_gpu_compute(const workloads::Workload& w, const topology::GpuSpec& gpu) {
  workloads::Workload one = w;
  one.plan = workloads::ParallelPlan{};
  one.training->sequence_parallel = false;
  const double micro_batches = static_cast<double>(w.training->global_batch) / w.training->micro_batch;
  one.training->global_batch = one.training->micro_batch;
  const auto g = workloads::generate_step(one, gpu);
  Seconds per_micro_batch, per_step;
  for (const auto& op : g.classes.front().ops)
    if (const auto* comp = std::get_if<ComputeOp>(&op.body))
      (comp->scope == workloads::Scope::Optimizer ? per_step : per_micro_batch) += comp->duration;
  return per_micro_batch * micro_batches + per_step;
}

}  // namespace dtsim::results
