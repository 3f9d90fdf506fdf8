// Memory per GPU. Training: parameters, gradients and optimizer states of one pipeline stage's layers (split
// over tp, sharded over dp per ZeRO stage), activations after Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", section 4) times the micro-batches the schedule keeps in flight,
// and communication buffers. Inference: weights and KV cache over tp x pp, and a decode workspace.
#include "workloads/memory_plan.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "topology/error.hpp"
#include "workloads/schedule.hpp"

namespace dtsim::workloads {
namespace {

constexpr double kMaskBytes = 1.0;        // a dropout mask stores one byte per element (Korthikanti et al.)
constexpr double kLossBytes = 4.0;        // the cross-entropy loss keeps the logits in fp32
constexpr double kMasterBytes = 4.0;      // the fp32 copy of the weights mixed precision updates
constexpr double kWorkspaceBytes = 4.0;   // decode workspace tensors, counted as fp32 (an upper bound)
constexpr int kBucketsInFlight = 2;       // DP overlap: one bucket reducing while the next one fills

// ---------------------------------------------------------------------------------------------------------
// Parameters per GPU. Megatron-LM splits every linear weight, the column-parallel biases (QKV, MLP up/gate)
// and the word embedding / output projection over tp; norms, row-parallel biases (attention output, MLP
// down), learned position embeddings and an MoE layer's router (Megatron-Core's TopKRouter weight, a plain
// parameter of experts x hidden) are replicated on every TP rank. Counts are exact, not /tp.

double replicated_layer_parameters(const ModelSpec& m, int layer) {
  const double router = m.moe_layer(layer) ? moe_layer_parameters(m).router : 0.0;
  return 2.0 * final_norm_parameters(m) + (m.bias ? 2.0 * m.hidden : 0.0) + router;   // two norms, two row biases
}

// A layer's parameters on one GPU: the dense part split over tp (but what is replicated), the routed experts over
// ep x etp.
struct GpuParameters {
  double dense = 0;
  double expert = 0;
  GpuParameters& operator+=(const GpuParameters& o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
  [[nodiscard]] double total() const { return dense + expert; }
};

GpuParameters layer_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p, int layer) {
  const double replicated = replicated_layer_parameters(m, layer);
  return {(layer_dense_parameters(m, layer) - replicated) / p.tp + replicated,
          layer_routed_parameters(m, layer) / (p.ep * p.expert_tp())};
}

double word_embedding_parameters(const ModelSpec& m) { return static_cast<double>(m.vocab) * m.hidden; }

double embedding_parameters_per_gpu(const ModelSpec& m, int tp) {
  const double words = word_embedding_parameters(m);
  return words / tp + (embedding_parameters(m) - words);   // learned positions are replicated
}

// Final norm and output projection. Tied embeddings with pp > 1: the last stage holds its own copy of the
// word embedding (with gradients and optimizer states), all-reduced with the first stage's, as Megatron does.
double head_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p) {
  const double logits = m.tied_embeddings ? (p.pp > 1 ? word_embedding_parameters(m) : 0.0) : logits_parameters(m);
  return logits / p.tp + final_norm_parameters(m);
}

int last_virtual_stage(const ParallelPlan& p) { return p.pp * p.vpp - 1; }

GpuParameters stage_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p, int stage) {
  const auto layers = stage_layers(p, m.layers);
  const auto first = first_layers(layers);
  GpuParameters n;
  for (int chunk = 0; chunk < p.vpp; ++chunk) {
    const auto v = static_cast<std::size_t>(chunk * p.pp + stage);
    for (int l = first[v]; l < first[v] + layers[v]; ++l) n += layer_parameters_per_gpu(m, p, l);
    if (v == 0) n.dense += embedding_parameters_per_gpu(m, p.tp);
    if (static_cast<int>(v) == last_virtual_stage(p)) n.dense += head_parameters_per_gpu(m, p);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// Activations. Korthikanti et al. count, per layer and micro-batch (s tokens, b sequences, 16-bit tensors,
// 1-byte dropout masks), for the GPT layer (MHA, gelu MLP of 4h):
//   attention 11sbh + 5as^2b: QKV input 2sbh, Q and K 4sbh, softmax output 2as^2b, its dropout mask as^2b,
//             dropout output 2as^2b, V 2sbh, output-projection input 2sbh, output dropout mask sbh;
//   MLP 19sbh: up-projection input 2sbh, gelu input 8sbh and output 8sbh, dropout mask sbh;
//   two norms: their inputs, 4sbh.                                         Total sbh(34 + 5as/h).
// Generalised with e bytes per element, kv = kv_heads x head_dim, f = ffn_hidden, k = 2 MLP tensors of width f
// (gelu: its input and output) or 3 (swiglu: gate and up outputs, and their product, the down input):
//   replicated under TP without SP: two norm inputs, QKV input, MLP input (4e sbh), two masks (2 sbh);
//   split over TP:                  Q (e sbh), K and V (2e sb kv), projection input (e sbh), MLP (k e sbf);
//   attention scores, split:        softmax output, mask, dropout output: (2e + 1) a s^2 b.
// For e = 2, kv = h, f = 4h, k = 2 these are 10sbh, 24sbh and 5as^2b: the paper's eq. 1-2 exactly. Without
// hidden dropout the two sbh masks are not kept; without attention dropout the scores keep only the softmax
// output (e a s^2 b).

// Stored activation elements take the compute precision's bytes; fp8 GEMMs keep bf16 activations.
double activation_element_bytes(Precision p) { return p == Precision::Fp8 ? 2.0 : bytes_per_element(p); }

struct LayerTerms {
  double replicated;   // bytes, not split by TP unless sequence parallel
  double split;        // bytes, split by TP
  double scores;       // bytes, split by TP, dropped by selective recompute of core_attn
  // What each of training.recompute_modules drops, counted in the terms above (replicated: norms, moe, moe_act;
  // split: qkv, mlp):
  double norms = 0;     // layernorm: the outputs of the norms that are modules of their own (MLA's input norm,
                        // an MoE layer's pre-MLP norm), e sbh each
  double qkv = 0;       // mla_up_proj: Q, K and V as MLA's up projections write them (their inputs, the latents,
                        // are kept either way, under `replicated`)
  double mlp = 0;       // mlp (dense layer) or shared_experts (MoE layer): the MLP's tensors, its input kept
  double moe = 0;       // moe: the routed tokens' tensors and the router's probabilities, the layer input kept
  double moe_act = 0;   // moe_act: the experts' activation outputs (the down projections' input)
  // recompute: op (torchtitan's per-op checkpointing, dense layers): what it keeps. The layer input (the
  // checkpoint's) and, with a gated MLP, the down projection's output (the seventh matmul, an odd one) replicated;
  // the outputs of Q's and V's projections, of the attention core (with its statistics: `scores`) and of the
  // MLP's first matmul (w1, the gate; a plain MLP's up projection) split by TP.
  double op_replicated = 0;
  double op_split = 0;
};

// An MoE layer keeps, in the MLP's place: the shared experts' tensors (split over TP as a dense MLP's), and on
// the GPU its routed tokens reach (the busiest, model.expert_imbalance times the mean): the tokens permuted to its
// experts (the up projection's input) and their outputs (which the weighted sum's backward reads), h wide each,
// and the k expert tensors of expert_ffn_hidden / etp (kept per token copy: top_k x etp copies of each token this
// GPU routes); the router's fp32 probabilities. These are counted under `replicated` (divided by sequence
// parallelism, as the routed tokens are) with etp folded in.
LayerTerms layer_terms(const ModelSpec& m, const TrainingSpec& t, int micro_batch, bool moe, int etp) {
  const double sb = static_cast<double>(m.seq_length) * micro_batch;
  const double e = activation_element_bytes(t.precision);
  const double h = m.hidden;
  const double mlp_tensors = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  const double mlp_width = moe ? static_cast<double>(m.shared_experts) * m.expert_width() : m.ffn_hidden;
  const double split_width = m.q_dim() + m.value_dim() + 2.0 * m.kv_dim() + mlp_tensors * mlp_width;
  // A fused attention core keeps no scores, only the softmax statistics (fp32 per row) for its backward.
  const double dropped = m.attention_dropout > 0.0 ? e + kMaskBytes : 0.0;   // the mask and dropout output
  const double scores = fused(t.attention) ? sb * m.heads * bytes_per_element(Precision::Fp32)
                                           : sb * m.seq_length * m.heads * (e + dropped);
  const double masks = m.hidden_dropout > 0.0 ? 2.0 * kMaskBytes : 0.0;
  double replicated = sb * h * (4.0 * e + masks);
  LayerTerms l{0, sb * e * split_width, scores};
  l.norms = ((m.mla() ? 1.0 : 0.0) + (moe ? 1.0 : 0.0)) * e * sb * h;
  l.qkv = sb * e * (m.q_dim() + 2.0 * m.kv_dim());
  // MLA keeps its latents, the up projections' inputs (replicated, as the down projections' outputs are).
  if (m.mla()) replicated += sb * e * (static_cast<double>(m.q_lora_rank) + m.kv_lora_rank + m.rope_head_dim);
  l.mlp = sb * e * mlp_tensors * mlp_width;
  l.op_replicated = sb * e * h * (m.activation == Activation::Swiglu ? 2.0 : 1.0);
  l.op_split = sb * e * (static_cast<double>(m.q_dim()) + m.kv_dim() + m.value_dim() + mlp_width);
  if (moe) {
    const double copies = sb * m.experts_per_token * etp * m.expert_imbalance;
    l.moe = copies * e * (2.0 * h + mlp_tensors * m.expert_width() / etp) +
            sb * m.experts * bytes_per_element(Precision::Fp32);
    l.moe_act = copies * e * m.expert_width() / etp;
    replicated += l.moe;
  }
  l.replicated = replicated;
  return l;
}

// Selective recomputation's activations: the terms less what each recomputed module drops.
double selective_activation_bytes(const LayerTerms& l, unsigned modules, bool moe, bool mla, double sp, double tp) {
  const auto has = [&](RecomputeModule m) { return (modules & bit(m)) != 0; };
  double replicated = l.replicated, split = l.split;
  if (!has(RecomputeModule::CoreAttn)) split += l.scores;
  if (has(RecomputeModule::Layernorm)) replicated -= l.norms;
  if (mla && has(RecomputeModule::MlaUpProj)) split -= l.qkv;
  if (moe && has(RecomputeModule::Moe)) {
    replicated -= l.moe;
    split -= l.mlp;
  } else if (moe) {
    if (has(RecomputeModule::MoeAct)) replicated -= l.moe_act;
    if (has(RecomputeModule::SharedExperts)) split -= l.mlp;
  } else if (has(RecomputeModule::Mlp)) {
    split -= l.mlp;
  }
  return replicated / sp + split / tp;
}

// Embedding output dropout mask (first virtual stage): sbh bytes, /t with SP (Korthikanti section 4.3).
double embedding_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp) {
  if (m.hidden_dropout <= 0.0) return 0.0;
  const double sbh = static_cast<double>(m.seq_length) * t.micro_batch * m.hidden;
  return kMaskBytes * sbh / (t.sequence_parallel ? tp : 1);
}

// Last virtual stage (Korthikanti section 4.3): final norm input and output-projection input (e sbh each, /t
// with SP), and the logits the loss keeps in fp32, vocab-parallel: 4 sbV / t (the fused loss keeps them in the
// 16-bit precision).
double head_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp) {
  const double sb = static_cast<double>(m.seq_length) * t.micro_batch;
  const double inputs = 2.0 * activation_element_bytes(t.precision) * sb * m.hidden / (t.sequence_parallel ? tp : 1);
  const double logits = t.cross_entropy_fusion ? activation_element_bytes(t.precision) : kLossBytes;
  return inputs + logits * sb * m.logits_width() / tp;
}

