// The StepGraph: one training step as plain data, the seam between "what happens" (workloads/) and "how long
// it takes" (sim/). Generators build it; engines play it; neither calls the other.
//
// Ranks that do the same work (one pipeline stage in every data-parallel replica, the TP peers of a stage) form
// a rank class and share ONE op list; groups and peers are stored relative to the rank (its TP group, the stage
// it sends to), so a 16,384-GPU plan holds pp op lists, not 16,384.
//
// Execution rules an engine follows, per rank:
//  - an op starts once every op in `deps` (indices into the same list) has finished;
//  - compute ops run one at a time, in list order (one compute stream);
//  - communication ops run beside compute; those on the same group run in list order (one communicator each),
//    and the k-th collective on a group in one member's list is the k-th in every member's list;
//  - a send is posted when its deps finish and never waits for the receiver; a recv finishes when the matching
//    send (same tag, from `peer_stage`) has arrived;
//  - host ops run one at a time, in list order, on the rank's host thread (beside the compute stream): the
//    host's issue of a layer pass that the GPU cannot run ahead of (HostOp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "topology/units.hpp"
#include "workloads/op_deps.hpp"
#include "workloads/kernels.hpp"
#include "workloads/plan.hpp"

namespace dtsim::workloads {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };
// Which ranks a collective spans, relative to the rank running it.
enum class Group {
  Tp,          // the TP peers of this rank's stage and replica
  Dp,          // the same TP rank and stage in every data-parallel replica
  Embedding,   // first and last stage, same TP rank and replica (tied embedding gradients)
  Ep,          // MoE: the expert-parallel peers (Placement::expert_group, ExpertAxis::Ep)
  ExpertTp,    // MoE: the expert tensor-parallel peers
  ExpertDp,    // MoE: the replicas of this rank's experts (their gradients' reduction)
  EpNode,      // MoE, DeepEP: the expert-parallel peers on this rank's node (Workload::gpus_per_node)
  EpRail,      // MoE, DeepEP: the expert-parallel peers at this rank's place on each node the group spans
  Cp,          // the context-parallel peers (Placement::cp_group)
  Shard,       // the data-parallel peers on this rank's node: hybrid FSDP's shard group, ZeRO++'s secondary partition
  Replica,     // the ranks at this rank's place in the data-parallel group on the other nodes (its shard's replicas)
};
inline constexpr std::size_t kGroupCount = 11;   // the Groups, for tables indexed by one
static_assert(static_cast<std::size_t>(Group::Replica) + 1 == kGroupCount, "kGroupCount counts every Group");
// Why the communication happens: for the breakdown and the trace.
enum class CommPurpose { TensorParallel, SequenceParallel, PipelineGather, DataParallelGrads, ZeroParamGather,
                         EmbeddingGrads, ExpertParallel, ExpertGrads, ContextParallel };
// What a compute op covers: a layer (or one kernel of it, when fine), the embedding, the logits, the optimizer.
enum class Scope { Layer, Embedding, Logits, Optimizer };
enum class Granularity { Layer, Kernel };   // Layer: one op per layer pass per micro-batch (default)

std::string_view to_string(CollectiveKind k);
std::string_view to_string(Group g);
std::string_view to_string(CommPurpose p);
std::string_view to_string(Scope s);
std::optional<CollectiveKind> parse_collective_kind(std::string_view name);

struct ComputeOp {
  Scope scope = Scope::Layer;
  std::optional<KernelClass> kernel;   // set when the op is one kernel (Granularity::Kernel)
  Pass pass = Pass::Forward;
  int layer = -1;                      // global layer index; -1 outside layers
  int micro_batch = -1;                // -1 for the optimizer step
  FlopCount flops;
  Bytes bytes;
  Seconds duration;                    // on the scenario's GPU, from the roofline compute model
  Seconds memory_time{};               // of `duration`, the time of its streaming kernels (bound by HBM, not SMs)
  friend bool operator==(const ComputeOp&, const ComputeOp&) = default;
};

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Group group = Group::Tp;
  Bytes bytes;                         // the buffer size as nccl-tests counts it (the whole buffer, per rank)
  CommPurpose purpose = CommPurpose::TensorParallel;
  int layer = -1;
  int micro_batch = -1;
  friend bool operator==(const CollectiveOp&, const CollectiveOp&) = default;
};

