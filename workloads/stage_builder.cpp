// StageBuilder (stage_builder.hpp): a stage's schedule steps as ops. The forward and backward of a micro-batch
// (pipeline receives and sends, the embedding and logits, each layer's pass), gradient buckets and their data-parallel reductions, the parameter all-gathers at the step's start
// (overlap_param_gather), and the end of the step (tied embeddings, the optimizer, ZeRO-1/2's all-gather).
// ZeRO-3's parameter gathers and ZeRO++'s quantised collectives: stage_builder_zero.cpp.
#include "workloads/stage_builder.hpp"

#include <algorithm>
#include <utility>
#include <variant>
#include <vector>

#include "topology/error.hpp"
#include "workloads/lora.hpp"

namespace dtsim::workloads::detail {
namespace {

// The distributed optimizer's parameter all-gather moved to the next step's forward (training.overlap_param_gather).
bool overlaps_param_gather(const Workload& w) { return w.training->overlap_param_gather && w.plan.zero == 1; }

// Whether a stage's pipeline exchanges leave its compute running (training.overlap_p2p_comm). Megatron-LM's
// exchanges block: p2p_communication.py's _communicate posts the sends and receives of a schedule step in one
// batch_isend_irecv, waits for every request and then torch.cuda.synchronize()s (2021's code always;
// Megatron-Core while batch_p2p_comm and batch_p2p_sync, its defaults without overlap_p2p_comm), so the stage's
// next pass starts when its send has arrived. Megatron-Core turns overlap_p2p_comm on by default and off without
// interleaving (arguments.py: --no-overlap-p2p-communication, "overlap_p2p_comm = False" when
// virtual_pipeline_model_parallel_size is None), NeMo with it. DeepSpeed's pipeline engine sends with blocking
// dist.send (runtime/pipe/p2p.py). torchtitan's pipelining posts isend/irecv and waits only for what it receives.
bool overlaps_p2p(const Workload& w) {
  const TrainingSpec& t = *w.training;
  if (t.overlap_p2p_comm) return *t.overlap_p2p_comm;
  switch (t.framework) {
    case Framework::MegatronCore:
    case Framework::Nemo: return w.plan.vpp > 1;
    case Framework::Torchtitan: return true;
    case Framework::Megatron2021:
    case Framework::Megatron2022:
    case Framework::DeepSpeed:
    case Framework::DeepSpeed2021: return false;
  }
  return true;
}

// A unit of parameters the forward uses: a layer, the embedding (-1) or the head (-2), with the parameters one
// GPU trains of it (with LoRA: the layer's adapters; the embedding and the head, frozen, none): dense (sharded
// over dp by the distributed optimizer) and routed experts' (over the expert dp group).
struct Unit {
  int id;
  double dense;
  double expert;
};

// The units of one virtual stage in forward order (the embedding, its layers, the logits).
std::vector<Unit> forward_units(const Context& ctx, int v) {
  const ModelSpec& m = ctx.w.model;
  const auto vi = static_cast<std::size_t>(v);
  const double tp = ctx.w.plan.tp;
  std::vector<Unit> units;
  if (v == 0) units.push_back({-1, trained_embedding_parameters(m, ctx.t) / tp, 0.0});
  for (int l = ctx.first_layer[vi]; l < ctx.first_layer[vi] + ctx.layers[vi]; ++l)
    units.push_back({l, trained_layer_dense_parameters(m, ctx.t, l) / tp,
                     trained_layer_routed_parameters(m, ctx.t, l) / (ctx.w.plan.ep * ctx.w.plan.expert_tp())});
  if (v == ctx.virtual_stages - 1) {
    double head = trained_final_norm_parameters(m, ctx.t) + trained_logits_parameters(m, ctx.t);
    if (m.tied_embeddings && ctx.w.plan.pp > 1 && !ctx.t.lora.on()) head += static_cast<double>(m.vocab) * m.hidden;
    units.push_back({-2, head / tp, 0.0});
  }
  return units;
}

}  // namespace

Deps StageBuilder::receive(const PipeStep& step, int from_virtual, Deps deps) {
  const auto& plan = ctx_.w.plan;
  const bool shard = ctx_.sharding.sequence_parallel || (plan.scatter_gather && plan.tp > 1);
  const Bytes wire = shard ? ctx_.activation / plan.tp : ctx_.activation;
  const PipeTag tag{step.micro_batch, step.chunk, step.pass};
  const Index r = add(RecvOp{stage_of(from_virtual), wire, tag}, std::move(deps));
  if (!shard || ctx_.sharding.sequence_parallel) return {r};
  return {collective(CollectiveKind::AllGather, Group::Tp, ctx_.activation, CommPurpose::PipelineGather, -1,
                     step.micro_batch, {r})};
}

void StageBuilder::send(const PipeStep& step, int to_virtual, Deps deps) {
  const auto& plan = ctx_.w.plan;
  const bool shard = ctx_.sharding.sequence_parallel || (plan.scatter_gather && plan.tp > 1);
  const Bytes wire = shard ? ctx_.activation / plan.tp : ctx_.activation;
  const Index s =
      add(SendOp{stage_of(to_virtual), wire, PipeTag{step.micro_batch, chunk_of(to_virtual), step.pass}}, std::move(deps));
  if (!overlaps_p2p(ctx_.w) && !ctx_.t.overlap_moe_expert_parallel_comm) blocking_sends_.push_back(s);
}

void StageBuilder::forward(const PipeStep& step) {
  const int v = virtual_stage(step);
  const int mb = step.micro_batch;
  Deps deps = take_blocking_sends();
  if (v > 0) deps = receive(step, v - 1, std::move(deps));
  if (v == 0)
    deps = compute(ctx_.embedding_kernels[0], Scope::Embedding, Pass::Forward, -1, mb,
                   unit_gather(ctx_.embedding_weights, kEmbeddingUnit, mb, gated(kEmbeddingUnit, std::move(deps)),
                               Pass::Forward));
  const auto vi = static_cast<std::size_t>(v);
  for (int l = ctx_.first_layer[vi]; l < ctx_.first_layer[vi] + ctx_.layers[vi]; ++l) {
    // FSDP under pipeline parallelism gathers a layer at its first forward only (micro-batch 0 comes first).
    deps = gated(l, std::move(deps));
    if (!ctx_.gathers_once() || mb == 0) deps = zero3_gather(l, mb, std::move(deps), Pass::Forward);
    deps = layer_pass(l, mb, Pass::Forward, std::move(deps));
    deps = offload_wait(l, mb, Pass::Forward, std::move(deps));
    gather_window_.push_back(deps.front());
  }
  if (v == ctx_.virtual_stages - 1) {
    compute(ctx_.logits_kernels[0], Scope::Logits, Pass::Forward, -1, mb,
            unit_gather(ctx_.head_weights, kLogitsUnit, mb, gated(kLogitsUnit, std::move(deps)), Pass::Forward));
    return;
  }
  send(step, v + 1, std::move(deps));
}

// An offloaded layer's copy to the host (forward) or back (backward), where it outlasts the passes beside it: a
// wait on the host's side (the GPU idles, at idle power; not a straggler's compute, not the SMs' contention).
Deps StageBuilder::offload_wait(int layer, int mb, Pass pass, Deps deps) {
  const Seconds wait = ctx_.offload_wait[pass_index(pass)];
  if (layer >= ctx_.t.offload_layers || wait.value() <= 0.0) return deps;
  return {add(HostOp{pass, layer, mb, wait}, std::move(deps))};
}

void StageBuilder::add_grads(Bytes bytes, bool expert, int layer, int mb, Index after) {
  if (ctx_.gathers_once()) {   // reduced when the virtual stage's last backward ends (backward)
    deferred_.push_back({bytes, expert, layer});
    return;
  }
  Bucket& b = buckets_[expert ? 1 : 0];
  b.bytes += bytes;
  b.deps = {after};
  // FSDP's bucket is its unit, the layer: reduced when the layer's backward ends, whatever its size.
  if (ctx_.t.dp_overlap && b.bytes >= ctx_.t.dp_bucket && ctx_.w.plan.fsdp == Fsdp::None) flush_bucket(expert, layer, mb);
}

// ZeRO 0: all-reduce; ZeRO >= 1: reduce-scatter (each rank keeps its shard of the gradients). The routed experts'
// gradients go to their own buckets, reduced over the expert data-parallel group (Megatron-Core's expert buffers).
// FSDP reduce-scatters a unit's gradients (a layer's, the embedding's, the output layer's) when its backward ends:
// the unit is the bucket; the routed experts' go over their own data-parallel group. (Under pipeline parallelism
// add_grads defers them to the stage's last backward instead.)
void StageBuilder::fsdp_unit_done(int layer, int mb) {
  if (ctx_.w.plan.fsdp == Fsdp::None) return;
  flush_bucket(false, layer, mb);
  flush_bucket(true, layer, mb);
}

void StageBuilder::flush_bucket(bool expert, int layer, int mb) {
  Bucket& b = buckets_[expert ? 1 : 0];
  if (b.bytes.value() > 0)
    if (const auto last = reduce_grads(b.bytes, expert, layer, mb, b.deps)) dp_comms_.push_back(*last);
  b.bytes = Bytes(0);
}

// One reduction of `bytes` of gradients, its last collective (none where the group is one rank).
std::optional<Index> StageBuilder::reduce_grads(Bytes bytes, bool expert, int layer, int mb, Deps deps) {
  const int replicas = expert ? ctx_.w.plan.expert_dp() : ctx_.w.plan.dp_ranks();
  if (replicas == 1) return std::nullopt;
  const auto kind = ctx_.w.plan.zero == 0 ? CollectiveKind::AllReduce : CollectiveKind::ReduceScatter;
  const int shard = ctx_.w.plan.shard_ranks;
  if (!expert && ctx_.t.zero_pp.qgz && kind == CollectiveKind::ReduceScatter) return quantized_reduce(bytes, layer, mb, deps);
  if (!expert && shard > 0) {
    // Hybrid FSDP: reduce-scattered within the node, each shard then all-reduced with its replicas on the others.
    const Index scattered = collective(kind, Group::Shard, bytes, CommPurpose::DataParallelGrads, layer, mb, std::move(deps));
    return ctx_.w.plan.dp_ranks() > shard ? collective(CollectiveKind::AllReduce, Group::Replica, bytes / shard,
                                                       CommPurpose::DataParallelGrads, layer, mb, {scattered})
                                          : scattered;
  }
  return collective(kind, expert ? Group::ExpertDp : Group::Dp, bytes,
                    expert ? CommPurpose::ExpertGrads : CommPurpose::DataParallelGrads, layer, mb, std::move(deps));
}

void StageBuilder::backward(const PipeStep& step, bool last_micro_batch) {
  const int v = virtual_stage(step);
  const int mb = step.micro_batch;
  // Gradients are reduced once per step after the last micro-batch (ZeRO 0/1), or every micro-batch (ZeRO 2/3).
  const bool reduce = last_micro_batch || (ctx_.w.plan.zero >= 2 && !ctx_.gathers_once());
  Deps deps = take_blocking_sends();
  if (v < ctx_.virtual_stages - 1) deps = receive(step, v + 1, std::move(deps));
  if (v == ctx_.virtual_stages - 1) {
    deps = compute(ctx_.logits_kernels[1], Scope::Logits, Pass::Backward, -1, mb,
                   unit_gather(ctx_.head_weights, kLogitsUnit, mb, std::move(deps), Pass::Backward));
    if (reduce && !ctx_.w.model.tied_embeddings) add_grads(ctx_.logits_grads, false, -1, mb, deps.front());
    if (reduce) fsdp_unit_done(-1, mb);   // the output layer, a unit of its own
  }
  const auto vi = static_cast<std::size_t>(v);
  for (int l = ctx_.first_layer[vi] + ctx_.layers[vi] - 1; l >= ctx_.first_layer[vi]; --l) {
    if (!ctx_.gathers_once()) deps = backward_gather(l, mb, std::move(deps), l > ctx_.first_layer[vi]);
    if (ctx_.t.recompute != Recompute::None) deps = layer_pass(l, mb, Pass::Recompute, std::move(deps));
    deps = offload_wait(l, mb, Pass::Backward, std::move(deps));
    // With buckets reduced during the backward, each module's gradients join the bucket as the backward produces
    // them, so a bucket can be reduced while the rest of the layer computes.
    const bool per_module = reduce && ctx_.t.dp_overlap && ctx_.w.plan.dp_ranks() > 1 && ctx_.w.plan.fsdp == Fsdp::None;
    std::vector<ModuleReady> ready;
    deps = layer_pass(l, mb, Pass::Backward, std::move(deps), per_module ? &ready : nullptr);
    gather_window_.push_back(deps.front());
    const LayerWork& work = ctx_.work(l);
    for (const ModuleReady& r : ready) {
      const ModuleGrads& g = work.modules[r.module];
      add_grads(g.bytes, g.expert, l, mb, r.op);
    }
    if (reduce && !per_module) {
      if (ctx_.experts_in_unit()) {   // one unit: one reduction of the layer's gradients
        add_grads(work.grads + work.expert_grads, false, l, mb, deps.front());
      } else {
        add_grads(work.grads, false, l, mb, deps.front());
        if (work.expert_grads.value() > 0) add_grads(work.expert_grads, true, l, mb, deps.front());
      }
    }
    if (reduce) fsdp_unit_done(l, mb);
  }
  if (v == 0)
    deps = compute(ctx_.embedding_kernels[1], Scope::Embedding, Pass::Backward, -1, mb,
                   unit_gather(ctx_.embedding_weights, kEmbeddingUnit, mb, std::move(deps), Pass::Backward));
  if (v == 0 && reduce) {
    add_grads(ctx_.embedding_grads, false, -1, mb, deps.front());
    fsdp_unit_done(-1, mb);   // the embedding, a unit of its own
  }
  // FSDP under pipeline parallelism: every unit's reduce-scatter once this last backward has ended, in the
  // order the backward produced them.
  for (const Deferred& d : deferred_)
    if (const auto last = reduce_grads(d.bytes, d.expert, d.layer, mb, {deps.front()})) dp_comms_.push_back(*last);
  deferred_.clear();
  if (reduce && !ctx_.t.dp_overlap && ctx_.w.plan.zero >= 2) {   // after this backward
    flush_bucket(false, -1, mb);
    flush_bucket(true, -1, mb);
  }
  if (v > 0) send(step, v - 1, deps);
  last_backward_ = deps;
}

void StageBuilder::step(const PipeStep& s, int micro_batches) {
  if (s.pass == Pass::Forward) forward(s);
  else backward(s, s.micro_batch == micro_batches - 1);
}

void StageBuilder::combined(const PipeStep& first, const PipeStep& second, int micro_batches) {
  DTSIM_ASSERT(first.pass != second.pass && first.micro_batch != second.micro_batch,
               "a combined step pairs a forward and a backward of different micro-batches");
  const std::size_t from = ops_.size();
  step(first, micro_batches);
  const std::size_t mid = ops_.size();
  step(second, micro_batches);
  interleave(from, mid);
}

namespace {

bool token_exchange(const Op& op) {
  const auto* c = std::get_if<CollectiveOp>(&op.body);
  return c != nullptr && c->purpose == CommPurpose::ExpertParallel;
}

// The ops [from, to) cut into pieces, each ending after a run of token-exchange collectives (or at `to`).
std::vector<std::pair<std::size_t, std::size_t>> pieces(const std::vector<Op>& ops, std::size_t from, std::size_t to) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t start = from;
  for (std::size_t i = from; i < to; ++i)
    if (token_exchange(ops[i]) && (i + 1 == to || !token_exchange(ops[i + 1]))) {
      out.emplace_back(start, i + 1);
      start = i + 1;
    }
  if (start < to) out.emplace_back(start, to);
  return out;
}

}  // namespace