// Bytes one in-flight forward of virtual stage v (its `layers` from `first`) leaves on its GPU until its backward
// runs.
// The model as its MoE layers load the busiest GPU: without expert parallelism there is no busier one.
ModelSpec as_loaded(const Workload& w) {
  ModelSpec m = w.model;
  if (w.plan.ep == 1) m.expert_imbalance = 1.0;
  return m;
}

double virtual_stage_activation_bytes(const Workload& w, int v, int first, int layers) {
  const TrainingSpec& t = *w.training;
  const ModelSpec m = as_loaded(w);
  double bytes = 0;
  for (int l = first; l < first + layers; ++l)
    bytes += layer_activation_bytes(m, t, w.plan.tp, t.micro_batch, m.moe_layer(l), w.plan.expert_tp()).value();
  if (v == 0) bytes += embedding_activation_bytes(w.model, t, w.plan.tp);
  if (v == last_virtual_stage(w.plan)) bytes += head_activation_bytes(w.model, t, w.plan.tp);
  return bytes;
}

struct StageActivations {
  Bytes peak;
  int in_flight = 0;
};

// Plays the stage's schedule: each forward adds its chunk's activations, each backward frees them.
StageActivations stage_activations(const Workload& w, int stage) {
  const ParallelPlan& p = w.plan;
  const auto layers = stage_layers(p, w.model.layers);
  const auto first = first_layers(layers);
  std::vector<double> chunk_bytes;
  for (int chunk = 0; chunk < p.vpp; ++chunk) {
    const auto v = static_cast<std::size_t>(chunk * p.pp + stage);
    // Context parallelism keeps 1 / cp of every sequence's tokens on a GPU: every term is per token (the fused
    // attention it needs keeps no scores).
    chunk_bytes.push_back(virtual_stage_activation_bytes(w, static_cast<int>(v), first[v], layers[v]) / p.cp);
  }
  const auto order = schedule_order(w, micro_batches(p, *w.training), stage);
  double live = 0.0;
  double peak = 0.0;
  for (const PipeStep& step : order) {
    const double bytes = chunk_bytes[static_cast<std::size_t>(step.chunk)];
    live += step.pass == Pass::Forward ? bytes : -bytes;
    peak = std::max(peak, live);
  }
  // Full recompute: the backward re-runs one layer's forward and holds its full activations meanwhile; selective,
  // what the modules beyond core_attn dropped of one layer (the larger of a dense and an MoE layer's); op, what
  // per-op checkpointing dropped of one layer. The attention core's own scores, recomputed for one layer, are not
  // counted (as Korthikanti et al. count them).
  if (w.training->recompute != Recompute::None) {
    TrainingSpec stored = *w.training;
    const Recompute r = w.training->recompute;
    stored.recompute = r == Recompute::Full || r == Recompute::Op ? Recompute::None : Recompute::Selective;
    stored.recompute_modules = bit(RecomputeModule::CoreAttn);
    const ModelSpec m = as_loaded(w);
    double transient = 0;
    for (const bool moe : {false, true}) {
      if (moe && !m.moe()) continue;
      double held = layer_activation_bytes(m, stored, p.tp, stored.micro_batch, moe, p.expert_tp()).value();
      if (r == Recompute::Selective || r == Recompute::Op)
        held -= layer_activation_bytes(m, *w.training, p.tp, stored.micro_batch, moe, p.expert_tp()).value();
      transient = std::max(transient, held);
    }
    peak += transient / p.cp;
  }
  return {Bytes(peak), peak_in_flight(order)};
}

