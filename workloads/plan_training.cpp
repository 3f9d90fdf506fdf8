// check_plan's checks of a training workload's features (plan_checks.hpp): each refusal one InputError naming the
// key, the value and what is allowed.
#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "topology/error.hpp"
#include "workloads/plan_checks.hpp"

namespace dtsim::workloads::detail {
namespace {

// training.overlap_moe_expert_parallel_comm where Megatron-Core runs it: expert parallelism in an MoE model, and
// its combined 1F1B steps, which exist without a pipeline or in the interleaved schedule (with pp > 1 Megatron-Core
// requires virtual stages), and not with full recomputation.
void check_ep_overlap(const Workload& w) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  if (!t.overlap_moe_expert_parallel_comm) return;
  const std::string key = "training.overlap_moe_expert_parallel_comm";
  const auto refuse = [&](const std::string& reason, const std::string& allowed) {
    throw InputError(key, "true", reason, allowed);
  };
  if (!w.model.moe()) refuse("overlaps an MoE layer's token exchange, and the model has no experts:", "false");
  if (p.ep == 1) refuse("overlaps the token exchange of expert parallelism, and parallelism.ep is 1:", "false, or ep > 1");
  if (p.pp > 1 && p.vpp == 1)
    refuse(fmt::format("runs Megatron-Core's combined 1F1B, which with pp {} needs virtual stages (vpp 1):", p.pp),
           "false, or parallelism.vpp > 1");
  if (t.recompute == Recompute::Full)
    refuse("cannot run with training.recompute: full (Megatron-Core refuses it):", "false, or recompute none or selective");
  if (p.fsdp != Fsdp::None)
    refuse("is Megatron-Core's combined 1F1B, and parallelism.fsdp trains as PyTorch FSDP does (torchtitan has no "
           "combined steps):", "false, or no fsdp");
}

// Megatron-Core's layer-level activation offloading: below the layer count, one pipeline stage, no recomputation
// (megatron/core/transformer/transformer_config.py __post_init__), a Megatron-Core framework.
void check_offload(const Workload& w) {
  const TrainingSpec& t = *w.training;
  if (t.offload_layers == 0) return;
  const auto refuse = [&](const std::string& why, const std::string& allowed) {
    throw InputError("training.offload_layers", std::to_string(t.offload_layers), why, allowed);
  };
  if (w.model.kind != ModelKind::Transformer) refuse("offloads a transformer's layers; this model is a layer list:", "0");
  if (!megatron_core_based(t.framework))
    refuse(fmt::format("is Megatron-Core's activation offloading, and training.framework is {}:", to_string(t.framework)),
           "0, or framework megatron-core or nemo");
  if (t.offload_layers >= w.model.layers)
    refuse(fmt::format("offloads at most the model's layers less one ({}):", w.model.layers - 1),
           fmt::format("0 to {}", w.model.layers - 1));
  if (w.plan.pp > 1)
    refuse(fmt::format("runs with one pipeline stage in Megatron-Core, and parallelism.pp is {}:", w.plan.pp), "0, or pp 1");
  if (t.recompute != Recompute::None)
    refuse(fmt::format("does not run with recomputation in Megatron-Core, and training.recompute is {}:",
                       to_string(t.recompute)), "0, or recompute none");
}

void check_recompute_op(const Workload& w) {
  if (w.training->recompute != Recompute::Op) return;
  const char* lacks = per_op_recompute_misfit(w);
  if (lacks == nullptr) return;
  throw InputError("training.recompute", "op",
                   fmt::format("is torchtitan's per-op checkpointing of a Llama block's matmuls, and the model has {}, "
                               "so not",
                               lacks),
                   "none, selective or full on this model");
}

// Every module of training.recompute_modules recomputes something of the model (Megatron-Core refuses
// mla_up_proj without MLA).
void check_recompute_modules(const Workload& w) {
  const TrainingSpec& t = *w.training;
  if (t.recompute != Recompute::Selective) return;
  const ModelSpec& m = w.model;
  bool dense_layer = false;
  for (int l = 0; l < m.layers && !dense_layer; ++l) dense_layer = !m.moe_layer(l);
  const auto needs = [&](RecomputeModule module, bool present, const char* what) {
    if ((t.recompute_modules & bit(module)) != 0 && !present)
      throw InputError("training.recompute_modules", std::string(to_string(module)),
                       fmt::format("recomputes nothing on this model ({}):", what),
                       "the modules the model has, or remove it");
  };
  needs(RecomputeModule::MlaUpProj, m.mla(), "no multi-head latent attention");
  needs(RecomputeModule::Moe, m.moe(), "no experts");
  needs(RecomputeModule::MoeAct, m.moe(), "no experts");
  needs(RecomputeModule::SharedExperts, m.moe() && m.shared_experts > 0, "no shared experts");
  needs(RecomputeModule::Mlp, dense_layer, "no dense layer: every MLP is an MoE layer");
}

// LoRA on what dtsim models it for: a dense transformer without multi-head latent attention (the adapters of
// experts and of MLA's low-rank projections are not modelled), weights not sharded (ZeRO-3 or FSDP would gather
// frozen weights every micro-batch, a layout the frameworks' LoRA recipes do not use), no activation offloading.
void check_lora(const Workload& w) {
  const TrainingSpec& t = *w.training;
  if (!t.lora.on()) return;
  const auto refuse = [&](const std::string& why, const std::string& allowed) {
    throw InputError("training.lora", fmt::format("rank {}", t.lora.rank), why, allowed);
  };
  if (w.model.kind != ModelKind::Transformer) refuse("adapts a transformer's linear layers; this model is a layer list:", "no lora");
  if (w.model.moe()) refuse("is not modelled on a model with experts:", "no lora, or a dense model");
  if (w.model.mla()) refuse("is not modelled on multi-head latent attention (model.kv_lora_rank):", "no lora, or a model without MLA");
  if (w.plan.zero >= 3 || w.plan.fsdp != Fsdp::None)
    refuse("keeps the frozen weights whole on each GPU, and the plan shards them (zero 3 or fsdp):", "zero 0 to 2 and no fsdp");
  if (t.offload_layers > 0) refuse("is not modelled with activation offloading:", "training.offload_layers: 0");
  if (w.plan.tp > 1 && t.lora.rank % w.plan.tp != 0)
    refuse(fmt::format("is split over tp {} (a column-parallel adapter's rank, as Megatron-Core's ColumnParallelLinear "
                       "splits its output), and it does not divide it:", w.plan.tp),
           fmt::format("a multiple of {}", w.plan.tp));
  if (t.recompute == Recompute::Op) refuse("is not modelled with per-op recomputation (torchtitan's, which has no LoRA):", "recompute none, selective or full");
  if (t.lora.rank > w.model.hidden)
    refuse(fmt::format("is above model.hidden {} (a low-rank adapter narrower than the layer):", w.model.hidden),
           fmt::format("1 to {}", w.model.hidden));
}

// ZeRO++ rewrites ZeRO-3's collectives: it needs them (zero 3, DeepSpeed's sharding rather than FSDP's).
void check_zero_pp(const Workload& w) {
  const TrainingSpec& t = *w.training;
  if (!t.zero_pp.any()) return;
  if (w.plan.zero != 3 || w.plan.fsdp != Fsdp::None)
    throw InputError("training.zero_pp", fmt::format("{{qwz: {}, hpz: {}, qgz: {}}}", t.zero_pp.qwz, t.zero_pp.hpz, t.zero_pp.qgz),
                     fmt::format("rewrites DeepSpeed's ZeRO-3 collectives, and the plan is zero {}{}:", w.plan.zero,
                                 w.plan.fsdp != Fsdp::None ? " with fsdp" : ""),
                     "parallelism.zero: 3 without fsdp, or no zero_pp");
  if (!t.zero_pp.hpz && !t.zero_pp.qgz) return;
  // hpZ's secondary partition and qgZ's first all-to-all run over each node's data-parallel ranks, which must cut
  // the data-parallel group into equal blocks, each on one node (as DeepSpeed's contiguous hpZ groups are).
  const int node = node_dp_ranks(w);
  const Placement place(w.plan);
  bool whole = w.plan.dp_ranks() % node == 0;
  for (int r = 0; whole && w.gpus_per_node > 0 && r < place.ranks(); ++r)
    for (const int peer : place.shard_group(r, node))
      whole = whole && peer / w.gpus_per_node == r / w.gpus_per_node;
  if (!whole)
    throw InputError("training.zero_pp", t.zero_pp.hpz ? "hpz" : "qgz",
                     fmt::format("runs over each node's data-parallel ranks ({} on the first node), and they do not "
                                 "cut the {} data-parallel ranks into whole nodes, so not",
                                 node, w.plan.dp_ranks()),
                     "a placement whose data-parallel groups fill whole nodes, or qwz alone");
}

// Uneven micro-batches per replica: dp entries, each at least one (a multiple of pp when interleaved, as every
// replica's count must be), together as many as the even split gives.
void check_replica_micro_batches(const ParallelPlan& p, int m) {
  const auto& list = p.replica_micro_batches;
  if (list.empty()) return;
  constexpr const char* kKey = "parallelism.replica_micro_batches";
  if (list.size() != static_cast<std::size_t>(p.dp))
    fail(kKey, static_cast<long long>(list.size()), "has the wrong number of entries:", fmt::format("dp = {} entries", p.dp));
  for (int n : list) {
    if (n < 1) fail(kKey, n, "holds a replica with no micro-batch:", "entries >= 1");
    if (p.vpp > 1 && n % p.pp != 0)
      fail(kKey, n, fmt::format("holds a count that interleaved 1F1B cannot run (not a multiple of pp {}):", p.pp),
           "multiples of pp");
  }
  const long long sum = std::accumulate(list.begin(), list.end(), 0LL);
  if (sum != static_cast<long long>(m) * p.dp)
    fail(kKey, sum, "sums to",
         fmt::format("a sum of global_batch / micro_batch = {} (every replica's micro-batches together)",
                     static_cast<long long>(m) * p.dp));
}

}  // namespace

