// The parallel plan (a scenario's `parallelism` section), its checks, and rank placement.
//
//   rank = coordinate along the innermost axis + size(inner) * (next axis) + ...
//   order tp-dp-pp (Megatron-LM's default): TP peers are consecutive ranks (one node), then the data-parallel
//   replicas, pipeline stages outermost.
//
//        pp stage 0                 pp stage 1
//   dp0: [r0 r1 .. r7]  (tp)   dp0: [r16 .. r23]
//   dp1: [r8 .. r15]           dp1: [r24 .. r31]
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/training.hpp"

namespace dtsim::workloads {

enum class Schedule { OneFOneB, Gpipe };   // 1F1B becomes interleaved 1F1B when vpp > 1
// PyTorch FSDP (FSDP2's fully_shard, parallelism.fsdp): none; full, every layer's parameters, gradients and
// optimizer states sharded over the data-parallel group (ZeRO-3's memory), gathered a layer at a time before its
// forward and again before its backward, its gradients reduce-scattered when its backward ends; hybrid (HSDP),
// the same within each node's data-parallel ranks, the shards' gradients then all-reduced across the nodes.
enum class Fsdp { None, Full, Hybrid };
std::string_view to_string(Fsdp f);
std::optional<Fsdp> parse_fsdp(std::string_view name);
inline constexpr std::string_view kFsdpNames = "none, full, hybrid";
enum class Axis { Tp, Dp, Pp };

std::string_view to_string(Schedule s);
std::optional<Schedule> parse_schedule(std::string_view name);
inline constexpr std::string_view kScheduleNames = "1f1b, gpipe";
// "tp-dp-pp" <-> axes, innermost first.
std::string order_name(const std::array<Axis, 3>& order);
std::optional<std::array<Axis, 3>> parse_order(std::string_view name);
inline constexpr std::string_view kOrderNames = "a permutation of tp, dp, pp joined by '-', innermost first: tp-dp-pp, tp-pp-dp, ...";

struct ParallelPlan {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int vpp = 1;                              // model chunks per pipeline rank (interleaved 1F1B when > 1)
  Schedule schedule = Schedule::OneFOneB;
  std::vector<int> layers_per_stage;        // empty = as even as possible; else pp * vpp entries (virtual stages)
  // Micro-batches of each data-parallel replica (cluster.groups: a replica on faster GPUs takes more); empty =
  // micro_batches() each; else dp entries summing to dp x micro_batches().
  std::vector<int> replica_micro_batches;
  std::array<Axis, 3> order{Axis::Tp, Axis::Dp, Axis::Pp};
  int zero = 0;                             // ZeRO stage 0..3 over the data-parallel group
  bool scatter_gather = true;               // Megatron's pipeline send optimisation: each TP rank sends 1/tp
  // MoE layers (Megatron-Core's expert grid): a stage's tp x dp ranks regrouped as etp x ep x edp, etp innermost,
  // then ep (--expert-model-parallel-size), then the expert data-parallel replicas. Each rank holds experts / ep
  // routed experts, each split etp ways (--expert-tensor-parallel-size; 0 = tp, Megatron's default).
  int ep = 1;
  int etp = 0;
  // Context parallelism (Megatron-Core's --context-parallel-size): each sequence split over cp ranks, which hold the
  // same weights: they sit inside the data-parallel axis (cp consecutive coordinates of it, Megatron's tp-cp-dp
  // order), whose dp x cp ranks reduce the gradients and shard ZeRO's states together. `dp` counts the replicas
  // that take different sequences.
  int cp = 1;
  Fsdp fsdp = Fsdp::None;   // with full or hybrid, zero is 3
  int shard_ranks = 0;      // hybrid FSDP: the data-parallel ranks of one node, which share the shards (0: all)