// ---------------------------------------------------------------------------------------------------------
// Training plan of one pipeline stage.

struct StageMemory {
  MemoryParts parts;
  int in_flight = 0;
  GpuParameters parameters;   // per GPU, before ZeRO sharding
};

Bytes total(const MemoryParts& p) {
  return p.params + p.grads + p.optimizer + p.activations + p.kv_cache + p.buffers;
}

// Parameters' bytes on one GPU, `per_parameter` each, sharded over their data-parallel group (the experts' over
// the expert data-parallel group) from ZeRO stage `zero_stage` on.
double sharded(const GpuParameters& n, const ParallelPlan& p, int zero_stage, double per_parameter) {
  if (p.zero < zero_stage) return n.total() * per_parameter;
  return (n.dense / p.zero_ranks() + n.expert / p.expert_dp()) * per_parameter;
}

// The largest unit ZeRO-3 holds gathered (a layer, the embedding or the output projection), per GPU. The step
// graph gathers a layer's modules together and, with the prefetch, the next layer's too, so this unit and one
// more layer can be live; the finer per-module release DeepSpeed can do is not modelled.
double largest_gathered_unit(const ModelSpec& m, const ParallelPlan& p) {
  return std::max({layer_parameters_per_gpu(m, p, 0).total(), embedding_parameters_per_gpu(m, p.tp),
                   head_parameters_per_gpu(m, p)});
}

