// generate_step: a training step's ops, one list per pipeline stage.
//
//   stage s, for each step of schedule_order(plan, m, s):
//     forward (micro-batch i, chunk c):   [recv act (+TP all-gather)] [embedding] { [ZeRO-3 gather] layer TP-comm }*
//                                         [logits] [send act]
//     backward:                           [recv grad (+gather)] [logits'] { [gather] [recompute] layer' TP-comm
//                                         [DP bucket] }* (reverse) [embedding'] [send grad]
//   then: tied-embedding all-reduce (first and last stage), optimizer step, ZeRO-1/2 parameter all-gather.
//   With training.overlap_moe_expert_parallel_comm the steady state's forward-backward pairs are built as one
//   step, their ops interleaved at each MoE token exchange (StageBuilder::combined).
//
// Each stage's ops come from a StageBuilder (stage_builder.hpp); here the context every stage shares is built
// and the stages gathered into a StepGraph.
#include "workloads/step_graph.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/host_model.hpp"
#include "workloads/layer_list.hpp"
#include "workloads/lora.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_builder.hpp"

namespace dtsim::workloads {
namespace {

using detail::Context;
using detail::LayerWork;
using detail::ModuleGrads;
using detail::pass_index;
using detail::StageBuilder;

// Parameters one GPU of `stage` trains (its TP shard): its layers, the embedding on the first virtual stage, the
// final norm and the output layer (untied; or, tied with pp > 1, Megatron's copy of the embedding) on the last;
// and apart, its share of the routed experts (split over ep x etp). With LoRA, its layers' adapters only.
struct StageParameters {
  double dense = 0;
  double expert = 0;
};
StageParameters stage_parameters(const Context& ctx, int stage) {
  const ModelSpec& m = ctx.w.model;
  const auto& plan = ctx.w.plan;
  StageParameters params;
  for (int v = stage; v < ctx.virtual_stages; v += plan.pp) {
    const auto vi = static_cast<std::size_t>(v);
    for (int l = ctx.first_layer[vi]; l < ctx.first_layer[vi] + ctx.layers[vi]; ++l) {
      params.dense += trained_layer_dense_parameters(m, ctx.t, l);
      params.expert += trained_layer_routed_parameters(m, ctx.t, l);
    }
    if (v == 0) params.dense += trained_embedding_parameters(m, ctx.t);
    if (v == ctx.virtual_stages - 1) {
      params.dense += trained_final_norm_parameters(m, ctx.t) + trained_logits_parameters(m, ctx.t);
      if (m.tied_embeddings && plan.pp > 1 && !ctx.t.lora.on()) params.dense += static_cast<double>(m.vocab) * m.hidden;
    }
  }
  return {params.dense / plan.tp, params.expert / (plan.ep * plan.expert_tp())};
}

// A dense layer's gradients by module (layer_module_parameters: Q K V with the norms, projection, MLP up, down;
// with LoRA, their adapters'),
// or an MoE layer's (attention with the norms and the router, projection, the shared experts' up and down, the
// routed experts' up and down), on one GPU.
std::vector<ModuleGrads> module_grads(const Workload& w, bool moe) {
  const ModelSpec& m = w.model;
  const double tp = w.plan.tp;
  const double experts = w.plan.ep * w.plan.expert_tp();
  const double g = bytes_per_element(w.training->grad_dtype);
  using K = KernelClass;
  if (!moe) {
    const auto parts = w.training->lora.on() ? lora_module_parameters(m, w.training->lora) : layer_module_parameters(m);
    return {{std::nullopt, Bytes(parts[0] / tp * g), false}, {K::ProjGemm, Bytes(parts[1] / tp * g), false},
            {K::MlpUpGemm, Bytes(parts[2] / tp * g), false}, {K::MlpDownGemm, Bytes(parts[3] / tp * g), false}};
  }
  const MoeLayerParameters p = moe_layer_parameters(m);
  const double proj = static_cast<double>(m.value_dim()) * m.hidden;
  // The router's weight is whole on every TP rank (memory_plan.cpp), its gradients too.
  std::vector<ModuleGrads> out{{std::nullopt, Bytes(((p.attention - proj) / tp + p.router) * g), false},
                               {K::ProjGemm, Bytes(proj / tp * g), false}};
  if (p.shared_up > 0) {
    out.push_back({K::MlpUpGemm, Bytes(p.shared_up / tp * g), false});
    out.push_back({K::MlpDownGemm, Bytes(p.shared_down / tp * g), false});
  }
  out.push_back({K::ExpertUpGemm, Bytes(p.expert_up / experts * g), true});
  out.push_back({K::ExpertDownGemm, Bytes(p.expert_down / experts * g), true});
  return out;
}

LayerWork layer_work(const Context& ctx, bool moe) {
  const Workload& w = ctx.w;
  const TrainingSpec& t = *w.training;
  LayerWork work;
  for (const Pass p : {Pass::Forward, Pass::Backward, Pass::Recompute}) {
    work.kernels[pass_index(p)] = layer_kernels(w.model, t, ctx.sharding, t.micro_batch, p, moe);
    for (const Kernel& k : work.kernels[pass_index(p)])
      work.times[pass_index(p)].push_back(kernel_time(k, ctx.gpu, t.precision));
  }
  if (moe)   // the dispatcher makes the host wait every pass that runs it (host_model.hpp)
    for (const Pass p : {Pass::Forward, Pass::Backward, Pass::Recompute}) {
      const auto& ks = work.kernels[pass_index(p)];
      const bool dispatches = std::ranges::any_of(ks, [](const Kernel& k) { return k.kind == KernelClass::TokenPermute; });
      if (!ks.empty()) work.host[pass_index(p)] = moe_host_time(p, dispatches);
    }
  work.modules = module_grads(w, moe);
  for (const ModuleGrads& g : work.modules) (g.expert ? work.expert_grads : work.grads) += g.bytes;
  // ZeRO-3 (DeepSpeed) gathers a layer one linear module at a time (plan.cpp refuses it with experts); FSDP gathers
  // the layer, its one unit, at once: with experts, the dense part over the data-parallel group and the routed
  // experts over theirs, as FSDP2 gathers each parameter over its own mesh (torchtitan/distributed/fsdp.py,
  // apply_fsdp_to_decoder's shard_placement_fn: routed experts on the edp mesh, the rest on the dp mesh).
  const double weight = bytes_per_element(t.weight_dtype);
  if (w.plan.fsdp != Fsdp::None) {
    const MoeLayerParameters experts = moe ? moe_layer_parameters(w.model) : MoeLayerParameters{};
    const Bytes routed(experts.routed() / (w.plan.ep * w.plan.expert_tp()) * weight);
    work.gathered.push_back(Bytes((moe ? experts.dense() : layer_parameters(w.model)) / w.plan.tp * weight));
    if (ctx.experts_in_unit())
      work.gathered.back() += routed;
    else
      work.expert_gathered = routed;
  } else {
    for (const double part : layer_module_parameters(w.model)) work.gathered.push_back(Bytes(part / w.plan.tp * weight));
  }
  return work;
}

// Activation offloading: a layer's kept activations (the larger of a dense and an MoE layer's, this rank's share)
// cross the GPU's link to its CPU (NVLink-C2C on a Grace superchip, else its PCIe host link) at the link's
// collective efficiency. Transformer Engine spreads the k offloaded layers' copies over the model's L layers
// (AsyncDoubleBufferGroupOffloadHandler's layer_window_map: offload group i must be done by layer (L/k)(i+1) - 1,
// and reloads alike in the backward): each copy runs beside L/k layers' passes (the shorter kind's, without their
// communication); what it takes beyond them waits. Not modelled: two GPUs of a Grace sharing its LPDDR5X, and NIC
// traffic sharing the link.
std::array<Seconds, 2> offload_waits(const Context& ctx) {
  const Workload& w = ctx.w;
  const ModelSpec& m = w.model;
  const double bytes = largest_layer_activation_bytes(m, ctx.t, w.plan.tp, ctx.t.micro_batch, w.plan.expert_tp()).value();
  const topology::LinkSpec& link = topology::host_memory_link(ctx.gpu);
  const Seconds copy(bytes / w.plan.cp / (link.bandwidth.value() * link.efficiency));
  const double window = std::max(1, m.layers / ctx.t.offload_layers);
  std::array<Seconds, 2> out{};
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    double pass = INFINITY;
    for (const bool moe : {false, true}) {
      if (moe && !m.moe()) continue;
      double kind = 0;
      for (const Seconds t : ctx.layer_work[moe ? 1 : 0].times[pass_index(p)]) kind += t.value();
      pass = std::min(pass, kind);
    }
    out[pass_index(p)] = Seconds(std::max(0.0, copy.value() - window * pass));
  }
  return out;
}

Context make_context(const Workload& w, const topology::GpuSpec& gpu, const GenerateOptions& options) {
  const TrainingSpec& t = *w.training;
  const Sharding sharding{w.plan.tp, t.sequence_parallel, w.plan.ep, w.plan.expert_tp(), w.plan.cp};
  Context ctx{w, t, gpu, options.granularity, sharding, stage_layers(w.plan, w.model.layers), {}, w.plan.pp * w.plan.vpp,
              {}, {}, {}, zero3_prefetches(w, gpu), {}, {}, {}, {}, {}, {}, options.reuse_passes, {}};
  ctx.first_layer = first_layers(ctx.layers);
  const ModelSpec& m = w.model;
  const double tokens = static_cast<double>(t.micro_batch) * m.seq_length;
  // This rank's share, at the activations' width (16 bits beside 8- and 4-bit GEMMs, as the memory plan keeps them).
  ctx.activation = Bytes(tokens / w.plan.cp * m.hidden * activation_element_bytes(t.precision));
  ctx.cp_kv = context_kv_bytes(m, t, sharding, t.micro_batch);
  ctx.embedding_grads = Bytes(trained_embedding_parameters(m, t) / w.plan.tp * bytes_per_element(t.grad_dtype));
  ctx.logits_grads = Bytes(trained_logits_parameters(m, t) / w.plan.tp * bytes_per_element(t.grad_dtype));
  if (w.plan.zero >= 3) {   // the memory plan's gathered units (memory_plan.cpp, largest_gathered_unit)
    const double weight = bytes_per_element(t.weight_dtype);
    ctx.embedding_weights = Bytes(embedding_parameters_per_gpu(m, w.plan.tp) * weight);
    ctx.head_weights = Bytes(head_parameters_per_gpu(m, w.plan) * weight);
  }
  ctx.layer_work[0] = layer_work(ctx, false);
  if (m.moe()) {
    ctx.ep_nodes = ep_nodes(w);
    ctx.moe = moe_traffic(m, t, sharding, t.micro_batch, ctx.ep_nodes.nodes);
    ctx.layer_work[1] = layer_work(ctx, true);
  }
  if (t.offload_layers > 0) ctx.offload_wait = offload_waits(ctx);
  if (t.zero_pp.hpz || t.zero_pp.qgz) ctx.node_dp = node_dp_ranks(w);
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    ctx.embedding_kernels[pass_index(p)] = embedding_kernels(m, t, ctx.sharding, t.micro_batch, p);
    ctx.logits_kernels[pass_index(p)] = logits_kernels(m, t, ctx.sharding, t.micro_batch, p);
  }
  return ctx;
}