  [[nodiscard]] int gpus() const { return tp * pp * dp * cp; }
  [[nodiscard]] int dp_ranks() const { return dp * cp; }   // the gradients' and ZeRO's data-parallel group
  [[nodiscard]] int zero_ranks() const { return shard_ranks > 0 ? shard_ranks : dp_ranks(); }   // ZeRO's shards
  [[nodiscard]] int expert_tp() const { return etp > 0 ? etp : tp; }
  [[nodiscard]] int expert_dp() const { return tp * dp_ranks() / (expert_tp() * ep); }
  // FSDP with pipeline parallelism, as PyTorch's pipelining runs it (torchtitan): a stage's layers are not
  // resharded after their forward (torchtitan/parallelisms/parallelize_llama.py at 9dec370a, apply_fsdp:
  // reshard_after_forward = False with PP, "to avoid per-microbatch all-gathers"), and their gradients accumulate
  // unsharded until the stage's last backward, after which every unit's reduce-scatter is issued
  // (torch/distributed/pipelining/stage.py, backward_maybe_with_nosync: no gradient sync before the last backward,
  // then each FSDP param group's post_backward). So each layer is gathered once a step and reduced once, and the
  // stage holds its weights and gradients whole.
  [[nodiscard]] bool fsdp_gathers_once() const { return fsdp != Fsdp::None && pp > 1; }
};

// Everything the generators and the memory plan need about one job.
struct Workload {
  ModelSpec model;
  std::optional<TrainingSpec> training;     // exactly one of training and inference
  std::optional<InferenceSpec> inference;
  ParallelPlan plan;
  int gpus_per_node = 0;                    // the cluster's (rank r on node r / gpus_per_node); 0 = unknown, one node
};

// The nodes an expert-parallel group spans and its ranks on each (DeepEP's RDMA and NVLink stages): {1, ep}
// without a node size.
struct EpNodes {
  int nodes = 1;
  int per_node = 1;
};
EpNodes ep_nodes(const Workload& w);
// Whether every expert-parallel group spans `n.nodes` nodes with `n.per_node` of its ranks on each, as the first.
bool every_ep_group_alike(const Workload& w, EpNodes n);

// Layers of each virtual stage (pp * vpp entries, virtual stage v = chunk * pp + stage): the plan's list, or as
// even as possible with the remainder on the middle stages, so the first and last stages (which also hold the
// embedding and the logits) get the fewer layers.
std::vector<int> stage_layers(const ParallelPlan& plan, int layers);

// The first layer of each virtual stage, given each one's layers (stage_layers).
std::vector<int> first_layers(const std::vector<int>& layers);

// Micro-batches per data-parallel replica per step: global_batch / (dp * micro_batch).
int micro_batches(const ParallelPlan& plan, const TrainingSpec& training);

// tp against the model's widths: it divides heads, kv_heads and ffn_hidden, and pp x vpp stages hold its layers.
void check_model_split(const ModelSpec& m, const ParallelPlan& p);

// What keeps training.recompute: op (torchtitan's per-op checkpointing of a Llama block) off `w`'s model and
// attention: "experts", "a plain MLP, not a gated one", ...; nullptr where it applies. check_plan refuses op there
// and plan search does not offer it.
const char* per_op_recompute_misfit(const Workload& w);

// The data-parallel ranks of rank 0's group on its node (Workload::gpus_per_node; all of them when unknown):
// ZeRO++'s secondary partition and first all-to-all.
int node_dp_ranks(const Workload& w);

// The workload that runs `w`'s draft model (speculative decoding): its model and tensor parallelism (draft_tp),
// the target's pipeline, precisions and batch (a draft on one GPU of each TP group: tp 1, dp the target's tp x dp);
// its passes run inside the target's iteration (InferenceSpec::inside_iteration).
Workload draft_workload(const Workload& w);

// Every check of a plan against its model, training and cluster: tp divides heads and kv_heads, the degrees'
// product equals `gpus`, pp * vpp <= layers, micro_batch divides global_batch / dp, ...
// A serving plan's expert tensor-parallel size: etp when set, else what is left of tp over ep (tp / ep: the
// experts spread over the GPUs that serve the attention, ep x etp = tp), or of tp x dp over ep under attention data
// parallelism; check_plan refuses any other split.
int serving_expert_tp(const ParallelPlan& p);
// Attention data parallelism (serving a mixture of experts): the dp replicas each serve their own sequences'
// attention, and the experts spread over all of their GPUs (ep x etp = tp x dp, dp > 1), as vLLM's
// --data-parallel-size with --enable-expert-parallel and SGLang's --enable-dp-attention run it. Each MoE layer's
// tokens then cross the replicas to their experts and back (two all-to-alls over ep). false otherwise, replicas
// independent.
bool attention_data_parallel(const Workload& w);

// Throws InputError naming the scenario key ("parallelism.tp") and what is allowed.
void check_plan(const Workload& w, int gpus);

// The axes of the MoE layers' expert grid (ParallelPlan::ep).
enum class ExpertAxis { Etp, Ep, Edp };

struct RankCoord {
  int tp = 0;
  int dp = 0;
  int pp = 0;
  friend bool operator==(const RankCoord&, const RankCoord&) = default;
};

// Rank <-> coordinates under the plan's order.
class Placement {
 public:
  explicit Placement(const ParallelPlan& plan);
  [[nodiscard]] int rank(RankCoord c) const;
  [[nodiscard]] RankCoord coord(int rank) const;
  [[nodiscard]] int size(Axis a) const;
  [[nodiscard]] int ranks() const { return tp_ * dp_ * pp_; }
  // The ranks that differ from `rank` only along `axis` (including `rank`), in coordinate order.
  [[nodiscard]] std::vector<int> group(int rank, Axis axis) const;
  // The same on the expert grid: the stage's ranks numbered tp + tp_size x dp, read as etp + etp_size x (ep +
  // ep_size x edp).
  [[nodiscard]] std::vector<int> expert_group(int rank, ExpertAxis axis) const;
  // The context-parallel peers of `rank`: the cp consecutive data-parallel coordinates its own is among.
  [[nodiscard]] std::vector<int> cp_group(int rank) const;
  // Hybrid sharding: the `shard` consecutive data-parallel coordinates `rank`'s is among (its shard group), or
  // those at its place in every such block (its replicas).
  [[nodiscard]] std::vector<int> shard_group(int rank, int shard) const;
  [[nodiscard]] std::vector<int> replica_group(int rank, int shard) const;

 private:
  int tp_, dp_, pp_;
  int etp_ = 1, ep_ = 1, cp_ = 1;
  std::array<Axis, 3> order_;
  std::array<int, 3> stride_{};   // indexed by Axis
};

}  // namespace dtsim::workloads