Bytes training_buffers(const Workload& w, bool prefetch) {
  const ParallelPlan& p = w.plan;
  const TrainingSpec& t = *w.training;
  if (p.dp_ranks() == 1) return Bytes(0.0);
  Bytes b = t.dp_bucket * kBucketsInFlight;
  // ZeRO-3: the unit being computed and, prefetched, the next layer, each whole, in the weight dtype.
  if (p.zero >= 3) {
    const double gathered =
        largest_gathered_unit(w.model, p) + (prefetch ? layer_parameters_per_gpu(w.model, p, 0).total() : 0.0);
    b += Bytes(gathered * bytes_per_element(t.weight_dtype));
  }
  return b;
}

StageMemory training_stage(const Workload& w, int stage, bool prefetch) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  const GpuParameters n = stage_parameters_per_gpu(w.model, p, stage);
  const double optimizer_bytes = (t.master_weights ? kMasterBytes : 0.0) + optimizer_state_bytes_per_param(t);
  const StageActivations act = stage_activations(w, stage);
  StageMemory s;
  s.parameters = n;
  s.in_flight = act.in_flight;
  s.parts.params = Bytes(sharded(n, p, 3, bytes_per_element(t.weight_dtype)));
  s.parts.grads = Bytes(sharded(n, p, 2, bytes_per_element(t.grad_dtype)));
  s.parts.optimizer = Bytes(sharded(n, p, 1, optimizer_bytes));
  s.parts.activations = act.peak;
  s.parts.buffers = training_buffers(w, prefetch);
  return s;
}

