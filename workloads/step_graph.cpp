// generate_step: a training step's ops, one list per pipeline stage.
//
//   stage s, for each step of schedule_order(plan, m, s):
//     forward (micro-batch i, chunk c):   [recv act (+TP all-gather)] [embedding] { [ZeRO-3 gather] layer TP-comm }*
//                                         [logits] [send act]
//     backward:                           [recv grad (+gather)] [logits'] { [gather] [recompute] layer' TP-comm
//                                         [DP bucket] }* (reverse) [embedding'] [send grad]
//   then: tied-embedding all-reduce (first and last stage), optimizer step, ZeRO-1/2 parameter all-gather.
#include "workloads/step_graph.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"

namespace dtsim::workloads {
namespace {

using Index = std::uint32_t;

// What every stage's generator shares.
struct Context {
  const Workload& w;
  const TrainingSpec& t;
  const topology::GpuSpec& gpu;
  Granularity granularity;
  Sharding sharding;
  std::vector<int> layers;        // per virtual stage
  std::vector<int> first_layer;   // per virtual stage
  int virtual_stages = 0;
  Bytes activation;               // one micro-batch's hidden states: b x s x h in the compute dtype
  std::vector<Bytes> layer_modules;  // one layer's weights on one GPU, weight dtype, per linear module (ZeRO-3)
  Bytes layer_grads;              // one layer's gradients on one GPU, grad dtype
  std::vector<Bytes> module_grads;  // the same per linear module, in layer_modules' order
  Bytes embedding_grads;          // the embedding's gradients on one GPU (first stage)
  Bytes logits_grads;             // the untied output layer's gradients on one GPU (last stage)
  bool zero3_prefetch = false;    // ZeRO-3 gathers the next layer while this one computes (memory_plan.hpp)
  // Every layer's kernels are the same: built once per pass (Forward, Backward, Recompute), as are the first
  // stage's embedding and the last stage's logits (Forward, Backward).
  std::array<std::vector<Kernel>, 3> layer_kernels;
  std::array<std::vector<Seconds>, 3> layer_times;   // each of those kernels' duration on the GPU
  std::array<std::vector<Kernel>, 2> embedding_kernels;
  std::array<std::vector<Kernel>, 2> logits_kernels;
};

std::size_t pass_index(Pass p) { return static_cast<std::size_t>(p); }

// Where a layer pass talks to its TP peers (Megatron's f and g operators), and how. Without sequence parallelism,
// two all-reduces (forward: after the row-parallel projection and MLP down; backward: after the column-parallel
// Q K V and MLP up); with it an all-gather before each column-parallel GEMM and a reduce-scatter after each
// row-parallel one (backward: mirrored). Each moves the layer's b x s x h activations.
//   exposed   on the critical path, between the kernels around it (Megatron-LM 2021);
//   ring      an all-gather pipelined with the GEMM it feeds (the GEMM in tp chunks, each computing while the next
//             arrives: Transformer Engine's ring exchange under --tp-comm-overlap);
//   pipelined a reduce-scatter pipelined with the GEMM it follows, in kTpSplits chunks (TE's split pipeline);
//   bulk      a column-parallel layer's backward: the data-gradient GEMM, then its collective beside the
//             weight-gradient GEMM; with sequence parallelism the layer's input all-gathered again beside the
//             data-gradient GEMM for the weight gradient (Korthikanti et al. 4.2.2, Megatron-Core).
enum class TpStyle { Exposed, Ring, Pipelined, Bulk };

struct TpComm {
  KernelClass kernel;
  bool before;
  CollectiveKind kind;
  TpStyle style;
};

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
  data.weight_gemm = weight.weight_gemm = std::nullopt;
  weight.gemm = k.weight_gemm;
  return {data, weight};
}

// The distributed optimizer's parameter all-gather moved to the next step's forward (training.overlap_param_gather).
bool overlaps_param_gather(const Workload& w) { return w.training->overlap_param_gather && w.plan.zero == 1; }

// The ops of one stage, and the state that crosses schedule steps (the open gradient bucket).
class StageBuilder {
 public:
  StageBuilder(const Context& ctx, int stage) : ctx_(ctx), stage_(stage) {}

