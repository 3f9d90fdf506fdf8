#include "workloads/plan.hpp"

#include <algorithm>
#include <map>
#include <fmt/format.h>
#include <numeric>

#include "topology/error.hpp"
#include "topology/name_table.hpp"

namespace dtsim::workloads {
namespace {

constexpr topology::NameTable<Fsdp, 3> kFsdps{{{Fsdp::None, "none"}, {Fsdp::Full, "full"}, {Fsdp::Hybrid, "hybrid"}}};

[[noreturn]] void fail(const std::string& key, long long value, const std::string& reason, const std::string& allowed) {
  throw InputError(key, std::to_string(value), reason, allowed);
}

void check_degrees(const ParallelPlan& p, int gpus) {
  if (p.gpus() == gpus) return;
  if (p.cp > 1)
    fail("parallelism.dp", p.dp, fmt::format("tp {} x pp {} x cp {} x dp {} = {} GPUs, but the cluster has {}; dp", p.tp,
                                             p.pp, p.cp, p.dp, p.gpus(), gpus),
         fmt::format("degrees whose product is {}", gpus));
  fail("parallelism.dp", p.dp, fmt::format("tp {} x pp {} x dp {} = {} GPUs, but the cluster has {}; dp", p.tp, p.pp,
                                           p.dp, p.gpus(), gpus),
       fmt::format("degrees whose product is {}", gpus));
}

// Context parallelism as Megatron-Core runs it: the sequence in 2 x cp chunks (each rank a chunk from either end,
// so that causal attention's work is balanced), each chunk split again over tp with sequence parallelism; the
// attention core fused (Transformer Engine's context-parallel attention); training only.
void check_context(const Workload& w) {
  const ParallelPlan& p = w.plan;
  if (p.cp == 1) return;
  if (w.inference) fail("parallelism.cp", p.cp, "splits a training sequence; serving", "1 under inference");
  const int chunks = 2 * p.cp * (w.training->sequence_parallel ? p.tp : 1);
  if (w.model.seq_length % chunks != 0)
    fail("parallelism.cp", p.cp,
         fmt::format("does not divide model.seq_length {} into {} equal chunks (2 x cp{}): cp", w.model.seq_length,
                     chunks, w.training->sequence_parallel ? " x tp" : ""),
         "a cp whose 2 x cp (x tp with sequence parallelism) divides seq_length");
  if (!fused(w.training->attention))
    throw InputError("training.attention", std::string(to_string(w.training->attention)),
                     "cannot run context parallelism (its attention core is a fused kernel), so not",
                     "flash or flash2 with parallelism.cp > 1");
}


// Attention data parallelism as dtsim models it: one GPU a replica (tp 1, each GPU its own sequences' attention,
// as vLLM's DP+EP and SGLang's DP attention run DeepSeek), whole experts (etp 1), one stage, and a static batch:
// a stream's replicas would have to step together at every MoE layer, which its scheduler does not model, and
// disaggregated pools would each need their own grid.
void check_attention_data_parallel(const Workload& w) {
  const ParallelPlan& p = w.plan;
  const std::string what = fmt::format("with attention data parallelism (ep {} x etp {} = tp {} x dp {}), any other "
                                       "than the allowed is not modelled:",
                                       p.ep, serving_expert_tp(p), p.tp, p.dp);
  if (p.tp != 1) fail("parallelism.tp", p.tp, what, "1, each GPU its own sequences' attention");
  if (serving_expert_tp(p) != 1) fail("parallelism.etp", serving_expert_tp(p), what, "1, whole experts: ep = dp");
  if (p.pp != 1) fail("parallelism.pp", p.pp, what, "1");
  if (w.inference->requests)
    throw InputError("inference.requests", "a stream",
                     fmt::format("with attention data parallelism (ep {} = dp {}) is not modelled (its replicas step "
                                 "together at every MoE layer):",
                                 p.ep, p.dp),
                     "a static batch (inference.batch), or independent replicas (ep x etp = tp)");
}

// MoE's expert grid: ep divides the experts, etp divides tp and the expert width, etp x ep divides the stage's
// tp x dp ranks; sequence parallelism under TP (Megatron-Core asserts it for MoE with tp > 1); no ZeRO-3, which
// dtsim gathers per dense module.
void check_experts(const Workload& w) {
  const ModelSpec& m = w.model;
  const ParallelPlan& p = w.plan;
  if (!m.moe()) {
    if (p.ep != 1) fail("parallelism.ep", p.ep, "needs a mixture of experts (model.experts); without, ep", "1");
    if (p.etp != 0 && p.etp != p.tp)
      fail("parallelism.etp", p.etp, "needs a mixture of experts (model.experts); without, etp", "tp, or unset");
    return;
  }
  if (m.experts % p.ep != 0)
    fail("parallelism.ep", p.ep, fmt::format("does not divide model.experts {}: ep", m.experts), "a divisor of experts");
  const int etp = w.inference ? serving_expert_tp(p) : p.expert_tp();
  if (w.inference && p.ep * etp != p.tp && !attention_data_parallel(w))
    fail("parallelism.ep", p.ep,
         fmt::format("with ep {} and etp {} spreads the experts neither over tp {} nor over tp x dp {} (attention "
                     "data parallelism), so not",
                     p.ep, etp, p.tp, p.tp * p.dp),
         "ep x etp = tp, or = tp x dp with dp > 1 (etp unset: what is left over ep)");
  if (attention_data_parallel(w)) check_attention_data_parallel(w);
  if (p.tp % etp != 0) fail("parallelism.etp", etp, fmt::format("does not divide tp {}: etp", p.tp), "a divisor of tp");
  if (m.expert_width() % etp != 0)
    fail("parallelism.etp", etp, fmt::format("does not divide model.expert_ffn_hidden {}: etp", m.expert_width()),
         "a divisor of expert_ffn_hidden");
  if ((p.tp * p.dp_ranks()) % (etp * p.ep) != 0)
    fail("parallelism.ep", p.ep,
         fmt::format("x etp {} does not divide the tp {} x dp {} ranks of a stage: ep", etp, p.tp, p.dp_ranks()),
         "ep x etp dividing tp x dp (x cp)");
  if (w.training && p.tp > 1 && !w.training->sequence_parallel)
    fail("training.sequence_parallel", 0, "must be on for a mixture of experts with tp > 1 (as Megatron-Core asserts):",
         "true");
  // Sharded parameters with experts as PyTorch's FSDP2 runs them (torchtitan); DeepSpeed refuses its ZeRO-3 with
  // MoE layers ("MoE not supported with Stage 3", deepspeed/runtime/engine.py), and hybrid sharding of the experts
  // (torchtitan's dp_replicate x efsdp) is not modelled.
  if (p.zero >= 3 && p.fsdp == Fsdp::None)
    fail("parallelism.zero", p.zero,
         "(ZeRO-3) with a mixture of experts is modelled only as PyTorch FSDP shards it (parallelism.fsdp: full): zero",
         "0, 1 or 2, or parallelism.fsdp: full");
  if (p.fsdp == Fsdp::Hybrid)
    throw InputError("parallelism.fsdp", "hybrid", "is not modelled with a mixture of experts, so not",
                     "full or none");
  if (w.training && w.training->moe_dispatcher == MoeDispatcher::DeepEp) {
    const EpNodes n = ep_nodes(w);
    if (n.nodes * n.per_node != p.ep || !every_ep_group_alike(w, n))
      throw InputError("training.moe_dispatcher", "deepep",
                       fmt::format("needs each expert-parallel group to fill whole nodes or sit within one (ep {} on "
                                   "nodes of {} GPUs), so not",
                                   p.ep, w.gpus_per_node),
                       "alltoall, or an ep and placement whose groups split evenly over nodes");
  }
}

void check_layers_per_stage(const ModelSpec& m, const ParallelPlan& p) {
  const auto& list = p.layers_per_stage;
  if (list.empty()) return;
  const auto stages = static_cast<std::size_t>(p.pp * p.vpp);
  if (list.size() != stages)
    fail("parallelism.layers_per_stage", static_cast<long long>(list.size()), "has the wrong number of entries:",
         fmt::format("pp x vpp = {} entries", stages));
  for (int n : list)
    if (n < 1) fail("parallelism.layers_per_stage", n, "holds a stage with no layers:", "entries >= 1");
  const int sum = std::accumulate(list.begin(), list.end(), 0);
  if (sum != m.layers)
    fail("parallelism.layers_per_stage", sum, "sums to", fmt::format("a sum of model.layers = {}", m.layers));
}

void check_schedule(const ParallelPlan& p) {
  if (p.vpp == 1) return;
  if (p.schedule != Schedule::OneFOneB)
    fail("parallelism.vpp", p.vpp, "needs the 1f1b schedule (interleaved 1F1B); with gpipe vpp", "1");
  if (p.pp == 1) fail("parallelism.vpp", p.vpp, "needs pipeline parallelism (pp > 1); with pp 1 vpp", "1");
}

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

}  // namespace

void check_model_split(const ModelSpec& m, const ParallelPlan& p) {
  if (m.heads % p.tp != 0)
    fail("parallelism.tp", p.tp, fmt::format("does not divide model.heads {}: tp", m.heads), "a divisor of heads");
  if (m.kv_heads % p.tp != 0)
    fail("parallelism.tp", p.tp, fmt::format("does not divide model.kv_heads {}: tp", m.kv_heads), "a divisor of kv_heads");
  if (m.ffn_hidden % p.tp != 0)
    fail("parallelism.tp", p.tp, fmt::format("does not divide model.ffn_hidden {}: tp", m.ffn_hidden), "a divisor of ffn_hidden");
  const int stages = p.pp * p.vpp;
  if (stages > m.layers)
    fail("parallelism.pp", p.pp, fmt::format("x vpp {} = {} stages, more than model.layers {}; pp", p.vpp, stages, m.layers),
         fmt::format("pp x vpp <= {}", m.layers));
}

std::string_view to_string(Fsdp f) { return topology::name_of(kFsdps, f); }
std::optional<Fsdp> parse_fsdp(std::string_view name) { return topology::value_of(kFsdps, name); }

std::vector<int> stage_layers(const ParallelPlan& plan, int layers) {
  if (!plan.layers_per_stage.empty()) return plan.layers_per_stage;
  const int stages = plan.pp * plan.vpp;
  DTSIM_ASSERT(stages >= 1 && stages <= layers, "stage_layers on an unchecked plan");
  std::vector<int> out(static_cast<std::size_t>(stages), layers / stages);
  // The remainder goes to the stages furthest from either end (ties: the earlier stage).
  std::vector<int> by_centrality(static_cast<std::size_t>(stages));
  std::iota(by_centrality.begin(), by_centrality.end(), 0);
  const auto edge_distance = [stages](int v) { return std::min(v, stages - 1 - v); };
  std::stable_sort(by_centrality.begin(), by_centrality.end(),
                   [&](int a, int b) { return edge_distance(a) > edge_distance(b); });
  for (int i = 0; i < layers % stages; ++i) ++out[static_cast<std::size_t>(by_centrality[static_cast<std::size_t>(i)])];
  return out;
}

std::vector<int> first_layers(const std::vector<int>& layers) {
  std::vector<int> first;
  int next = 0;
  for (int n : layers) {
    first.push_back(next);
    next += n;
  }
  return first;
}

int micro_batches(const ParallelPlan& plan, const TrainingSpec& training) {
  return training.global_batch / (plan.dp * training.micro_batch);
}

// A layer-list model trains with data parallelism alone (DDP): every other degree 1, no sharding.
void check_layer_list(const Workload& w) {
  const ParallelPlan& p = w.plan;
  if (w.inference) fail("model.kind", 0, "layers trains only; serving", "a transformer under inference");
  const auto only_one = [](const char* key, int value) {
    if (value != 1)
      fail(key, value, "splits a transformer; a layer-list model (model.kind: layers) trains data-parallel only:",
           "1");
  };
  only_one("parallelism.tp", p.tp);
  only_one("parallelism.pp", p.pp);
  only_one("parallelism.cp", p.cp);
  only_one("parallelism.ep", p.ep);
  only_one("parallelism.vpp", p.vpp);
  if (p.zero != 0 || p.fsdp != Fsdp::None)
    fail("parallelism.zero", p.zero, "shards over data parallelism; a layer-list model trains with DDP:", "0");
}

// torchtitan's per-op checkpointing counts a Llama block's matmuls (seven bias-free linear layers, a gated MLP)
// and keeps its fused attention's output: dtsim models it on such blocks only.
const char* per_op_recompute_misfit(const Workload& w) {
  const ModelSpec& m = w.model;
  if (m.moe()) return "experts";
  if (m.mla()) return "multi-head latent attention";
  if (m.bias) return "biased linear layers (addmm, which the policy does not count)";
  if (m.activation != Activation::Swiglu) return "a plain MLP, not a gated one";
  if (!fused(w.training->attention)) return "unfused attention (training.attention: unfused)";
  return nullptr;
}

Workload draft_workload(const Workload& w) {
  DTSIM_ASSERT(w.inference && w.inference->speculative, "a draft needs a speculative serving workload");
  Workload d = w;
  d.model = w.inference->speculative->draft;
  d.plan.tp = draft_tp(*w.inference->speculative, w.plan.tp);
  d.plan.ep = 1;    // a dense draft beside a target whose experts are spread (the reader refuses MoE drafts)
  d.plan.etp = 0;
  d.plan.dp = w.plan.dp * (w.plan.tp / d.plan.tp);   // the same GPUs: a draft on one GPU of each TP group
  d.inference->speculative.reset();
  d.inference->inside_iteration = true;
  d.plan.layers_per_stage.clear();   // the draft's own layers, spread as evenly as the target's split allows
  return d;
}

int serving_expert_tp(const ParallelPlan& p) {
  if (p.etp > 0) return p.etp;
  if (p.tp % p.ep == 0) return p.tp / p.ep;
  return (p.tp * p.dp) % p.ep == 0 ? p.tp * p.dp / p.ep : p.tp;
}

bool attention_data_parallel(const Workload& w) {
  const ParallelPlan& p = w.plan;
  return w.inference && w.model.moe() && p.dp > 1 && p.ep * serving_expert_tp(p) == p.tp * p.dp;
}

void check_plan(const Workload& w, int gpus) {
  const ParallelPlan& p = w.plan;
  DTSIM_ASSERT(w.training.has_value() != w.inference.has_value(), "a workload is training or inference");
  DTSIM_ASSERT(p.tp >= 1 && p.pp >= 1 && p.dp >= 1 && p.vpp >= 1 && p.cp >= 1, "the loader range-checks degrees");
  if (w.model.kind == ModelKind::Layers) {
    check_degrees(p, gpus);
    check_layer_list(w);
    check_training(w);
    return;
  }
  check_degrees(p, gpus);
  check_model_split(w.model, p);
  check_layers_per_stage(w.model, p);
  check_experts(w);
  check_context(w);
  // A disaggregated stream sends each request's cache by head shares between the pools' GPUs; a latent cache is
  // whole on every GPU of a group, which that transfer does not describe.
  if (w.inference && w.inference->disaggregation && w.model.mla())
    fail("model.kv_lora_rank", w.model.kv_lora_rank,
         "(multi-head latent attention) has one latent cache a token on every GPU, which disaggregated serving's KV "
         "transfer does not model, so not",
         "0 (a model without MLA) with inference.disaggregation, or no disaggregation");
  check_schedule(p);
  if (w.training) check_training(w);
  // A draft model (speculative decoding) runs with the target's split: the same checks, named as its key.
  if (w.inference && w.inference->speculative) {
    const int tp = draft_tp(*w.inference->speculative, p.tp);
    if (tp != 1 && tp != p.tp)
      throw InputError("inference.speculative.tp", std::to_string(tp),
                       fmt::format("is neither 1 nor the target's tp {} (vLLM runs a draft on one GPU or on the "
                                   "target's):", p.tp),
                       fmt::format("1 or {}", p.tp));
    const Workload draft = draft_workload(w);
    try {
      check_plan(draft, gpus);
    } catch (const InputError& e) {
      throw InputError("inference.speculative.draft", draft.model.name,
                       fmt::format("cannot run the target's split ({} '{}' {}) as the draft model", e.key(), e.value(), e.reason()),
                       e.allowed());
    }
  }
}

}  // namespace dtsim::workloads