// "6.738e9" / "108.9e6": parameter counts in notes.
std::string count(double n) { return n >= 1e9 ? fmt::format("{:.4g}e9", n / 1e9) : fmt::format("{:.4g}e6", n / 1e6); }

std::string zero_note(const ParallelPlan& p, int zero_stage) {
  if (p.zero < zero_stage || p.zero_ranks() == 1) return "";
  if (p.fsdp != Fsdp::None)
    return p.shard_ranks > 0 ? fmt::format(", hybrid FSDP /{} (a node's data-parallel ranks)", p.shard_ranks)
                             : fmt::format(", FSDP /{}", p.zero_ranks());
  const std::string group = p.cp > 1 ? fmt::format("dp x cp {}", p.dp_ranks()) : fmt::format("dp {}", p.dp);
  if (p.ep > 1 || p.expert_tp() != p.tp) return fmt::format(", ZeRO-{} /{} (experts /{})", p.zero, group, p.expert_dp());
  return fmt::format(", ZeRO-{} /{}", p.zero, group);
}

std::string gathered_note(const TrainingSpec& t, bool prefetch) {
  if (prefetch) return "; ZeRO-3: the largest gathered unit (layer or embedding) and the next layer, prefetched, weight dtype";
  return fmt::format("; ZeRO-3: the largest gathered unit (layer or embedding), weight dtype: no prefetch ({})",
                     t.zero3_prefetch == Zero3Prefetch::None
                         ? "training.zero3_prefetch: none"
                         : "training.zero3_prefetch: auto, and the prefetched layer does not fit");
}