std::vector<Op> stage_ops(const Context& ctx, int stage, int micro_batches) {
  StageBuilder b(ctx, stage);
  b.start();
  const std::vector<PipeStep> order = schedule_order(ctx.w, micro_batches, stage);
  // overlap_moe_expert_parallel_comm: each forward-backward pair of the steady state runs combined (Megatron-Core's
  // combined 1F1B steps, after its warm-up of one forward more). Only there: a pair across the warm-up's end or
  // into the drain would hold a forward's send behind a backward's receive that waits on it.
  const auto warmup = static_cast<std::size_t>(warmup_forwards(ctx.w, micro_batches, stage));
  const bool combine = combined_steps(ctx.w);   // GPipe's warm-up is every forward: no pair
  const std::size_t steady_end = order.size() - warmup;   // warm-up forwards, pairs, then as many backwards
  for (std::size_t i = 0; i < order.size(); ++i) {
    const PipeStep& step = order[i];
    if (combine && i >= warmup && i + 1 < steady_end && (i - warmup) % 2 == 0) {
      DTSIM_ASSERT(step.pass == Pass::Forward && order[i + 1].pass == Pass::Backward &&
                       step.micro_batch != order[i + 1].micro_batch,
                   "1F1B's steady state pairs a forward with another micro-batch's backward");
      b.combined(step, order[i + 1], micro_batches);
      ++i;
      continue;
    }
    b.step(step, micro_batches);
  }
  const StageParameters params = stage_parameters(ctx, stage);
  b.finish(params.dense, params.expert);
  return b.take();
}

}  // namespace