// Matches a send with its recv: activations go forward (pass Forward), gradients backward (pass Backward).
struct PipeTag {
  int micro_batch = 0;
  int chunk = 0;                       // the model chunk (virtual stage group) the data belongs to
  Pass direction = Pass::Forward;
  friend bool operator==(const PipeTag&, const PipeTag&) = default;
};

struct SendOp {
  int peer_stage = 0;                  // pipeline stage of the receiver (same TP rank and replica)
  Bytes bytes;
  PipeTag tag;
  friend bool operator==(const SendOp&, const SendOp&) = default;
};

struct RecvOp {
  int peer_stage = 0;                  // pipeline stage of the sender
  Bytes bytes;
  PipeTag tag;
  friend bool operator==(const RecvOp&, const RecvOp&) = default;
};

// The host's work to issue one layer pass, where the host cannot run ahead of the GPU: an MoE layer's token
// dispatcher copies the routing's counts to the host (the all-to-all's split sizes, the grouped GEMM's per-expert
// rows, DeepEP's received tokens), so every layer pass starts with the host idle and the GPU waits for kernels
// the host has not issued yet (workloads/host_model.hpp). What follows the pass waits for it as for the pass's own
// last op: a pass lasts max(its GPU time, its host time). It occupies no GPU resource.
struct HostOp {
  Pass pass = Pass::Forward;
  int layer = -1;
  int micro_batch = -1;
  Seconds duration;
  friend bool operator==(const HostOp&, const HostOp&) = default;
};

using OpBody = std::variant<ComputeOp, CollectiveOp, SendOp, RecvOp, HostOp>;

struct Op {
  OpBody body;
  Deps deps;                           // indices of earlier ops in the same list
  friend bool operator==(const Op&, const Op&) = default;
};

struct RankClass {
  int stage = 0;                       // pipeline stage of every rank in the class
  std::vector<int> ranks;              // ascending
  std::vector<Op> ops;
  // Replicas that run different micro-batch counts (a mixed cluster's uneven batch shares, sim/drivers/mixed.hpp)
  // form cohorts: a class per stage and cohort, sends and recvs within a cohort, and what crosses replicas (the Dp
  // group's collectives) waits for every cohort. One cohort (0) otherwise.
  int cohort = 0;
};

// The class of every rank of `placement` on pipeline stage `stage`, running `ops`.
RankClass stage_class(const Placement& placement, int stage, std::vector<Op> ops);

struct StepGraph {
  Workload workload;
  Placement placement;
  Granularity granularity = Granularity::Layer;
  int micro_batches = 0;               // per data-parallel replica (with cohorts: cohort 0's)
  std::vector<RankClass> classes;      // one per pipeline stage, in stage order (with cohorts: per stage, then cohort)
  int node_dp = 0;                     // ZeRO++: the data-parallel ranks of one node (Group::Shard's size; 0: unused)

  [[nodiscard]] const RankClass& class_of(int rank) const;
  [[nodiscard]] int cohorts() const;
  // Concrete ranks of `group` as seen from `rank`.
  [[nodiscard]] std::vector<int> group_ranks(int rank, Group group) const;
  [[nodiscard]] int peer_rank(int rank, int peer_stage) const;
};

struct GenerateOptions {
  Granularity granularity = Granularity::Layer;
  // Every layer of a kind passes the same way: each pass is built once per stage and copied (false: every pass
  // built afresh, the check that copying changes nothing).
  bool reuse_passes = true;
};

// One training step of `w` (which must hold `training` and pass check_plan) with compute durations on `gpu`.
StepGraph generate_step(const Workload& w, const topology::GpuSpec& gpu, const GenerateOptions& options = {});

// `g` without its host ops: what waited for one waits for what the host op waited for (the step as if the host
// always ran ahead of the GPU).
StepGraph without_host_ops(StepGraph g);

// FLOPs per step summed over every rank's ops (each class's ops counted once per rank in it), excluding
// (model) or including (hardware) the recompute pass.
FlopCount model_flops(const StepGraph& g);
FlopCount hardware_flops(const StepGraph& g);

// Op counts and bytes per collective kind, per rank class; as text.
std::string summary(const StepGraph& g);
// Graphviz DOT of every class's ops and dependencies, with send/recv edges between classes; for small graphs
// (throws InputError when the graph holds more than `max_ops` ops).
std::string to_dot(const StepGraph& g, std::size_t max_ops = 5000);

}  // namespace dtsim::workloads