// "none", "full", or "selective [core_attn, moe_act]".
std::string recompute_text(const TrainingSpec& t) {
  if (t.recompute != Recompute::Selective) return std::string(to_string(t.recompute));
  return fmt::format("selective [{}]", fmt::join(recompute_module_names(t.recompute_modules), ", "));
}

std::vector<std::string> training_notes(const Workload& w, const StageMemory& s, int stage, bool prefetch) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  const std::string master = t.master_weights ? "4 B fp32 master + " : "";
  const std::string sp = t.sequence_parallel ? " + sequence parallel" : "";
  const bool fused_core = fused(t.attention);
  std::string act = fmt::format(
      "activations: Korthikanti et al., recompute {}{}, tp {}, micro-batch {} x {} tokens{}, {} in flight on stage "
      "{}; {}; logits {} on the last stage",
      recompute_text(t), sp, p.tp, t.micro_batch, w.model.seq_length,
      p.cp > 1 ? fmt::format(" split over cp {}", p.cp) : "", s.in_flight, stage,
      fused_core ? "fused attention (no scores kept)" : "unfused attention (scores kept)",
      t.cross_entropy_fusion ? to_string(t.precision) : "fp32");
  if (t.recompute == Recompute::Full) act += "; plus one layer recomputed in full during backward";
  if (t.recompute == Recompute::Op)
    act += "; per-op checkpointing keeps the input, Q, V, the attention output, w1's (and w2's) outputs; plus one "
           "layer's recomputed tensors during backward";
  return {
      fmt::format("params: {} parameters per GPU (stage {}, split over tp {}; norms and row biases "
                  "replicated{}) x {} B {}{}",
                  count(s.parameters.total()), stage, p.tp,
                  w.model.moe() ? fmt::format("; of them {} routed experts' over ep {} x etp {}", count(s.parameters.expert), p.ep, p.expert_tp()) : "",
                  bytes_per_element(t.weight_dtype), to_string(t.weight_dtype), zero_note(p, 3)),
      fmt::format("grads: same parameters x {} B {}{}", bytes_per_element(t.grad_dtype), to_string(t.grad_dtype),
                  zero_note(p, 2)),
      fmt::format("optimizer: {}{} {} states ({} B) per parameter{}", master, to_string(t.optimizer),
                  to_string(t.optimizer_dtype), optimizer_state_bytes_per_param(t), zero_note(p, 1)),
      act,
      "kv_cache: none (training)",
      p.dp_ranks() == 1 ? std::string("buffers: none (dp 1: no gradient buckets)")
                : fmt::format("buffers: {} DP gradient buckets of {:.4g} MB{}", kBucketsInFlight,
                              t.dp_bucket.value() / 1e6, p.zero >= 3 ? gathered_note(t, prefetch) : ""),
  };
}

MemoryPlan finish(MemoryPlan plan, const topology::GpuSpec& gpu) {
  plan.per_gpu = total(plan.parts);
  plan.capacity = gpu.memory - gpu.memory_reserve;
  plan.margin = plan.capacity - plan.per_gpu;
  plan.fits = plan.margin >= Bytes(0.0);
  return plan;
}

MemoryPlan plan_training(const Workload& w, const topology::GpuSpec& gpu, bool prefetch) {
  int worst = 0;
  StageMemory worst_memory = training_stage(w, 0, prefetch);
  for (int stage = 1; stage < w.plan.pp; ++stage) {
    StageMemory s = training_stage(w, stage, prefetch);
    if (total(s.parts) > total(worst_memory.parts)) {
      worst = stage;
      worst_memory = s;
    }
  }
  MemoryPlan plan;
  plan.parts = worst_memory.parts;
  plan.stage = worst;
  plan.in_flight_micro_batches = worst_memory.in_flight;
  plan.notes = training_notes(w, worst_memory, worst, prefetch);
  return finish(std::move(plan), gpu);
}

// ---------------------------------------------------------------------------------------------------------
// Inference: the decode step of `batch` sequences holding `context` tokens each.

