// generate_step: a training step's ops, one list per pipeline stage.
//
//   stage s, for each step of schedule_order(plan, m, s):
//     forward (micro-batch i, chunk c):   [recv act (+TP all-gather)] [embedding] { [ZeRO-3 gather] layer TP-comm }*
//                                         [logits] [send act]
//     backward:                           [recv grad (+gather)] [logits'] { [gather] [recompute] layer' TP-comm
//                                         [DP bucket] }* (reverse) [embedding'] [send grad]
//   then: tied-embedding all-reduce (first and last stage), optimizer step, ZeRO-1/2 parameter all-gather.
//
// Each stage's ops come from a StageBuilder (stage_builder.hpp); here the context every stage shares is built
// and the stages gathered into a StepGraph.
#include "workloads/step_graph.hpp"

#include <utility>
#include <vector>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_builder.hpp"

namespace dtsim::workloads {
namespace {

using detail::Context;
using detail::pass_index;
using detail::StageBuilder;

// Parameters one GPU of `stage` holds (its TP shard): its layers, the embedding on the first virtual stage, the
// final norm and the output layer (untied; or, tied with pp > 1, Megatron's copy of the embedding) on the last.
double stage_parameters(const Context& ctx, int stage) {
  const ModelSpec& m = ctx.w.model;
  const auto& plan = ctx.w.plan;
  double params = 0;
  for (int v = stage; v < ctx.virtual_stages; v += plan.pp) {
    params += ctx.layers[static_cast<std::size_t>(v)] * layer_parameters(m);
    if (v == 0) params += embedding_parameters(m);
    if (v == ctx.virtual_stages - 1) {
      params += final_norm_parameters(m) + logits_parameters(m);
      if (m.tied_embeddings && plan.pp > 1) params += static_cast<double>(m.vocab) * m.hidden;
    }
  }
  return params / plan.tp;
}

Context make_context(const Workload& w, const topology::GpuSpec& gpu, Granularity granularity) {
  const TrainingSpec& t = *w.training;
  Context ctx{w, t, gpu, granularity, Sharding{w.plan.tp, t.sequence_parallel}, stage_layers(w.plan, w.model.layers),
              {}, w.plan.pp * w.plan.vpp, {}, {}, {}, {}, {}, {}, zero3_prefetches(w, gpu), {}, {}, {}, {}};
  int first = 0;
  for (int n : ctx.layers) {
    ctx.first_layer.push_back(first);
    first += n;
  }
  const ModelSpec& m = w.model;
  const double tokens = static_cast<double>(t.micro_batch) * m.seq_length;
  ctx.activation = Bytes(tokens * m.hidden * bytes_per_element(t.precision));
  const double layer_params = layer_parameters(m) / w.plan.tp;
  for (const double part : layer_module_parameters(m)) {
    ctx.layer_modules.push_back(Bytes(part / w.plan.tp * bytes_per_element(t.weight_dtype)));
    ctx.module_grads.push_back(Bytes(part / w.plan.tp * bytes_per_element(t.grad_dtype)));
  }
  ctx.layer_grads = Bytes(layer_params * bytes_per_element(t.grad_dtype));
  ctx.embedding_grads = Bytes(embedding_parameters(m) / w.plan.tp * bytes_per_element(t.grad_dtype));
  ctx.logits_grads = Bytes(logits_parameters(m) / w.plan.tp * bytes_per_element(t.grad_dtype));
  for (const Pass p : {Pass::Forward, Pass::Backward, Pass::Recompute}) {
    ctx.layer_kernels[pass_index(p)] = layer_kernels(m, t, ctx.sharding, t.micro_batch, p);
    for (const Kernel& k : ctx.layer_kernels[pass_index(p)])
      ctx.layer_times[pass_index(p)].push_back(kernel_time(k, gpu, t.precision));
  }
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    ctx.embedding_kernels[pass_index(p)] = embedding_kernels(m, t, ctx.sharding, t.micro_batch, p);
    ctx.logits_kernels[pass_index(p)] = logits_kernels(m, t, ctx.sharding, t.micro_batch, p);
  }
  return ctx;
}

std::vector<Op> stage_ops(const Context& ctx, int stage, int micro_batches) {
  StageBuilder b(ctx, stage);
  b.start();
  for (const PipeStep& step : schedule_order(ctx.w.plan, micro_batches, stage)) {
    if (step.pass == Pass::Forward) b.forward(step);
    else b.backward(step, step.micro_batch == micro_batches - 1);
  }
  b.finish(stage_parameters(ctx, stage));
  return b.take();
}

}  // namespace

StepGraph generate_step(const Workload& w, const topology::GpuSpec& gpu, const GenerateOptions& options) {
  DTSIM_ASSERT(w.training.has_value(), "generate_step needs a training workload");
  const Context ctx = make_context(w, gpu, options.granularity);
  StepGraph g{w, Placement(w.plan), options.granularity, micro_batches(w.plan, *w.training), {}};
  for (int stage = 0; stage < w.plan.pp; ++stage) {
    g.classes.push_back(stage_class(g.placement, stage, stage_ops(ctx, stage, g.micro_batches)));
  }
  return g;
}

RankClass stage_class(const Placement& placement, int stage, std::vector<Op> ops) {
  RankClass c{stage, {}, std::move(ops)};
  for (int r = 0; r < placement.ranks(); ++r)
    if (placement.coord(r).pp == stage) c.ranks.push_back(r);
  return c;
}

const RankClass& StepGraph::class_of(int rank) const {
  return classes[static_cast<std::size_t>(placement.coord(rank).pp)];
}

std::vector<int> StepGraph::group_ranks(int rank, Group group) const {
  switch (group) {
    case Group::Tp: return placement.group(rank, Axis::Tp);
    case Group::Dp: return placement.group(rank, Axis::Dp);
    case Group::Embedding: {
      RankCoord first = placement.coord(rank);
      RankCoord last = first;
      first.pp = 0;
      last.pp = placement.size(Axis::Pp) - 1;
      return {placement.rank(first), placement.rank(last)};
    }
  }
  DTSIM_ASSERT(false, "group missing from group_ranks");
}

int StepGraph::peer_rank(int rank, int peer_stage) const {
  RankCoord c = placement.coord(rank);
  c.pp = peer_stage;
  return placement.rank(c);
}

}  // namespace dtsim::workloads