  void start();
  void forward(const PipeStep& step);
  void backward(const PipeStep& step, bool last_micro_batch);
  void finish(double stage_params);
  std::vector<Op> take() { return std::move(ops_); }

 private:
  Index add(OpBody body, std::vector<Index> deps = {}) {
    ops_.push_back(Op{std::move(body), std::move(deps)});
    return static_cast<Index>(ops_.size() - 1);
  }
  Index collective(CollectiveKind kind, Group group, Bytes bytes, CommPurpose purpose, int layer, int mb,
                   std::vector<Index> deps) {
    return add(CollectiveOp{kind, group, bytes, purpose, layer, mb}, std::move(deps));
  }
  std::vector<Index> compute(const std::vector<Kernel>& kernels, Scope scope, Pass pass, int layer, int mb,
                             std::vector<Index> deps);
  struct ModuleReady {
    std::size_t module;   // index into Context::module_grads
    Index op;             // the op after which its gradients exist
  };
  std::vector<Index> layer_pass(int layer, int mb, Pass pass, std::vector<Index> deps,
                                std::vector<ModuleReady>* grads_ready = nullptr);
  // A layer pass being built: the kernels not yet emitted (one op at layer granularity) and the exposed TP
  // collectives that follow them.
  struct Pending {
    int layer = -1;
    int mb = -1;
    Pass pass = Pass::Forward;
    std::vector<Index> deps;
    std::vector<std::uint32_t> kernels;   // indices into Context::layer_kernels of the pass
    std::vector<CollectiveKind> comms;
  };
  std::optional<Index> flush(Pending& p);   // the compute op emitted, if any; p.deps ends after its collectives
  void overlapped(Pending& p, const Kernel& k, const TpComm& c, std::optional<std::size_t> module,
                  std::vector<ModuleReady>* grads_ready);
  Index tp_collective(CollectiveKind kind, Bytes bytes, const Pending& p, std::vector<Index> deps);
  std::vector<Index> receive(const PipeStep& step, int from_virtual);
  void send(const PipeStep& step, int to_virtual, std::vector<Index> deps);
  std::vector<Index> zero3_gather(int layer, int mb, std::vector<Index> deps);
  std::vector<Index> backward_gather(int layer, int mb, std::vector<Index> deps, bool more);
  std::vector<Index> gather_modules(int layer, int mb, std::vector<Index> gate);
  void add_grads(Bytes bytes, int layer, int mb, Index after);
  void flush_bucket(int layer, int mb);

  [[nodiscard]] int virtual_stage(const PipeStep& s) const { return s.chunk * ctx_.w.plan.pp + stage_; }
  [[nodiscard]] int stage_of(int virtual_stage) const { return virtual_stage % ctx_.w.plan.pp; }
  [[nodiscard]] int chunk_of(int virtual_stage) const { return virtual_stage / ctx_.w.plan.pp; }