// One token per sequence through the widest tensors of one layer (hidden state; Q, K, V; the attention scores
// over the whole context; the MLP) and the logits, fp32: batch x 4 B x (h + (h + 2kv + a x context + k f + V)/tp).
// Prefill workspace (a whole prompt at once) is not counted.
Bytes decode_workspace(const ModelSpec& m, const InferenceSpec& inf, int tp) {
  const double mlp_tensors = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  const double split = m.hidden + 2.0 * m.kv_dim() + static_cast<double>(m.heads) * inf.context +
                       mlp_tensors * m.ffn_hidden + m.logits_width();
  return Bytes(inf.batch * kWorkspaceBytes * (m.hidden + split / tp));
}

MemoryPlan plan_inference(const Workload& w, const topology::GpuSpec& gpu) {
  const InferenceSpec& inf = *w.inference;
  const ParallelPlan& p = w.plan;
  const double n = parameter_count(w.model);
  MemoryPlan plan;
  plan.parts.params = Bytes(n * bytes_per_element(inf.weights) / (p.tp * p.pp));
  plan.parts.kv_cache = kv_cache_bytes(w.model, inf, p.tp) / p.pp;
  plan.parts.activations = decode_workspace(w.model, inf, p.tp);
  plan.in_flight_micro_batches = 1;
  plan.inference = true;
  plan.notes = {
      fmt::format("params: {} parameters x {} B {} / (tp {} x pp {}); quantisation scales not counted", count(n),
                  bytes_per_element(inf.weights), to_string(inf.weights), p.tp, p.pp),
      "grads: none (inference)",
      "optimizer: none (inference)",
      fmt::format("activations: decode workspace, one token per sequence, batch {}, fp32 (prefill not counted)",
                  inf.batch),
      fmt::format("kv_cache: {} layers x {} kv heads x {} dims x {} tokens x batch {} x {} B {} x 2 (K, V) / "
                  "(tp {} x pp {})",
                  w.model.layers, w.model.kv_heads, w.model.head_dim(), inf.context, inf.batch,
                  bytes_per_element(inf.kv_cache), to_string(inf.kv_cache), p.tp, p.pp),
      "buffers: none counted (inference)",
  };
  return finish(std::move(plan), gpu);
}

}  // namespace

Bytes layer_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp, int micro_batch, bool moe, int etp) {
  DTSIM_ASSERT(tp >= 1 && micro_batch >= 1 && etp >= 1, "activation bytes of a checked plan");
  const LayerTerms l = layer_terms(m, t, micro_batch, moe, etp);
  const double sp = t.sequence_parallel ? tp : 1.0;   // divides what TP alone leaves replicated
  switch (t.recompute) {
    case Recompute::None: return Bytes(l.replicated / sp + (l.split + l.scores) / tp);
    case Recompute::Selective: return Bytes(selective_activation_bytes(l, t.recompute_modules, moe, m.mla(), sp, tp));
    case Recompute::Op: return Bytes(l.op_replicated / sp + (l.op_split + l.scores) / tp);
    case Recompute::Full: {
      const double sbh = static_cast<double>(m.seq_length) * micro_batch * m.hidden;
      return Bytes(activation_element_bytes(t.precision) * sbh / sp);   // the layer input only
    }
  }
  DTSIM_ASSERT(false, "recompute mode missing from layer_activation_bytes");
}

int in_flight_micro_batches(const ParallelPlan& plan, int micro_batches, int stage) {
  return peak_in_flight(schedule_order(plan, micro_batches, stage));
}

Bytes kv_cache_bytes(const ModelSpec& m, const InferenceSpec& inf, int tp) {
  DTSIM_ASSERT(tp >= 1, "kv cache of a checked plan");
  return kv_bytes_per_token(m, inf.kv_cache) * (static_cast<double>(inf.context) * inf.batch / tp);
}

Bytes kv_bytes_per_token(const ModelSpec& m, Precision kv_cache) {
  return Bytes(2.0 * m.layers * static_cast<double>(m.kv_dim()) * bytes_per_element(kv_cache));
}