// Reorders ops_[from, end): the pieces of [from, second) and of [second, end) in turn, each list keeping its own
// order. A piece of the second list that waits on an op of the first not yet placed goes after the first list's
// pieces up to that op, so the order stays one the ops can run in (no such link exists today: the state the
// steps share, ZeRO-3's gates and the buckets, is not used with combined steps, which plan.cpp refuses beside FSDP
// and DeepSpeed's ZeRO-3 alike; the rule keeps the reorder safe if it is).
// Every index into the moved ops, in the ops and in the builder's state, follows them.
void StageBuilder::interleave(std::size_t from, std::size_t second) {
  const std::size_t end = ops_.size();
  const auto a = pieces(ops_, from, second), b = pieces(ops_, second, end);
  std::vector<Index> position(end - from);
  std::vector<Op> moved;
  moved.reserve(end - from);
  const auto place = [&](std::pair<std::size_t, std::size_t> piece) {
    for (std::size_t i = piece.first; i < piece.second; ++i) {
      position[i - from] = static_cast<Index>(from + moved.size());
      moved.push_back(std::move(ops_[i]));
    }
  };
  std::size_t ia = 0, ib = 0, placed_a = from;   // placed_a: the first op of the first list not yet placed
  bool turn_a = true;
  while (ia < a.size() || ib < b.size()) {
    bool take_a = ia < a.size() && (turn_a || ib == b.size());
    if (!take_a) {   // the second list's next piece, unless it waits on the first's unplaced ops
      for (std::size_t i = b[ib].first; i < b[ib].second && !take_a; ++i)
        for (const Index d : ops_[i].deps)
          if (d >= placed_a && d < second) take_a = true;
    }
    if (take_a) {
      place(a[ia]);
      placed_a = a[ia].second;
      ++ia;
    } else {
      place(b[ib]);
      ++ib;
    }
    turn_a = !take_a;
  }
  const auto remap = [&](Index& i) {
    if (i >= from) i = position[i - from];
  };
  for (std::size_t k = 0; k < moved.size(); ++k) {
    for (Index& d : moved[k].deps) {
      remap(d);
      DTSIM_ASSERT(d < from + k, "an interleaved op waits on one placed before it");
    }
    ops_[from + k] = std::move(moved[k]);
  }
  for (Bucket& bucket : buckets_) std::ranges::for_each(bucket.deps, remap);
  std::ranges::for_each(dp_comms_, remap);
  std::ranges::for_each(last_backward_, remap);
  std::ranges::for_each(gather_window_, remap);
  for (auto& [unit, gates] : prefetched_) std::ranges::for_each(gates, remap);
  for (auto& [unit, gates] : param_gates_) std::ranges::for_each(gates, remap);
}