StepGraph generate_step(const Workload& w, const topology::GpuSpec& gpu, const GenerateOptions& options) {
  DTSIM_ASSERT(w.training.has_value(), "generate_step needs a training workload");
  if (w.model.kind == ModelKind::Layers) return generate_layer_list_step(w, gpu, options.granularity);
  const Context ctx = make_context(w, gpu, options);
  StepGraph g{w, Placement(w.plan), options.granularity, micro_batches(w.plan, *w.training), {}, 0};
  if (w.training->zero_pp.hpz || w.training->zero_pp.qgz) g.node_dp = ctx.node_dp;
  for (int stage = 0; stage < w.plan.pp; ++stage) {
    g.classes.push_back(stage_class(g.placement, stage, stage_ops(ctx, stage, g.micro_batches)));
  }
  return g;
}

RankClass stage_class(const Placement& placement, int stage, std::vector<Op> ops) {
  RankClass c{stage, {}, std::move(ops)};
  // The stage's ranks from its coordinates, not every rank's coordinates searched (pp times the ranks, per step).
  const int tp = placement.size(Axis::Tp), dp = placement.size(Axis::Dp);
  c.ranks.reserve(static_cast<std::size_t>(tp * dp));
  for (int t = 0; t < tp; ++t)
    for (int d = 0; d < dp; ++d) c.ranks.push_back(placement.rank(RankCoord{t, d, stage}));
  std::ranges::sort(c.ranks);
  return c;
}