namespace {

// The training plan with ZeRO-3's prefetch resolved (training.zero3_prefetch; auto: the prefetch if it fits),
// and whether it prefetches: what plan_memory reports and what the step graph runs.
struct PrefetchPlan {
  bool prefetch = false;
  MemoryPlan plan;
};
PrefetchPlan plan_prefetch(const Workload& w, const topology::GpuSpec& gpu) {
  const bool gathers = w.plan.zero >= 3 && w.plan.zero_ranks() > 1;   // otherwise nothing is gathered: no prefetch
  const Zero3Prefetch mode = w.training->zero3_prefetch;
  if (gathers && mode == Zero3Prefetch::Auto) {
    MemoryPlan with = plan_training(w, gpu, true);
    if (with.fits) return {true, std::move(with)};
    return {false, plan_training(w, gpu, false)};
  }
  const bool prefetch = gathers && mode == Zero3Prefetch::Layer;
  return {prefetch, plan_training(w, gpu, prefetch)};
}

}  // namespace

bool zero3_prefetches(const Workload& w, const topology::GpuSpec& gpu) {
  return w.training && w.model.kind == ModelKind::Transformer && plan_prefetch(w, gpu).prefetch;
}

namespace {

// A layer-list model under DDP: every GPU holds the whole model, its gradients and optimizer states; the
// activations each layer keeps for the micro-batch; two gradient buckets.
MemoryPlan plan_layer_list(const Workload& w, const topology::GpuSpec& gpu) {
  const TrainingSpec& t = *w.training;
  const double n = parameter_count(w.model);
  double kept = 0;
  for (const LayerSpec& l : w.model.layer_list) kept += l.activation;
  const double optimizer_bytes = (t.master_weights ? kMasterBytes : 0.0) + optimizer_state_bytes_per_param(t);
  MemoryPlan plan;
  plan.parts.params = Bytes(n * bytes_per_element(t.weight_dtype));
  plan.parts.grads = Bytes(n * bytes_per_element(t.grad_dtype));
  plan.parts.optimizer = Bytes(n * optimizer_bytes);
  plan.parts.activations = Bytes(kept * t.micro_batch);
  plan.parts.buffers = w.plan.dp > 1 ? t.dp_bucket * kBucketsInFlight : Bytes(0);
  plan.in_flight_micro_batches = 1;
  plan.notes = {
      fmt::format("params: {} parameters (every GPU the whole model, DDP) x {} B {}", count(n),
                  bytes_per_element(t.weight_dtype), to_string(t.weight_dtype)),
      fmt::format("grads: same parameters x {} B {}", bytes_per_element(t.grad_dtype), to_string(t.grad_dtype)),
      fmt::format("optimizer: {}{} {} states ({} B) per parameter", t.master_weights ? "4 B fp32 master + " : "",
                  to_string(t.optimizer), to_string(t.optimizer_dtype), optimizer_state_bytes_per_param(t)),
      fmt::format("activations: what each of the {} layers keeps for its backward, {:.4g} MB a sample x micro-batch {}",
                  w.model.layer_list.size(), kept / 1e6, t.micro_batch),
      "kv_cache: none (training)",
      w.plan.dp > 1 ? fmt::format("buffers: {} DDP gradient buckets of {:.4g} MB", kBucketsInFlight, t.dp_bucket.value() / 1e6)
                    : std::string("buffers: none (dp 1: no gradient buckets)"),
  };
  return finish(std::move(plan), gpu);
}

}  // namespace

MemoryPlan plan_memory(const Workload& w, const topology::GpuSpec& gpu) {
  DTSIM_ASSERT(w.training.has_value() != w.inference.has_value(), "a workload is training or inference");
  if (w.model.kind == ModelKind::Layers && w.training) return plan_layer_list(w, gpu);
  return w.training ? plan_prefetch(w, gpu).plan : plan_inference(w, gpu);
}

}  // namespace dtsim::workloads