// The end of the step: the last gradient bucket, the tied-embedding reduction between the first and last
// stage, the optimizer step on this rank's shard, and (ZeRO 1/2) the all-gather of the updated weights.
void StageBuilder::finish(double stage_params, double stage_expert_params) {
  flush_bucket(false, -1, -1);
  flush_bucket(true, -1, -1);
  const auto& plan = ctx_.w.plan;
  Deps before_step = dp_comms_;
  before_step.append(last_backward_.begin(), last_backward_.end());
  const auto sends = take_blocking_sends();
  before_step.append(sends.begin(), sends.end());
  const bool ends = stage_ == 0 || stage_ == plan.pp - 1;
  if (ctx_.w.model.tied_embeddings && plan.pp > 1 && ends && ctx_.embedding_grads.value() > 0)
    before_step.push_back(collective(CollectiveKind::AllReduce, Group::Embedding, ctx_.embedding_grads,
                                     CommPurpose::EmbeddingGrads, -1, -1, last_backward_));
  const double shard = plan.zero >= 1 ? stage_params / plan.zero_ranks() + stage_expert_params / plan.expert_dp()
                                      : stage_params + stage_expert_params;
  std::vector<Kernel> step_kernels = step_overhead_kernels(ctx_.t, shard);
  step_kernels.insert(step_kernels.begin() + 1, optimizer_kernel(ctx_.t, shard));   // after the norm, before zeroing
  const Index step = compute(step_kernels, Scope::Optimizer, Pass::Forward, -1, -1, std::move(before_step)).front();
  if ((plan.zero != 1 && plan.zero != 2) || overlaps_param_gather(ctx_.w)) return;
  const double weight = bytes_per_element(ctx_.t.weight_dtype);
  if (plan.dp_ranks() > 1)
    collective(CollectiveKind::AllGather, Group::Dp, Bytes(stage_params * weight), CommPurpose::ZeroParamGather, -1,
               -1, {step});
  if (stage_expert_params > 0 && plan.expert_dp() > 1)
    collective(CollectiveKind::AllGather, Group::ExpertDp, Bytes(stage_expert_params * weight),
               CommPurpose::ZeroParamGather, -1, -1, {step});
}