const RankClass& StepGraph::class_of(int rank) const {
  if (static_cast<int>(classes.size()) == placement.size(Axis::Pp)) return classes[static_cast<std::size_t>(placement.coord(rank).pp)];
  for (const RankClass& c : classes)
    if (std::ranges::binary_search(c.ranks, rank)) return c;
  DTSIM_ASSERT(false, "every rank has a class");
  return classes.front();
}

int StepGraph::cohorts() const {
  int most = 0;
  for (const RankClass& c : classes) most = std::max(most, c.cohort);
  return most + 1;
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
    case Group::Ep: return placement.expert_group(rank, ExpertAxis::Ep);
    case Group::ExpertTp: return placement.expert_group(rank, ExpertAxis::Etp);
    case Group::ExpertDp: return placement.expert_group(rank, ExpertAxis::Edp);
    case Group::Cp: return placement.cp_group(rank);
    case Group::Shard: return placement.shard_group(rank, node_dp > 0 ? node_dp : workload.plan.zero_ranks());
    case Group::Replica: return placement.replica_group(rank, node_dp > 0 ? node_dp : workload.plan.zero_ranks());
    case Group::EpNode:
    case Group::EpRail: {
      const int per_node = workload.gpus_per_node;
      const auto node = [per_node](int r) { return per_node > 0 ? r / per_node : 0; };
      const std::vector<int> ep = placement.expert_group(rank, ExpertAxis::Ep);
      std::vector<int> here;
      for (int r : ep)
        if (node(r) == node(rank)) here.push_back(r);
      if (group == Group::EpNode) return here;
      const auto place = std::ranges::find(here, rank) - here.begin();
      std::vector<int> rail;
      std::vector<int> seen;
      for (int r : ep) {
        if (std::ranges::find(seen, node(r)) != seen.end()) continue;
        seen.push_back(node(r));
        std::vector<int> there;
        for (int s : ep)
          if (node(s) == node(r)) there.push_back(s);
        rail.push_back(there.at(static_cast<std::size_t>(place)));
      }
      return rail;
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
