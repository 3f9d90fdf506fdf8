// Private to the step generator (step_graph.cpp, stage_builder.cpp, stage_builder_layers.cpp): what every
// stage's generator shares (Context), how a layer pass talks to its TP peers (TpComm), and the StageBuilder that
// emits one stage's ops.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "topology/catalog.hpp"
#include "workloads/kernels.hpp"
#include "workloads/schedule.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::workloads::detail {

using Index = std::uint32_t;

// A linear module's gradients: ready after its weight GEMM `after` in the backward (nullopt: at the end of the
// layer's backward, with the norms'), `bytes` on one GPU, reduced over the data-parallel group, or over the
// expert data-parallel group when `expert`.
struct ModuleGrads {
  std::optional<KernelClass> after;
  Bytes bytes;
  bool expert = false;
};

// One kind of layer (dense, or MoE): its kernels per pass (Forward, Backward, Recompute), each one's duration on
// the GPU, and its gradients by module.
struct LayerWork {
  std::array<std::vector<Kernel>, 3> kernels;
  std::array<std::vector<Seconds>, 3> times;
  std::array<Seconds, 3> host{};   // per pass, the host's time to issue it (HostOp; zero: none)
  std::vector<ModuleGrads> modules;
  Bytes grads;          // the dense parameters' gradients on one GPU, grad dtype
  Bytes expert_grads;   // the routed experts'
  // ZeRO-3's gathers of the layer's weights on one GPU, weight dtype: the dense part per gathered unit (DeepSpeed:
  // each linear module; FSDP: the layer) over the data-parallel group, and the routed experts' over their own
  // data-parallel group (FSDP2 with expert parallelism: torchtitan's edp mesh).
  std::vector<Bytes> gathered;
  Bytes expert_gathered;
};

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
  Bytes embedding_grads;          // the embedding's gradients on one GPU (first stage)
  Bytes logits_grads;             // the untied output layer's gradients on one GPU (last stage)
  bool zero3_prefetch = false;    // ZeRO-3 gathers the next layer while this one computes (memory_plan.hpp)
  // Every layer of a kind does the same work: built once per kind, as are the first stage's embedding and the
  // last stage's logits (Forward, Backward).
  std::array<LayerWork, 2> layer_work;   // dense, MoE
  std::array<std::vector<Kernel>, 2> embedding_kernels;
  std::array<std::vector<Kernel>, 2> logits_kernels;
  MoeTraffic moe;                 // an MoE layer's token exchange (when the model has experts)
  Bytes cp_kv;                    // context parallelism: the whole sequence's K and V on one GPU (its TP share)
  EpNodes ep_nodes;               // the nodes an expert-parallel group spans
  bool reuse_passes = true;       // GenerateOptions::reuse_passes
  // Activation offloading (TrainingSpec::offload_layers): what an offloaded layer's copy to the host (forward) or
  // back (backward) takes beyond the next layer's compute it runs beside, per pass (Forward, Backward).
  std::array<Seconds, 2> offload_wait{};
  int node_dp = 0;                // ZeRO++'s hpZ and qgZ: the data-parallel ranks of one node (node_dp_ranks)
  // ZeRO-3's other gathered units, weight dtype, on one GPU: the embedding (first stage) and the final norm with the
  // output layer (last stage; with tied embeddings and one stage, the embedding's unit holds it).
  Bytes embedding_weights{};
  Bytes head_weights{};

  [[nodiscard]] const LayerWork& work(int layer) const { return layer_work[w.model.moe_layer(layer) ? 1 : 0]; }
  // FSDP without expert parallelism: the routed experts are sharded over the data-parallel group like the rest of
  // the layer, one unit gathered and reduce-scattered in one collective each.
  [[nodiscard]] bool experts_in_unit() const {
    return w.plan.fsdp != Fsdp::None && w.plan.ep == 1 && w.plan.expert_tp() == w.plan.tp;
  }
  // FSDP under pipeline parallelism keeps a stage's parameters gathered for the whole step (plan.hpp,
  // ParallelPlan::fsdp_gathers_once): each layer gathered at its first forward, its gradients reduced after the
  // last backward.
  [[nodiscard]] bool gathers_once() const { return w.plan.fsdp_gathers_once(); }
};