Deps StageBuilder::gated(int unit, Deps deps) {
  const auto it = param_gates_.find(unit);
  if (it == param_gates_.end()) return deps;
  deps.append(it->second.begin(), it->second.end());
  param_gates_.erase(it);
  return deps;
}

// overlap_param_gather: at the step's start (the previous step's optimizer has just run: in steady state Megatron
// issues these all-gathers then, and every stage at once with align_param_gather), one all-gather per bucket of
// the stage's parameters in forward order, the bucket as the gradients' (dp_bucket, counted in parameters); each
// unit's first forward waits for its own buckets only. The routed experts' parameters fill buckets of their own,
// gathered over the expert data-parallel group.
void StageBuilder::start() {
  if (!overlaps_param_gather(ctx_.w)) return;
  const double bucket = ctx_.t.dp_bucket.value() / bytes_per_element(ctx_.t.grad_dtype);
  const double weight = bytes_per_element(ctx_.t.weight_dtype);
  struct Filling {
    Group group;
    int replicas;
    std::vector<int> members;
    double params = 0;
  };
  std::array<Filling, 2> fill{Filling{Group::Dp, ctx_.w.plan.dp_ranks(), {}, 0.0},
                              Filling{Group::ExpertDp, ctx_.w.plan.expert_dp(), {}, 0.0}};
  const auto gather = [&](Filling& f) {
    if (f.members.empty()) return;
    const Index ag = collective(CollectiveKind::AllGather, f.group, Bytes(f.params * weight),
                               CommPurpose::ZeroParamGather, f.members.front() >= 0 ? f.members.front() : -1, 0, {});
    for (int u : f.members) param_gates_[u].push_back(ag);
    f.members.clear();
    f.params = 0;
  };
  const auto add = [&](Filling& f, int unit, double count) {
    if (f.replicas == 1 || count <= 0) return;
    f.members.push_back(unit);
    f.params += count;
    if (f.params >= bucket) gather(f);
  };
  for (int v = stage_; v < ctx_.virtual_stages; v += ctx_.w.plan.pp)
    for (const Unit& u : forward_units(ctx_, v)) {
      add(fill[0], u.id, u.dense);
      add(fill[1], u.id, u.expert);
    }
  gather(fill[0]);
  gather(fill[1]);
}

}  // namespace dtsim::workloads::detail
