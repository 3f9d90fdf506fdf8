#include "workloads/plan.hpp"

#include <algorithm>
#include <map>
#include <fmt/format.h>
#include <numeric>

#include "topology/error.hpp"
#include "topology/name_table.hpp"
#include "workloads/plan_checks.hpp"

namespace dtsim::workloads {
namespace detail {

void fail(const std::string& key, long long value, const std::string& reason, const std::string& allowed) {
  throw InputError(key, std::to_string(value), reason, allowed);
}

}  // namespace detail

namespace {

using detail::fail;

constexpr topology::NameTable<Fsdp, 3> kFsdps{{{Fsdp::None, "none"}, {Fsdp::Full, "full"}, {Fsdp::Hybrid, "hybrid"}}};

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
// as vLLM's DP+EP and SGLang's DP attention run DeepSeek), whole experts (etp 1), one stage, and no disaggregated
// pools (each would need its own grid).
void check_attention_data_parallel(const Workload& w) {
  const ParallelPlan& p = w.plan;
  if (w.inference->disaggregation)
    throw InputError("inference.disaggregation", "prefill and decode pools",
                     fmt::format("with attention data parallelism (ep {} x etp {} = tp {} x dp {}) are not modelled "
                                 "(each pool would need its own expert grid):",
                                 p.ep, serving_expert_tp(p), p.tp, p.dp),
                     "one pool, or independent replicas (ep x etp = tp)");
  const std::string what = fmt::format("with attention data parallelism (ep {} x etp {} = tp {} x dp {}), any other "
                                       "than the allowed is not modelled:",
                                       p.ep, serving_expert_tp(p), p.tp, p.dp);
  const std::string or_replicas = ", or independent replicas (ep x etp = tp)";
  if (p.tp != 1) fail("parallelism.tp", p.tp, what, "1, each GPU its own sequences' attention" + or_replicas);
  if (serving_expert_tp(p) != 1)
    fail("parallelism.etp", serving_expert_tp(p), what, "1, whole experts: ep = dp" + or_replicas);
  if (p.pp != 1) fail("parallelism.pp", p.pp, what, "1" + or_replicas);
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
    detail::check_training(w);
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
  if (w.training) detail::check_training(w);
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
