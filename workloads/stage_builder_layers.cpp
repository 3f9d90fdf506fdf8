// StageBuilder (stage_builder.hpp): a layer's pass as ops, the kernels timed on the GPU, and its TP
// communication (TpStyle): exposed between the kernels, or overlapped with the GEMM it feeds or follows.
#include "workloads/stage_builder.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <variant>
#include <vector>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"

namespace dtsim::workloads::detail {
namespace {

// The TP collectives of a layer pass and their styles (TpComm), in the order the pass's kernels meet them.
std::vector<TpComm> tp_plan(Pass pass, const TrainingSpec& t) {
  using K = KernelClass;
  using C = CollectiveKind;
  const TpStyle ring = t.tp_comm_overlap ? TpStyle::Ring : TpStyle::Exposed;
  const TpStyle pipelined = t.tp_comm_overlap ? TpStyle::Pipelined : TpStyle::Exposed;
  const TpStyle bulk = t.tp_backward_overlap ? TpStyle::Bulk : TpStyle::Exposed;
  const bool sp = t.sequence_parallel;
  if (pass != Pass::Backward && !sp)
    return {{K::ProjGemm, false, C::AllReduce, TpStyle::Exposed}, {K::MlpDownGemm, false, C::AllReduce, TpStyle::Exposed}};
  if (pass != Pass::Backward)
    return {{K::QkvGemm, true, C::AllGather, ring}, {K::ProjGemm, false, C::ReduceScatter, pipelined},
            {K::MlpUpGemm, true, C::AllGather, ring}, {K::MlpDownGemm, false, C::ReduceScatter, pipelined}};
  if (!sp) return {{K::MlpUpGemm, false, C::AllReduce, bulk}, {K::QkvGemm, false, C::AllReduce, bulk}};
  return {{K::MlpDownGemm, true, C::AllGather, ring}, {K::MlpUpGemm, false, C::ReduceScatter, bulk},
          {K::ProjGemm, true, C::AllGather, ring}, {K::QkvGemm, false, C::ReduceScatter, bulk}};
}

// `k` split along its rows (the tokens) into `parts` equal chunks: one chunk.
Kernel row_chunk(const Kernel& k, int parts) {
  Kernel c = k;
  c.flops = k.flops / parts;
  c.bytes = k.bytes / parts;
  c.transposed = k.transposed / parts;
  if (c.gemm) c.gemm->m /= parts;
  if (c.weight_gemm) c.weight_gemm->k /= parts;
  return c;
}

// A weighted backward GEMM's two halves: the data gradient, then the weight gradient.
std::pair<Kernel, Kernel> gradient_halves(const Kernel& k) {
  DTSIM_ASSERT(k.weight_gemm.has_value(), "a weighted backward GEMM has a weight-gradient shape");
  Kernel data = k, weight = k;
  data.flops = weight.flops = k.flops / 2.0;
  data.bytes = weight.bytes = k.bytes / 2.0;
  data.transposed = weight.transposed = k.transposed / 2.0;
  data.weight_gemm = weight.weight_gemm = std::nullopt;
  weight.gemm = k.weight_gemm;
  return {data, weight};
}

// The MoE layer's token exchange (Megatron-Core's all-to-all dispatcher): forward, the tokens' copies sent to
// their experts' GPUs before the experts' up projection (all-to-all over ep), then gathered over the expert-TP
// group; after the down projection, reduce-scattered back over it and returned (all-to-all). Backward mirrors
// it around the same GEMMs. Exposed: Megatron-Core runs them on the compute stream.
std::vector<TpComm> moe_plan(Pass pass, const Context& ctx) {
  using K = KernelClass;
  using C = CollectiveKind;
  const Sharding& s = ctx.sharding;
  const Bytes a2a = ctx.moe.all_to_all;
  const Bytes gather = ctx.moe.expert_gather;
  const bool forward = pass != Pass::Backward;
  const K first = forward ? K::ExpertUpGemm : K::ExpertDownGemm;   // the GEMM the tokens arrive for
  const K last = forward ? K::ExpertDownGemm : K::ExpertUpGemm;    // and the one they leave after
  std::vector<TpComm> exchange;   // the tokens' way to their experts
  if (s.ep > 1 && ctx.t.moe_dispatcher == MoeDispatcher::AllToAll)
    exchange.push_back({first, true, C::AllToAll, TpStyle::Exposed, Group::Ep, a2a});
  if (s.ep > 1 && ctx.t.moe_dispatcher == MoeDispatcher::DeepEp) {
    if (ctx.ep_nodes.nodes > 1)
      exchange.push_back({first, true, C::AllToAll, TpStyle::Exposed, Group::EpRail, ctx.moe.rail});
    if (ctx.ep_nodes.per_node > 1)
      exchange.push_back({first, true, C::AllToAll, TpStyle::Exposed, Group::EpNode, ctx.moe.node, exchange.size() == 1});
  }
  std::vector<TpComm> plan = exchange;
  if (s.etp > 1) {
    plan.push_back({first, true, C::AllGather, TpStyle::Exposed, Group::ExpertTp, gather});
    plan.push_back({last, false, C::ReduceScatter, TpStyle::Exposed, Group::ExpertTp, gather});
  }
  for (TpComm c : exchange) {   // and back
    c.kernel = last;
    c.before = false;
    plan.push_back(c);
  }
  return plan;
}

// Context parallelism's exchange of keys and values around the attention core (training.cp_comm): ring attention
// as a ring all-gather pipelined with the core in cp chunks (TpStyle::Ring: cp - 1 blocks computed while the next
// arrives, the last after), backward passing the blocks' gradients with them (twice the bytes); or the whole
// sequence's K and V gathered before the core and, backward, their gradients reduce-scattered after it.
// PyTorch's context parallelism (torchtitan's) gathers K and V again for the backward (a rotater per SDPA call:
// torch/distributed/tensor/experimental/_attention.py, _AllGatherRotater) and passes their gradients, accumulated
// in fp32, around the ring by all-to-all step by step under the blocks' backward (twice the bytes again).
std::vector<TpComm> cp_plan(Pass pass, const Context& ctx) {
  using K = KernelClass;
  using C = CollectiveKind;
  const Bytes kv = ctx.cp_kv;
  const bool backward = pass == Pass::Backward;
  if (ctx.t.cp_comm == CpComm::P2p)
    return {{K::FlashAttention, true, C::AllGather, TpStyle::Ring, Group::Cp, backward ? kv * 2.0 : kv}};
  std::vector<TpComm> plan{{K::FlashAttention, true, C::AllGather, TpStyle::Exposed, Group::Cp, kv}};
  if (!backward) return plan;
  if (ctx.t.framework == Framework::Torchtitan)
    plan.push_back({K::FlashAttention, true, C::AllGather, TpStyle::Ring, Group::Cp, kv * 2.0});
  else
    plan.push_back({K::FlashAttention, false, C::ReduceScatter, TpStyle::Exposed, Group::Cp, kv});
  return plan;
}

// LoRA's adapters under tensor parallelism (Megatron-Bridge's ParallelLinearAdapter, peft/utils.py, and the
// Megatron-Core layers it builds them from: tensor_parallel/layers.py), every collective on the compute stream:
// forward, a column-parallel layer's A gathers its rank-wide output (gather_output) and, with sequence parallelism
// under TP comm overlap, first gathers the layer's input again (TE then cannot hand the adapter its gathered
// norm output); a row-parallel layer's A all-reduces its rank-wide output and B gathers its h-wide one. Backward,
// each B all-reduces the gradient of its replicated rank-wide input; the column A reduces its input's gradient
// (all-reduce, or reduce-scatter where it gathered the input); the row B first gathers its output's gradient
// under sequence parallelism (the backward of its scatter to the sequence shards).
std::vector<TpComm> lora_plan(Pass pass, const Context& ctx) {
  using K = KernelClass;
  using C = CollectiveKind;
  const Bytes full = ctx.activation;
  const Bytes narrow = ctx.activation * (static_cast<double>(ctx.t.lora.rank) / ctx.w.model.hidden);
  const bool sp = ctx.sharding.sequence_parallel;
  const bool regather = sp && ctx.t.tp_comm_overlap;
  const auto exposed = [](K k, bool before, C c, Bytes b) { return TpComm{k, before, c, TpStyle::Exposed, Group::Tp, b}; };
  std::vector<TpComm> plan;
  if (pass != Pass::Backward) {
    if (regather) plan.push_back(exposed(K::LoraColumnA, true, C::AllGather, full));
    plan.push_back(exposed(K::LoraColumnA, false, C::AllGather, narrow));
    plan.push_back(exposed(K::LoraRowA, false, C::AllReduce, narrow));
    plan.push_back(exposed(K::LoraRowB, false, C::AllGather, full));
    return plan;
  }
  plan.push_back(exposed(K::LoraColumnB, false, C::AllReduce, narrow));
  if (!sp) plan.push_back(exposed(K::LoraColumnA, false, C::AllReduce, full));
  if (regather) plan.push_back(exposed(K::LoraColumnA, false, C::ReduceScatter, full));
  if (sp) plan.push_back(exposed(K::LoraRowB, true, C::AllGather, full));
  plan.push_back(exposed(K::LoraRowB, false, C::AllReduce, narrow));
  return plan;
}

}  // namespace

// The collectives of a layer pass, in the order its kernels meet them: TP's, an MoE layer's exchange, context
// parallelism's keys and values. Each is bound to a kernel class (TpComm::kernel) and runs where the pass has that
// kernel, so recomputation reruns the collectives of what it recomputes: full, the layer's forward with all of
// them; selective, those of its modules (the MLP's or the shared experts' TP collectives, the MoE layer's
// exchange, context parallelism's around the attention core) and none for the norms, the experts' activation or
// MLA's up projections; op, the all-gathers and all-reduces of the matmuls it reruns.
std::vector<TpComm> StageBuilder::comm_plan(int layer, Pass pass) const {
  const Pass as = pass == Pass::Recompute ? Pass::Forward : pass;
  std::vector<TpComm> plan;
  if (ctx_.sharding.tp > 1) plan = tp_plan(as, ctx_.t);
  if (ctx_.sharding.tp > 1 && ctx_.t.lora.on()) {
    const auto lora = lora_plan(as, ctx_);
    plan.insert(plan.end(), lora.begin(), lora.end());
  }
  // torchtitan's per-op checkpointing keeps the reduce-scatters' outputs (its save list), so rerunning the output
  // projection replays no reduce-scatter; the all-gathers and all-reduces it recomputes.
  if (pass == Pass::Recompute && ctx_.t.recompute == Recompute::Op)
    std::erase_if(plan, [](const TpComm& c) { return c.kind == CollectiveKind::ReduceScatter; });
  if (ctx_.w.model.moe_layer(layer)) {
    const auto moe = moe_plan(as, ctx_);
    plan.insert(plan.end(), moe.begin(), moe.end());
  }
  if (ctx_.sharding.cp > 1) {
    const auto cp = cp_plan(as, ctx_);
    plan.insert(plan.end(), cp.begin(), cp.end());
  }
  return plan;
}

Seconds StageBuilder::time_of(const Kernel& k) {
  const GemmShape none{};
  const GemmShape& g = k.gemm.value_or(none);
  const GemmShape& wg = k.weight_gemm.value_or(none);
  const AttentionShape a = k.attention.value_or(AttentionShape{0, 0, 0, false});
  const TimeKey key{static_cast<double>(k.kind), static_cast<double>(k.pass), k.flops.value(), k.bytes.value(), g.m,
                    g.n, g.k, g.batch, wg.m, wg.n, wg.k, a.batch_heads, a.seq, a.head_dim,
                    (a.causal ? 1.0 : 0.0) + (a.flash2 ? 2.0 : 0.0),
                    k.precision ? static_cast<double>(*k.precision) : -1.0, k.gemm ? 1.0 : 0.0,
                    static_cast<double>(k.launches), k.load, k.transposed.value()};
  auto [it, added] = times_.emplace(key, Seconds(0));
  if (added) it->second = kernel_time(k, ctx_.gpu, ctx_.t.precision);
  return it->second;
}

Deps StageBuilder::compute(const std::vector<Kernel>& kernels, Scope scope, Pass pass, int layer,
                                         int mb, Deps deps) {
  if (kernels.empty()) return deps;
  if (ctx_.granularity == Granularity::Layer) {
    ComputeOp op{scope, std::nullopt, pass, layer, mb, total_flops(kernels), total_bytes(kernels), Seconds(0), Seconds(0)};
    for (const Kernel& k : kernels) {
      const Seconds t = time_of(k);
      op.duration += t;
      op.memory_time += streaming_time(k, t);
    }
    return {add(op, std::move(deps))};
  }
  Index last = 0;
  for (const Kernel& k : kernels) {
    const Seconds t = time_of(k);
    last = add(ComputeOp{scope, k.kind, pass, layer, mb, k.flops, k.bytes, t, streaming_time(k, t)}, deps);
    deps.clear();
  }
  return {last};
}

Index StageBuilder::tp_collective(CollectiveKind kind, Bytes bytes, const Pending& p, Deps deps) {
  const auto purpose = ctx_.sharding.sequence_parallel ? CommPurpose::SequenceParallel : CommPurpose::TensorParallel;
  return collective(kind, Group::Tp, bytes, purpose, p.layer, p.mb, std::move(deps));
}

Index StageBuilder::exposed_collective(const TpComm& c, const Pending& p, Deps deps) {
  if (c.group == Group::Tp) return tp_collective(c.kind, c.bytes.value() > 0 ? c.bytes : ctx_.activation, p, std::move(deps));
  const CommPurpose purpose = c.group == Group::Cp ? CommPurpose::ContextParallel : CommPurpose::ExpertParallel;
  return collective(c.kind, c.group, c.bytes, purpose, p.layer, p.mb, std::move(deps));
}

std::optional<Index> StageBuilder::flush(Pending& p) {
  std::optional<Index> op;
  const auto pass = pass_index(p.pass);
  const LayerWork& work = ctx_.work(p.layer);
  const auto& kernels = work.kernels[pass];
  const auto& times = work.times[pass];
  if (!p.kernels.empty() && ctx_.granularity == Granularity::Layer) {
    ComputeOp c{Scope::Layer, std::nullopt, p.pass, p.layer, p.mb, FlopCount(0), Bytes(0), Seconds(0), Seconds(0)};
    for (const std::uint32_t i : p.kernels) {
      c.flops += kernels[i].flops;
      c.bytes += kernels[i].bytes;
      c.duration += times[i];
      c.memory_time += streaming_time(kernels[i], times[i]);
    }
    op = add(c, std::move(p.deps));
  }
  if (ctx_.granularity == Granularity::Kernel)
    for (const std::uint32_t i : p.kernels) {
      const Kernel& k = kernels[i];
      op = add(ComputeOp{Scope::Layer, k.kind, p.pass, p.layer, p.mb, k.flops, k.bytes, times[i], streaming_time(k, times[i])},
               std::move(p.deps));
      p.deps.clear();
    }
  if (op) p.deps = {*op};
  // Each collective after the one before it, or beside it (with_previous: both from the same point, the next
  // waiting for both).
  Deps from = p.deps;
  Deps ends = p.deps;
  for (const TpComm& c : p.comms) {
    if (!c.with_previous) {
      from = ends;
      ends.clear();
    }
    ends.push_back(exposed_collective(c, p, from));
  }
  p.deps = ends;
  p.kernels.clear();
  p.comms.clear();
  return op;
}

// The overlapped schedules of TpStyle, each as few ops as give its end time exactly (one op per chunk would give
// the same end, at several times the events):
//   ring:      C = the all-gather (tp - 1 steps of 1/tp each); G_main = tp - 1 GEMM chunks, from the start (the
//              first on the local shard, each next one's shard arriving while the previous computes); G_last the
//              last chunk, after C. End: max((tp - 1) g, (tp - 1) c) + g, g and c a chunk's compute and step.
//              Backward: the data-gradient GEMM so, then the weight gradient on the gathered input.
//   pipelined: G_first = one of kTpSplits chunks; R_main = the reduce-scatter of the first kTpSplits - 1 chunks'
//              outputs after it, G_rest the other chunks beside it; R_last the last chunk's after G_rest (and
//              R_main, on the one communicator). End: max(G + r, g + kTpSplits r).
//   bulk:      [A = the input's all-gather, with sequence parallelism] beside D = the data-gradient GEMM; R = its
//              collective after D (and A, on the one communicator), beside W = the weight-gradient GEMM (after
//              A). End: max(A, D) + max(R, W).
void StageBuilder::overlapped(Pending& p, const Kernel& k, const TpComm& c, std::optional<std::size_t> module,
                              std::vector<ModuleReady>* grads_ready) {
  const auto run = [&](const std::vector<Kernel>& ks, Deps deps) {
    return compute(ks, Scope::Layer, p.pass, p.layer, p.mb, std::move(deps));
  };
  const Bytes b = ctx_.activation;
  const int tp = ctx_.sharding.tp;
  std::optional<Index> ready;
  switch (c.style) {
    case TpStyle::Ring: {   // TP's all-gather before a GEMM, or context parallelism's KV ring around attention
      const bool backward = k.pass == Pass::Backward && k.weight_gemm.has_value();
      const auto [data, weight] = backward ? gradient_halves(k) : std::pair<Kernel, Kernel>{k, k};
      const int parts = c.group == Group::Cp ? ctx_.sharding.cp : tp;
      const Kernel chunk = row_chunk(data, parts);
      const Index gathered = exposed_collective(c, p, p.deps);
      run(std::vector<Kernel>(static_cast<std::size_t>(parts - 1), chunk), p.deps);
      p.deps = run({chunk}, {gathered});
      if (backward) p.deps = run({weight}, std::move(p.deps));
      ready = p.deps.front();
      break;
    }
    case TpStyle::Pipelined: {
      const Kernel chunk = row_chunk(k, kTpSplits);
      const auto first = run({chunk}, p.deps);
      tp_collective(CollectiveKind::ReduceScatter, b * ((kTpSplits - 1.0) / kTpSplits), p, first);
      const auto rest = run(std::vector<Kernel>(kTpSplits - 1, chunk), first);
      p.deps = {rest.front(), tp_collective(CollectiveKind::ReduceScatter, b / kTpSplits, p, rest)};
      ready = rest.front();
      break;
    }
    case TpStyle::Bulk: {
      if (!k.weight_gemm) {   // a frozen weight (LoRA): no weight gradient, so no input to gather and nothing beside R
        const auto d = run({k}, p.deps);
        p.deps = {tp_collective(c.kind, b, p, d)};
        ready = d.front();
        break;
      }
      const auto [data, weight] = gradient_halves(k);
      Deps gate;
      if (ctx_.sharding.sequence_parallel) gate.push_back(tp_collective(CollectiveKind::AllGather, b, p, p.deps));
      const auto d = run({data}, p.deps);
      const Index reduced = tp_collective(c.kind, b, p, d);
      gate.append(d.begin(), d.end());
      const auto w = run({weight}, std::move(gate));
      p.deps = {w.front(), reduced};
      ready = w.front();
      break;
    }
    case TpStyle::Exposed: DTSIM_ASSERT(false, "an exposed collective is not overlapped");
  }
  if (module && grads_ready != nullptr) grads_ready->push_back({*module, *ready});
}

// `grads_ready`, when given (backward passes): for each linear module (LayerWork::modules), the op after which its weight gradients
// exist, in the order the backward produces them: the projection's and the MLP's right after their weight GEMMs,
// Q K V's with the norms' and biases' at the end of the pass (after its TP collectives, which the first norm's
// backward waits for). Gradient buckets can so fill while the layer's backward still runs.
// At layer granularity the kernels between two breaks (an overlapped GEMM, a module's gradients) are one op, the
// exposed collectives among them after it: they are all on the critical path, so the pass ends as when each sits
// where it runs.
Deps StageBuilder::build_pass(int layer, int mb, Pass pass, Deps deps,
                                            std::vector<ModuleReady>* grads_ready) {
  const LayerWork& work = ctx_.work(layer);
  const auto& kernels = work.kernels[pass_index(pass)];
  const std::vector<TpComm> plan = comm_plan(layer, pass);
  const bool fine = ctx_.granularity == Granularity::Kernel;
  // The host's issue of the pass, from when the pass may start; what follows the pass waits for it (below).
  std::optional<Index> host;
  if (const Seconds h = work.host[pass_index(pass)]; h.value() > 0) host = add(HostOp{pass, layer, mb, h}, deps);
  Pending p{layer, mb, pass, std::move(deps), {}, {}};
  for (std::uint32_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    std::vector<const TpComm*> before, after;
    const TpComm* overlapping = nullptr;
    for (const TpComm& c : plan) {
      if (c.kernel != k.kind) continue;
      if (c.style != TpStyle::Exposed) overlapping = &c;
      else (c.before ? before : after).push_back(&c);
    }
    // A module other than the first (Q K V, norms, router) whose weight GEMM `k` is: its gradients are ready
    // after `k`.
    std::optional<std::size_t> module;
    if (grads_ready != nullptr)
      for (std::size_t m = 1; m < work.modules.size(); ++m)
        if (work.modules[m].after == k.kind) module = m;
    if (overlapping != nullptr) {   // the exposed collectives before it first, those after it after
      for (const TpComm* c : before) p.comms.push_back(*c);
      flush(p);
      overlapped(p, k, *overlapping, module, grads_ready);
      for (const TpComm* c : after) p.comms.push_back(*c);
      if (!after.empty()) flush(p);
      continue;
    }
    // An MoE layer's token exchange blocks the compute stream (Megatron-Core runs it there): the layer's op is
    // split around it even at layer granularity, so that no other op's compute runs while the tokens travel.
    const auto blocking = [](const std::vector<const TpComm*>& cs) {
      return std::ranges::any_of(cs, [](const TpComm* c) { return c->group != Group::Tp; });
    };
    if (!before.empty()) {
      const bool split = fine || blocking(before);
      if (split) flush(p);
      for (const TpComm* c : before) p.comms.push_back(*c);
      if (split) flush(p);
    }
    p.kernels.push_back(i);
    for (const TpComm* c : after) p.comms.push_back(*c);
    if (!fine && !module && !blocking(after)) continue;
    const std::optional<Index> op = flush(p);
    if (module) grads_ready->push_back({*module, *op});
  }
  flush(p);
  // The pass ends when both its ops and its host's issue of them have: max(its GPU time, the host's), at layer and
  // kernel granularity alike. After the ops' ends, so that deps.front() stays the pass's own last op.
  if (host) p.deps.push_back(*host);
  if (grads_ready != nullptr) {
    grads_ready->push_back({0, p.deps.front()});
    DTSIM_ASSERT(grads_ready->size() == work.modules.size(), "a layer's backward missed a module's gradients");
  }
  return p.deps;
}

Deps StageBuilder::layer_pass(int layer, int mb, Pass pass, Deps deps,
                                            std::vector<ModuleReady>* grads_ready) {
  if (!ctx_.reuse_passes) return build_pass(layer, mb, pass, std::move(deps), grads_ready);
  const std::array<std::size_t, 4> key{ctx_.w.model.moe_layer(layer) ? 1u : 0u, pass_index(pass),
                                       grads_ready != nullptr ? 1u : 0u, deps.size()};
  auto it = passes_.find(key);
  if (it == passes_.end()) {   // built once, on the caller's deps as placeholders, and taken back out of ops_
    const std::size_t first = ops_.size();
    DTSIM_ASSERT(first < kCallerDep / 2, "a stage's op indices stay below the marker of a caller's dep");
    Deps placeholders;
    for (std::size_t j = 0; j < deps.size(); ++j) placeholders.push_back(kCallerDep + static_cast<Index>(j));
    std::vector<ModuleReady> ready;
    PassTemplate t;
    const auto relative = [&](Index i) {
      if (i >= kCallerDep) return i;
      DTSIM_ASSERT(i >= first, "a layer pass waits only on its own ops and its caller's deps");
      return static_cast<Index>(i - first);
    };
    for (const Index e : build_pass(layer, mb, pass, std::move(placeholders), grads_ready ? &ready : nullptr))
      t.ends.push_back(relative(e));
    for (ModuleReady r : ready) t.ready.push_back({r.module, relative(r.op)});
    for (std::size_t i = first; i < ops_.size(); ++i) {
      for (Index& d : ops_[i].deps) d = relative(d);
      t.ops.push_back(std::move(ops_[i]));
    }
    ops_.resize(first);
    it = passes_.emplace(key, std::move(t)).first;
  }
  const PassTemplate& t = it->second;
  const auto base = static_cast<Index>(ops_.size());
  const auto absolute = [&](Index i) { return i >= kCallerDep ? deps[i - kCallerDep] : base + i; };
  for (const Op& o : t.ops) {
    Op& op = ops_.emplace_back(o);
    for (Index& d : op.deps) d = absolute(d);
    std::visit([&](auto& body) {
      if constexpr (requires { body.layer; body.micro_batch; }) {
        body.layer = layer;
        body.micro_batch = mb;
      }
    }, op.body);
  }
  if (grads_ready != nullptr)
    for (const ModuleReady& r : t.ready) grads_ready->push_back({r.module, absolute(r.op)});
  Deps ends;
  ends.reserve(t.ends.size());
  for (const Index e : t.ends) ends.push_back(absolute(e));
  return ends;
}

}  // namespace dtsim::workloads::detail