  const Context& ctx_;
  int stage_;
  std::vector<Op> ops_;
  Bytes bucket_;                       // gradient bytes waiting for the next data-parallel reduction
  std::vector<Index> bucket_deps_;
  std::vector<Index> dp_comms_;        // every data-parallel reduction (the optimizer waits for them)
  std::vector<Index> last_backward_;   // the final op of the last backward step
  std::vector<Index> gather_window_;   // each layer pass's last op (ZeRO-3 prefetch gates on it)
  std::map<int, std::vector<Index>> prefetched_;   // ZeRO-3's backward: a layer's gathers, issued a layer ahead
  // overlap_param_gather: the all-gather of the bucket holding each unit's parameters (a layer, kEmbeddingUnit,
  // kLogitsUnit), until the unit's first forward has waited for it.
  std::map<int, Index> param_gates_;
  static constexpr int kEmbeddingUnit = -1;
  static constexpr int kLogitsUnit = -2;
  std::vector<Index> gated(int unit, std::vector<Index> deps);
  // kernel_time, memoized: a stage times the same few kernels thousands of times.
  Seconds time_of(const Kernel& k);
  using TimeKey = std::array<double, 16>;
  std::map<TimeKey, Seconds> times_;
};

Seconds StageBuilder::time_of(const Kernel& k) {
  const GemmShape none{};
  const GemmShape& g = k.gemm.value_or(none);
  const GemmShape& wg = k.weight_gemm.value_or(none);
  const AttentionShape a = k.attention.value_or(AttentionShape{0, 0, 0, false});
  const TimeKey key{static_cast<double>(k.kind), static_cast<double>(k.pass), k.flops.value(), k.bytes.value(), g.m,
                    g.n, g.k, g.batch, wg.m, wg.n, wg.k, a.batch_heads, a.seq, a.head_dim + (a.causal ? 0.5 : 0.0),
                    k.precision ? static_cast<double>(*k.precision) : -1.0, k.gemm ? 1.0 : 0.0};
  auto [it, added] = times_.emplace(key, Seconds(0));
  if (added) it->second = kernel_time(k, ctx_.gpu, ctx_.t.precision);
  return it->second;
}

// The part of `time` (a kernel's) that streams through HBM: all of it for a streaming kernel, else none.
Seconds streaming(const Kernel& k, Seconds time) {
  const Work w = work_of(k.kind).work;
  return w == Work::Stream || w == Work::AttentionStream ? time : Seconds(0);
}

std::vector<Index> StageBuilder::compute(const std::vector<Kernel>& kernels, Scope scope, Pass pass, int layer,
                                         int mb, std::vector<Index> deps) {
  if (kernels.empty()) return deps;
  if (ctx_.granularity == Granularity::Layer) {
    ComputeOp op{scope, std::nullopt, pass, layer, mb, total_flops(kernels), total_bytes(kernels), Seconds(0), Seconds(0)};
    for (const Kernel& k : kernels) {
      const Seconds t = time_of(k);
      op.duration += t;
      op.memory_time += streaming(k, t);
    }
    return {add(op, std::move(deps))};
  }
  Index last = 0;
  for (const Kernel& k : kernels) {
    const Seconds t = time_of(k);
    last = add(ComputeOp{scope, k.kind, pass, layer, mb, k.flops, k.bytes, t, streaming(k, t)}, deps);
    deps.clear();
  }
  return {last};
}

Index StageBuilder::tp_collective(CollectiveKind kind, Bytes bytes, const Pending& p, std::vector<Index> deps) {
  const auto purpose = ctx_.sharding.sequence_parallel ? CommPurpose::SequenceParallel : CommPurpose::TensorParallel;
  return collective(kind, Group::Tp, bytes, purpose, p.layer, p.mb, std::move(deps));
}

std::optional<Index> StageBuilder::flush(Pending& p) {
  std::optional<Index> op;
  const auto pass = pass_index(p.pass);
  const auto& kernels = ctx_.layer_kernels[pass];
  const auto& times = ctx_.layer_times[pass];
  if (!p.kernels.empty() && ctx_.granularity == Granularity::Layer) {
    ComputeOp c{Scope::Layer, std::nullopt, p.pass, p.layer, p.mb, FlopCount(0), Bytes(0), Seconds(0), Seconds(0)};
    for (const std::uint32_t i : p.kernels) {
      c.flops += kernels[i].flops;
      c.bytes += kernels[i].bytes;
      c.duration += times[i];
      c.memory_time += streaming(kernels[i], times[i]);
    }
    op = add(c, std::move(p.deps));
  }
  if (ctx_.granularity == Granularity::Kernel)
    for (const std::uint32_t i : p.kernels) {
      const Kernel& k = kernels[i];
      op = add(ComputeOp{Scope::Layer, k.kind, p.pass, p.layer, p.mb, k.flops, k.bytes, times[i], streaming(k, times[i])},
               std::move(p.deps));
      p.deps.clear();
    }
  if (op) p.deps = {*op};
  for (const CollectiveKind kind : p.comms) p.deps = {tp_collective(kind, ctx_.activation, p, std::move(p.deps))};
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
  const auto run = [&](const std::vector<Kernel>& ks, std::vector<Index> deps) {
    return compute(ks, Scope::Layer, p.pass, p.layer, p.mb, std::move(deps));
  };
  const Bytes b = ctx_.activation;
  const int tp = ctx_.sharding.tp;
  std::optional<Index> ready;
  switch (c.style) {
    case TpStyle::Ring: {
      const bool backward = k.pass == Pass::Backward;
      const auto [data, weight] = backward ? gradient_halves(k) : std::pair<Kernel, Kernel>{k, k};
      const Kernel chunk = row_chunk(data, tp);
      const Index gathered = tp_collective(CollectiveKind::AllGather, b, p, p.deps);
      run(std::vector<Kernel>(static_cast<std::size_t>(tp - 1), chunk), p.deps);
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
      const auto [data, weight] = gradient_halves(k);
      std::vector<Index> gate;
      if (ctx_.sharding.sequence_parallel) gate.push_back(tp_collective(CollectiveKind::AllGather, b, p, p.deps));
      const auto d = run({data}, p.deps);
      const Index reduced = tp_collective(c.kind, b, p, d);
      gate.insert(gate.end(), d.begin(), d.end());
      const auto w = run({weight}, std::move(gate));
      p.deps = {w.front(), reduced};
      ready = w.front();
      break;
    }
    case TpStyle::Exposed: DTSIM_ASSERT(false, "an exposed collective is not overlapped");
  }
  if (module && grads_ready != nullptr) grads_ready->push_back({*module, *ready});
}

// The linear module (layer_module_parameters' order: Q K V with the norms and biases, projection, MLP up, MLP
// down) whose weights a kernel's GEMM uses; nullopt for kernels without weights.
std::optional<std::size_t> module_of(KernelClass k) {
  switch (k) {
    case KernelClass::QkvGemm: return 0;
    case KernelClass::ProjGemm: return 1;
    case KernelClass::MlpUpGemm: return 2;
    case KernelClass::MlpDownGemm: return 3;
    default: return std::nullopt;
  }
}

// `grads_ready`, when given (backward passes): for each linear module, the op after which its weight gradients
// exist, in the order the backward produces them: the projection's and the MLP's right after their weight GEMMs,
// Q K V's with the norms' and biases' at the end of the pass (after its TP collectives, which the first norm's
// backward waits for). Gradient buckets can so fill while the layer's backward still runs.
// At layer granularity the kernels between two breaks (an overlapped GEMM, a module's gradients) are one op, the
// exposed collectives among them after it: they are all on the critical path, so the pass ends as when each sits
// where it runs.
std::vector<Index> StageBuilder::layer_pass(int layer, int mb, Pass pass, std::vector<Index> deps,
                                            std::vector<ModuleReady>* grads_ready) {
  const auto& kernels = ctx_.layer_kernels[pass_index(pass)];
  // Full recomputation reruns the layer's forward, TP collectives included; selective recomputes only the
  // attention core, which needs no communication.
  const bool talks = ctx_.sharding.tp > 1 && (pass != Pass::Recompute || ctx_.t.recompute == Recompute::Full);
  std::vector<TpComm> plan;
  if (talks) plan = tp_plan(pass == Pass::Recompute ? Pass::Forward : pass, ctx_.t);
  const bool fine = ctx_.granularity == Granularity::Kernel;
  Pending p{layer, mb, pass, std::move(deps), {}, {}};
  for (std::uint32_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    const auto c = std::ranges::find(plan, k.kind, &TpComm::kernel);
    const TpComm* comm = c == plan.end() ? nullptr : &*c;
    // A module other than Q K V whose weight GEMM `k` is: its gradients are ready after `k`.
    std::optional<std::size_t> module = module_of(k.kind);
    if (grads_ready == nullptr || (module && *module == 0)) module.reset();
    if (comm && comm->style != TpStyle::Exposed) {
      flush(p);
      overlapped(p, k, *comm, module, grads_ready);
      continue;
    }
    if (comm && comm->before) {
      if (fine) flush(p);
      p.comms.push_back(comm->kind);
      if (fine) flush(p);
    }
    p.kernels.push_back(i);
    if (comm && !comm->before) p.comms.push_back(comm->kind);
    if (!fine && !module) continue;
    const std::optional<Index> op = flush(p);
    if (module) grads_ready->push_back({*module, *op});
  }
  flush(p);
  if (grads_ready != nullptr) {
    grads_ready->push_back({0, p.deps.front()});
    DTSIM_ASSERT(grads_ready->size() == ctx_.module_grads.size(), "a layer's backward missed a module's gradients");
  }
  return p.deps;
}

// The backward's gathers for `layer`: issued a layer ahead (with the previous layer's, before its reduce-scatters)
// where the framework prefetches ahead and the memory holds it; and, so, those of the next layer (`more`) now.
std::vector<Index> StageBuilder::backward_gather(int layer, int mb, std::vector<Index> deps, bool more) {
  if (auto it = prefetched_.find(layer); it != prefetched_.end()) {
    deps.insert(deps.end(), it->second.begin(), it->second.end());
    prefetched_.erase(it);
  } else {
    deps = zero3_gather(layer, mb, std::move(deps));
  }
  const auto& plan = ctx_.w.plan;
  if (!more || plan.zero < 3 || plan.dp == 1 || !ctx_.zero3_prefetch || !ctx_.t.zero3_prefetch_ahead) return deps;
  // Two layers gathered at once, as zero3_gather's prefetch: this one and the next, once the one after this
  // (the previous in the backward) has finished.
  std::vector<Index> gate;
  if (!gather_window_.empty()) gate.push_back(gather_window_.back());
  prefetched_[layer - 1] = gather_modules(layer - 1, mb, std::move(gate));
  return deps;
}

std::vector<Index> StageBuilder::zero3_gather(int layer, int mb, std::vector<Index> deps) {
  if (ctx_.w.plan.zero < 3 || ctx_.w.plan.dp == 1) return deps;
  // With prefetch, the gather for this layer may start once the compute two layers back has finished (two layers
  // gathered at once); without, once the previous layer's compute has.
  const std::size_t back = ctx_.zero3_prefetch ? 2 : 1;
  std::vector<Index> gate;
  if (gather_window_.size() >= back) gate.push_back(gather_window_[gather_window_.size() - back]);
  for (const Index g : gather_modules(layer, mb, std::move(gate))) deps.push_back(g);
  return deps;
}

// One gather per module, as DeepSpeed's ZeRO-3 fetches parameters per sub-module: each pays the ring's per-step
// latency over the whole data-parallel group.
std::vector<Index> StageBuilder::gather_modules(int layer, int mb, std::vector<Index> gate) {
  std::vector<Index> out;
  for (const Bytes part : ctx_.layer_modules)
    out.push_back(
        collective(CollectiveKind::AllGather, Group::Dp, part, CommPurpose::ZeroParamGather, layer, mb, gate));
  return out;
}

std::vector<Index> StageBuilder::receive(const PipeStep& step, int from_virtual) {
  const auto& plan = ctx_.w.plan;
  const bool shard = ctx_.sharding.sequence_parallel || (plan.scatter_gather && plan.tp > 1);
  const Bytes wire = shard ? ctx_.activation / plan.tp : ctx_.activation;
  const PipeTag tag{step.micro_batch, step.chunk, step.pass};
  const Index r = add(RecvOp{stage_of(from_virtual), wire, tag});
  if (!shard || ctx_.sharding.sequence_parallel) return {r};
  return {collective(CollectiveKind::AllGather, Group::Tp, ctx_.activation, CommPurpose::PipelineGather, -1,
                     step.micro_batch, {r})};
}

void StageBuilder::send(const PipeStep& step, int to_virtual, std::vector<Index> deps) {
  const auto& plan = ctx_.w.plan;
  const bool shard = ctx_.sharding.sequence_parallel || (plan.scatter_gather && plan.tp > 1);
  const Bytes wire = shard ? ctx_.activation / plan.tp : ctx_.activation;
  add(SendOp{stage_of(to_virtual), wire, PipeTag{step.micro_batch, chunk_of(to_virtual), step.pass}}, std::move(deps));
}

void StageBuilder::forward(const PipeStep& step) {
  const int v = virtual_stage(step);
  const int mb = step.micro_batch;
  std::vector<Index> deps;
  if (v > 0) deps = receive(step, v - 1);
  if (v == 0) deps = compute(ctx_.embedding_kernels[0],
                             Scope::Embedding, Pass::Forward, -1, mb, gated(kEmbeddingUnit, std::move(deps)));
  const auto vi = static_cast<std::size_t>(v);
  for (int l = ctx_.first_layer[vi]; l < ctx_.first_layer[vi] + ctx_.layers[vi]; ++l) {
    deps = zero3_gather(l, mb, gated(l, std::move(deps)));
    deps = layer_pass(l, mb, Pass::Forward, std::move(deps));
    gather_window_.push_back(deps.front());
  }
  if (v == ctx_.virtual_stages - 1) {
    compute(ctx_.logits_kernels[0], Scope::Logits,
            Pass::Forward, -1, mb, gated(kLogitsUnit, std::move(deps)));
    return;
  }
  send(step, v + 1, std::move(deps));
}

void StageBuilder::add_grads(Bytes bytes, int layer, int mb, Index after) {
  bucket_ += bytes;
  bucket_deps_ = {after};
  if (ctx_.t.dp_overlap && bucket_ >= ctx_.t.dp_bucket) flush_bucket(layer, mb);
}

// ZeRO 0: all-reduce; ZeRO >= 1: reduce-scatter (each rank keeps its shard of the gradients).
void StageBuilder::flush_bucket(int layer, int mb) {
  if (bucket_.value() <= 0 || ctx_.w.plan.dp == 1) {
    bucket_ = Bytes(0);
    return;
  }
  const auto kind = ctx_.w.plan.zero == 0 ? CollectiveKind::AllReduce : CollectiveKind::ReduceScatter;
  dp_comms_.push_back(collective(kind, Group::Dp, bucket_, CommPurpose::DataParallelGrads, layer, mb, bucket_deps_));
  bucket_ = Bytes(0);
}

void StageBuilder::backward(const PipeStep& step, bool last_micro_batch) {
  const int v = virtual_stage(step);
  const int mb = step.micro_batch;
  // Gradients are reduced once per step after the last micro-batch (ZeRO 0/1), or every micro-batch (ZeRO 2/3).
  const bool reduce = last_micro_batch || ctx_.w.plan.zero >= 2;
  std::vector<Index> deps;
  if (v < ctx_.virtual_stages - 1) deps = receive(step, v + 1);
  if (v == ctx_.virtual_stages - 1) {
    deps = compute(ctx_.logits_kernels[1],
                   Scope::Logits, Pass::Backward, -1, mb, std::move(deps));
    if (reduce && !ctx_.w.model.tied_embeddings) add_grads(ctx_.logits_grads, -1, mb, deps.front());
  }
  const auto vi = static_cast<std::size_t>(v);
  for (int l = ctx_.first_layer[vi] + ctx_.layers[vi] - 1; l >= ctx_.first_layer[vi]; --l) {
    deps = backward_gather(l, mb, std::move(deps), l > ctx_.first_layer[vi]);
    if (ctx_.t.recompute != Recompute::None) deps = layer_pass(l, mb, Pass::Recompute, std::move(deps));
    // With buckets reduced during the backward, each module's gradients join the bucket as the backward produces
    // them, so a bucket can be reduced while the rest of the layer computes.
    const bool per_module = reduce && ctx_.t.dp_overlap && ctx_.w.plan.dp > 1;
    std::vector<ModuleReady> ready;
    deps = layer_pass(l, mb, Pass::Backward, std::move(deps), per_module ? &ready : nullptr);
    gather_window_.push_back(deps.front());
    for (const ModuleReady& r : ready) add_grads(ctx_.module_grads[r.module], l, mb, r.op);
    if (reduce && !per_module) add_grads(ctx_.layer_grads, l, mb, deps.front());
  }
  if (v == 0)
    deps = compute(ctx_.embedding_kernels[1],
                   Scope::Embedding, Pass::Backward, -1, mb, std::move(deps));
  if (v == 0 && reduce) add_grads(ctx_.embedding_grads, -1, mb, deps.front());
  if (reduce && !ctx_.t.dp_overlap && ctx_.w.plan.zero >= 2) flush_bucket(-1, mb);   // after this backward
  if (v > 0) send(step, v - 1, deps);
  last_backward_ = deps;
}

// The end of the step: the last gradient bucket, the tied-embedding reduction between the first and last
// stage, the optimizer step on this rank's shard, and (ZeRO 1/2) the all-gather of the updated weights.
void StageBuilder::finish(double stage_params) {
  flush_bucket(-1, -1);
  const auto& plan = ctx_.w.plan;
  std::vector<Index> before_step = dp_comms_;
  before_step.insert(before_step.end(), last_backward_.begin(), last_backward_.end());
  const bool ends = stage_ == 0 || stage_ == plan.pp - 1;
  if (ctx_.w.model.tied_embeddings && plan.pp > 1 && ends)
    before_step.push_back(collective(CollectiveKind::AllReduce, Group::Embedding, ctx_.embedding_grads,
                                     CommPurpose::EmbeddingGrads, -1, -1, last_backward_));
  const double shard = plan.zero >= 1 ? stage_params / plan.dp : stage_params;
  std::vector<Kernel> step_kernels = step_overhead_kernels(ctx_.t, shard);
  step_kernels.insert(step_kernels.begin() + 1, optimizer_kernel(ctx_.t, shard));   // after the norm, before zeroing
  const Index step = compute(step_kernels, Scope::Optimizer, Pass::Forward, -1, -1, std::move(before_step)).front();
  if ((plan.zero == 1 || plan.zero == 2) && plan.dp > 1 && !overlaps_param_gather(ctx_.w))
    collective(CollectiveKind::AllGather, Group::Dp, Bytes(stage_params * bytes_per_element(ctx_.t.weight_dtype)),
               CommPurpose::ZeroParamGather, -1, -1, {step});
}

std::vector<Index> StageBuilder::gated(int unit, std::vector<Index> deps) {
  const auto it = param_gates_.find(unit);
  if (it == param_gates_.end()) return deps;
  deps.push_back(it->second);
  param_gates_.erase(it);
  return deps;
}

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

// The units of one virtual stage in forward order (the embedding, its layers, the logits), with the parameters
// one GPU holds of each.
std::vector<std::pair<int, double>> forward_units(const Context& ctx, int v) {
  const ModelSpec& m = ctx.w.model;
  const auto vi = static_cast<std::size_t>(v);
  const double tp = ctx.w.plan.tp;
  std::vector<std::pair<int, double>> units;
  if (v == 0) units.emplace_back(-1, embedding_parameters(m) / tp);
  for (int l = ctx.first_layer[vi]; l < ctx.first_layer[vi] + ctx.layers[vi]; ++l)
    units.emplace_back(l, layer_parameters(m) / tp);
  if (v == ctx.virtual_stages - 1) {
    double head = final_norm_parameters(m) + logits_parameters(m);
    if (m.tied_embeddings && ctx.w.plan.pp > 1) head += static_cast<double>(m.vocab) * m.hidden;
    units.emplace_back(-2, head / tp);
  }
  return units;
}

// overlap_param_gather: at the step's start (the previous step's optimizer has just run: in steady state Megatron
// issues these all-gathers then, and every stage at once with align_param_gather), one all-gather per bucket of
// the stage's parameters in forward order, the bucket as the gradients' (dp_bucket, counted in parameters); each
// unit's first forward waits for its own bucket only.
void StageBuilder::start() {
  if (!overlaps_param_gather(ctx_.w) || ctx_.w.plan.dp == 1) return;
  const double bucket = ctx_.t.dp_bucket.value() / bytes_per_element(ctx_.t.grad_dtype);
  const double weight = bytes_per_element(ctx_.t.weight_dtype);
  std::vector<int> members;
  double params = 0;
  const auto gather = [&] {
    if (members.empty()) return;
    const Index ag = collective(CollectiveKind::AllGather, Group::Dp, Bytes(params * weight),
                                CommPurpose::ZeroParamGather, members.front() >= 0 ? members.front() : -1, 0, {});
    for (int u : members) param_gates_[u] = ag;
    members.clear();
    params = 0;
  };
  for (int v = stage_; v < ctx_.virtual_stages; v += ctx_.w.plan.pp)
    for (const auto& [unit, count] : forward_units(ctx_, v)) {
      members.push_back(unit);
      params += count;
      if (params >= bucket) gather();
    }
  gather();
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
    RankClass c{stage, {}, stage_ops(ctx, stage, g.micro_batches)};
    for (int r = 0; r < g.placement.ranks(); ++r)
      if (g.placement.coord(r).pp == stage) c.ranks.push_back(r);
    g.classes.push_back(std::move(c));
  }
  return g;
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