inline std::size_t pass_index(Pass p) { return static_cast<std::size_t>(p); }

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

// An MoE layer's token exchange travels the same way (exposed, on the expert groups, `bytes` each).
struct TpComm {
  KernelClass kernel;
  bool before;
  CollectiveKind kind;
  TpStyle style;
  Group group = Group::Tp;
  Bytes bytes{};   // 0: the layer's activation
  bool with_previous = false;   // starts with the collective before it, on its own communicator (DeepEP's stages)
};

// The ops of one stage, and the state that crosses schedule steps (the open gradient bucket).
class StageBuilder {
 public:
  StageBuilder(const Context& ctx, int stage) : ctx_(ctx), stage_(stage) {}

  void start();
  void forward(const PipeStep& step);
  void backward(const PipeStep& step, bool last_micro_batch);
  // One schedule step: its forward, or its backward (the last micro-batch's closing the gradient buckets).
  void step(const PipeStep& s, int micro_batches);
  // Two schedule steps of different micro-batches, a forward and a backward in either order, played as one with
  // their MoE token exchanges overlapped (training.overlap_moe_expert_parallel_comm): each step's ops cut after
  // every exchange, the two steps' pieces taken in turn.
  void combined(const PipeStep& first, const PipeStep& second, int micro_batches);
  void finish(double stage_params, double stage_expert_params);
  std::vector<Op> take() { return std::move(ops_); }

 private:
  Index add(OpBody body, Deps deps = {}) {
    ops_.push_back(Op{std::move(body), std::move(deps)});
    return static_cast<Index>(ops_.size() - 1);
  }
  Index collective(CollectiveKind kind, Group group, Bytes bytes, CommPurpose purpose, int layer, int mb,
                   Deps deps) {
    return add(CollectiveOp{kind, group, bytes, purpose, layer, mb}, std::move(deps));
  }
  Deps compute(const std::vector<Kernel>& kernels, Scope scope, Pass pass, int layer, int mb,
                             Deps deps);
  struct ModuleReady {
    std::size_t module;   // index into the layer's LayerWork::modules
    Index op;             // the op after which its gradients exist
  };
  // An offloaded layer's copy to or from the host where it outlasts the pass beside it (Context::offload_wait).
  Deps offload_wait(int layer, int mb, Pass pass, Deps deps);
  // A layer's pass after `deps`: its ops, and the ops it ends with (front: its own last op). Every layer of a kind
  // passes the same way, so a pass is built once per (kind, pass, per-module gradients, number of deps) by
  // build_pass and copied after that, with its layer, micro-batch and indices set (most of a step's ops are
  // these copies).
  Deps layer_pass(int layer, int mb, Pass pass, Deps deps,
                                std::vector<ModuleReady>* grads_ready = nullptr);
  Deps build_pass(int layer, int mb, Pass pass, Deps deps,
                                std::vector<ModuleReady>* grads_ready);
  // A pass as built: an index below kCallerDep is an op of the pass, counted from its first; kCallerDep + j is
  // the caller's j-th dep.
  static constexpr Index kCallerDep = Index{1} << 31;
  struct PassTemplate {
    std::vector<Op> ops;
    Deps ends;
    std::vector<ModuleReady> ready;
  };
  std::map<std::array<std::size_t, 4>, PassTemplate> passes_;
  // A layer pass being built: the kernels not yet emitted (one op at layer granularity) and the exposed TP
  // collectives that follow them.
  struct Pending {
    int layer = -1;
    int mb = -1;
    Pass pass = Pass::Forward;
    Deps deps;
    std::vector<std::uint32_t> kernels;   // indices into the layer's LayerWork::kernels of the pass
    std::vector<TpComm> comms;
  };
  std::optional<Index> flush(Pending& p);   // the compute op emitted, if any; p.deps ends after its collectives
  void overlapped(Pending& p, const Kernel& k, const TpComm& c, std::optional<std::size_t> module,
                  std::vector<ModuleReady>* grads_ready);
  Index tp_collective(CollectiveKind kind, Bytes bytes, const Pending& p, Deps deps);
  Index exposed_collective(const TpComm& c, const Pending& p, Deps deps);
  [[nodiscard]] std::vector<TpComm> comm_plan(int layer, Pass pass) const;
  Deps receive(const PipeStep& step, int from_virtual, Deps deps);
  // The sends the stage's next pass waits for (their exchange blocks it: overlaps_p2p false), taken once.
  Deps take_blocking_sends() { return std::exchange(blocking_sends_, {}); }
  void send(const PipeStep& step, int to_virtual, Deps deps);
  Deps zero3_gather(int layer, int mb, Deps deps, Pass pass);
  Deps unit_gather(Bytes weights, int unit, int mb, Deps deps, Pass pass);
  struct GatherRoute {
    Group group = Group::Dp;
    double wire = 1.0;   // bytes sent per weight byte
  };
  [[nodiscard]] std::optional<GatherRoute> gather_route(Pass pass) const;
  [[nodiscard]] Deps gather_gate() const;
  Deps backward_gather(int layer, int mb, Deps deps, bool more);
  Deps gather_modules(int layer, int mb, Deps gate, Pass pass);
  Deps dequantized(int layer, int mb, Pass pass, Deps deps);
  Index quantized_reduce(Bytes bytes, int layer, int mb, Deps deps);
  void interleave(std::size_t from, std::size_t second);
  void add_grads(Bytes bytes, bool expert, int layer, int mb, Index after);
  void flush_bucket(bool expert, int layer, int mb);
  void fsdp_unit_done(int layer, int mb);
  std::optional<Index> reduce_grads(Bytes bytes, bool expert, int layer, int mb, Deps deps);

