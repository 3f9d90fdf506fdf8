// Activation memory of a training step (activation_memory.hpp, memory_plan.hpp's layer_activation_bytes).
#include "workloads/activation_memory.hpp"

#include <algorithm>

#include "topology/error.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"

namespace dtsim::workloads {
namespace detail {
namespace {

constexpr double kMaskBytes = 1.0;   // a dropout mask stores one byte per element (Korthikanti et al.)
constexpr double kLossBytes = 4.0;   // the cross-entropy loss keeps the logits in fp32

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



// A linear layer's input as its backward keeps it (for the weight gradient): under fp8 training (Transformer
// Engine, training.fp8) the fp8 copy its forward GEMM cast, one byte (transformer_engine/pytorch/module/linear.py
// and layernorm_linear.py, layernorm_mlp.py: `saved_inputmat = inputmat` when fp8, the 16-bit `inputmat_no_fp8`
// otherwise); the attention core's Q, K, V and the activations' inputs stay 16-bit.
double gemm_input_bytes(const TrainingSpec& t) {
  return t.fp8 != Fp8::None ? bytes_per_element(low_gemm_precision(t.fp8)) : activation_element_bytes(t.precision);
}

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
  // recompute: op (torchtitan's per-op checkpointing of a Llama block): what it keeps, as its eager policy caches
  // it. The layer input (the checkpoint's: replicated, divided by sequence parallelism); the down projection's
  // output (w2, the seventh matmul, an odd one: under TP the row-parallel partial sums over the whole sequence,
  // never divided); the outputs of Q's and V's projections, of the attention core (with its statistics:
  // `scores`) and of the gate projection (w1), split by TP; under sequence parallelism the two reduce-scatters'
  // outputs (collectives it keeps), sbh / tp each.
  double op_replicated = 0;
  double op_whole = 0;
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
  const double g = gemm_input_bytes(t);   // the QKV, output-projection, up and down projections' inputs
  const double h = m.hidden;
  const double mlp_tensors = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  const double mlp_width = moe ? static_cast<double>(m.shared_experts) * m.expert_width() : m.ffn_hidden;
  // Bytes per element across the MLP's tensors of width f: the down projection's input is a GEMM input.
  const double mlp_bytes = (mlp_tensors - 1.0) * e + g;
  const double split_bytes = e * (m.q_dim() + 2.0 * m.kv_dim()) + g * m.value_dim() + mlp_bytes * mlp_width;
  // A fused attention core keeps no scores, only the softmax statistics (fp32 per row) for its backward.
  const double dropped = m.attention_dropout > 0.0 ? e + kMaskBytes : 0.0;   // the mask and dropout output
  const double scores = fused(t.attention) ? sb * m.heads * bytes_per_element(Precision::Fp32)
                                           : sb * m.seq_length * m.heads * (e + dropped);
  const double masks = m.hidden_dropout > 0.0 ? 2.0 * kMaskBytes : 0.0;
  double replicated = sb * h * (2.0 * e + 2.0 * g + masks);   // two norm inputs, the QKV and MLP inputs
  LayerTerms l{0, sb * split_bytes, scores};
  l.norms = ((m.mla() ? 1.0 : 0.0) + (moe ? 1.0 : 0.0)) * e * sb * h;
  l.qkv = sb * e * (m.q_dim() + 2.0 * m.kv_dim());
  // MLA keeps its latents, the up projections' inputs (replicated, as the down projections' outputs are).
  if (m.mla()) replicated += sb * e * (static_cast<double>(m.q_lora_rank) + m.kv_lora_rank + m.rope_head_dim);
  l.mlp = sb * mlp_bytes * mlp_width;
  l.op_replicated = sb * e * h;
  l.op_whole = sb * e * h;
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
// with SP), and the logits the loss keeps in fp32, vocab-parallel: 4 sbV / t (Transformer Engine's fused loss
// keeps them in the 16-bit precision; Megatron-Core's native one keeps fp32 probabilities as the unfused does).
double head_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp) {
  const double sb = static_cast<double>(m.seq_length) * t.micro_batch;
  const double inputs = 2.0 * activation_element_bytes(t.precision) * sb * m.hidden / (t.sequence_parallel ? tp : 1);
  const double logits = te_loss(t) ? activation_element_bytes(t.precision) : kLossBytes;
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
  for (int l = std::max(first, t.offload_layers); l < first + layers; ++l)   // offloaded layers keep nothing here
    bytes += layer_activation_bytes(m, t, w.plan.tp, t.micro_batch, m.moe_layer(l), w.plan.expert_tp()).value();
  if (v == 0) bytes += embedding_activation_bytes(w.model, t, w.plan.tp);
  if (v == last_virtual_stage(w.plan)) bytes += head_activation_bytes(w.model, t, w.plan.tp);
  return bytes;
}

}  // namespace

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
  // Offloading: the layer whose copy to or from the host is under way is also held (Transformer Engine's
  // cpu_offload keeps a layer's tensors until its copy completes, and reloads one layer ahead of its backward).
  if (w.training->offload_layers > 0)
    peak += largest_layer_activation_bytes(as_loaded(w), *w.training, p.tp, w.training->micro_batch, p.expert_tp()).value() / p.cp;
  return {Bytes(peak), peak_in_flight(order)};
}


}  // namespace detail


Bytes layer_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp, int micro_batch, bool moe, int etp) {
  DTSIM_ASSERT(tp >= 1 && micro_batch >= 1 && etp >= 1, "activation bytes of a checked plan");
  using namespace detail;
  const LayerTerms l = layer_terms(m, t, micro_batch, moe, etp);
  const double sp = t.sequence_parallel ? tp : 1.0;   // divides what TP alone leaves replicated
  switch (t.recompute) {
    case Recompute::None: return Bytes(l.replicated / sp + (l.split + l.scores) / tp);
    case Recompute::Selective: return Bytes(selective_activation_bytes(l, t.recompute_modules, moe, m.mla(), sp, tp));
    case Recompute::Op: {
      const double reduce_scatters = t.sequence_parallel && tp > 1 ? 2.0 * l.op_whole / tp : 0.0;
      return Bytes(l.op_replicated / sp + l.op_whole + reduce_scatters + (l.op_split + l.scores) / tp);
    }
    case Recompute::Full: {
      const double sbh = static_cast<double>(m.seq_length) * micro_batch * m.hidden;
      return Bytes(activation_element_bytes(t.precision) * sbh / sp);   // the layer input only
    }
  }
  DTSIM_ASSERT(false, "recompute mode missing from layer_activation_bytes");
}

Bytes largest_layer_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp, int micro_batch, int etp) {
  const Bytes dense = layer_activation_bytes(m, t, tp, micro_batch, false, etp);
  return m.moe() ? std::max(dense, layer_activation_bytes(m, t, tp, micro_batch, true, etp)) : dense;
}

}  // namespace dtsim::workloads