void check_training(const Workload& w) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  check_ep_overlap(w);
  check_recompute_op(w);
  check_offload(w);
  check_recompute_modules(w);
  check_lora(w);
  check_zero_pp(w);
  if (t.global_batch % (p.dp * t.micro_batch) != 0)
    fail("training.micro_batch", t.micro_batch,
         fmt::format("x dp {} does not divide training.global_batch {}: micro_batch", p.dp, t.global_batch),
         "micro_batch x dp dividing global_batch");
  const int m = t.global_batch / (p.dp * t.micro_batch);
  // The step graph holds every micro-batch's ops: 100,000 a replica take 0.8 s and 211 MB for GPT 1.7B on one GPU;
  // a billion never finished.
  constexpr int kMostMicroBatches = 100'000;
  if (m > kMostMicroBatches)
    fail("training.global_batch", t.global_batch,
         fmt::format("gives {} micro-batches a data-parallel replica (dp {}, micro_batch {}), more than dtsim simulates:",
                     m, p.dp, t.micro_batch),
         fmt::format("at most {} micro-batches a replica: a smaller batch, or a larger micro_batch or dp",
                     kMostMicroBatches));
  check_replica_micro_batches(p, m);
  if (p.vpp > 1 && m % p.pp != 0)
    fail("parallelism.vpp", p.vpp,
         fmt::format("(interleaved 1F1B) needs micro-batches per replica ({}) divisible by pp {}; vpp", m, p.pp),
         "1, or a batch whose micro-batch count is a multiple of pp");
  if (t.sequence_parallel && p.tp == 1)
    fail("training.sequence_parallel", 1, "needs tensor parallelism (tp > 1): sequence_parallel", "false when tp is 1");
  if (t.sequence_parallel && w.model.seq_length % p.tp != 0)
    fail("training.sequence_parallel", 1, fmt::format("needs tp {} to divide model.seq_length {}:", p.tp, w.model.seq_length),
         "false, or a tp dividing seq_length");
  if (p.zero >= 2 && p.pp > 1 && p.fsdp == Fsdp::None)
    fail("parallelism.zero", p.zero, "(gradient/parameter sharding) cannot be combined with pp > 1 (as in DeepSpeed): zero",
         "0 or 1 with pipeline parallelism");
  if (p.fsdp == Fsdp::Hybrid && (p.shard_ranks < 1 || p.dp_ranks() % p.shard_ranks != 0))
    throw InputError("parallelism.fsdp", "hybrid",
                     fmt::format("needs the data-parallel ranks of a node ({}) to divide the {} of the job, so not",
                                 p.shard_ranks, p.dp_ranks()),
                     "full, or a placement whose data-parallel groups fill whole nodes");
}

}  // namespace dtsim::workloads::detail