  [[nodiscard]] int virtual_stage(const PipeStep& s) const { return s.chunk * ctx_.w.plan.pp + stage_; }
  [[nodiscard]] int stage_of(int virtual_stage) const { return virtual_stage % ctx_.w.plan.pp; }
  [[nodiscard]] int chunk_of(int virtual_stage) const { return virtual_stage / ctx_.w.plan.pp; }

  const Context& ctx_;
  int stage_;
  std::vector<Op> ops_;
  struct Bucket {
    Bytes bytes;                       // gradient bytes waiting for the next reduction
    Deps deps;
  };
  std::array<Bucket, 2> buckets_;      // dense parameters' (over dp), routed experts' (over the expert dp group)
  // FSDP under pipeline parallelism: a virtual stage's gradients, per unit, reduced once its last backward ends.
  struct Deferred {
    Bytes bytes;
    bool expert = false;
    int layer = -1;
  };
  std::vector<Deferred> deferred_;
  Deps dp_comms_;        // every data-parallel reduction (the optimizer waits for them)
  Deps last_backward_;   // the final op of the last backward step
  Deps blocking_sends_;  // sends whose exchange holds the stage until they arrive
  Deps gather_window_;   // each layer pass's last op (ZeRO-3 prefetch gates on it)
  std::map<int, Deps> prefetched_;   // ZeRO-3's backward: a layer's gathers, issued a layer ahead
  // overlap_param_gather: the all-gather of the bucket holding each unit's parameters (a layer, kEmbeddingUnit,
  // kLogitsUnit), until the unit's first forward has waited for it.
  std::map<int, Deps> param_gates_;
  static constexpr int kEmbeddingUnit = -1;
  static constexpr int kLogitsUnit = -2;
  Deps gated(int unit, Deps deps);
  // kernel_time, memoized: a stage times the same few kernels thousands of times.
  Seconds time_of(const Kernel& k);
  using TimeKey = std::array<double, 20>;
  std::map<TimeKey, Seconds> times_;
};

}  // namespace dtsim::workloads::detail
