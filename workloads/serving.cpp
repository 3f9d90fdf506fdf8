#include "workloads/serving.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <unordered_map>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"

namespace dtsim::workloads {
namespace {

constexpr double kActivationBytes = 2;   // 16-bit activations

// Weights of 16 or 32 bits: GEMMs compute in the weights' own precision.
bool computes_in_own_precision(Precision p) {
  return p == Precision::Fp32 || p == Precision::Bf16 || p == Precision::Fp16;
}

Precision sixteen_bit(const topology::GpuSpec& gpu) {
  return gpu.peak_for(Precision::Bf16) ? Precision::Bf16 : Precision::Fp16;
}

// A GEMM of `tokens` rows against a (k x n) weight held in `weight_bytes` per element.
Kernel gemm(KernelClass kind, double tokens, double n, double k, double weight_bytes) {
  Kernel g;
  g.kind = kind;
  g.flops = FlopCount(2.0 * tokens * n * k);
  g.bytes = Bytes(n * k * weight_bytes + (tokens * k + tokens * n) * kActivationBytes);
  g.gemm = GemmShape{tokens, n, k, 1};
  // Weights narrower than 16 bits: converted per thread block (counted only where the GEMM computes in a 16-bit
  // precision, compute_model.hpp; a W8A8 GEMM feeds them to the tensor cores as they are).
  g.narrow_weights = weight_bytes < 2;
  if (g.narrow_weights) g.dequant_elements = n * k * std::ceil(tokens / kDequantTileRows);
  return g;
}

// Tokens computed by `passes` together, and the rows that sample a next token.
double batch_tokens(std::span<const ServingPass> passes) {
  double tokens = 0;
  for (const ServingPass& p : passes) tokens += static_cast<double>(p.batch) * p.new_tokens;
  return tokens;
}
double sampled_rows(std::span<const ServingPass> passes) {
  double rows = 0;
  for (const ServingPass& p : passes) rows += logit_rows(p);
  return rows;
}

Kernel stream(KernelClass kind, double bytes) {
  Kernel s;
  s.kind = kind;
  s.bytes = Bytes(bytes);
  return s;
}

// A batched GEMM: `batch` independent (rows x k) by (k x n) products, each with its own weight (MLA's per-head
// absorptions, vLLM's torch.bmm over heads; an MoE layer's grouped GEMM over the experts hit, rows each).
Kernel batched_gemm(KernelClass kind, double rows, double n, double k, double batch, double weight_bytes) {
  Kernel g = gemm(kind, rows, n, k, weight_bytes);
  g.flops = FlopCount(2.0 * rows * n * k * batch);
  g.bytes = Bytes(batch * (n * k * weight_bytes + rows * (k + n) * kActivationBytes));
  g.gemm = GemmShape{rows, n, k, batch};
  if (g.narrow_weights) g.dequant_elements = batch * n * k * std::ceil(rows / kDequantTileRows);
  return g;
}

// One varlen launch for every pass (vLLM's paged attention, flash-attention's varlen kernel): each pass's work is
// its own roofline, the launch is paid once.
void attention_kernels(std::vector<Kernel>& out, const ModelSpec& m, const InferenceSpec& inf, int tp,
                       std::span<const ServingPass> passes) {
  for (const ServingPass& pass : passes) {
    out.push_back(serving_attention_kernel(m, inf, tp, pass));
    out.back().launches = &pass == &passes.front() ? 1 : 0;
  }
}

// Multi-head latent attention as vLLM runs it (vllm/model_executor/layers/attention/mla_attention.py, after
// DeepSeek-V2, arXiv:2405.04434): the down projections of Q (q_lora_rank) and of the latent KV with its rope key
// (kv_lora_rank + rope_head_dim) replicated on every GPU of the TP group (ReplicatedLinear), the latent written to
// the cache, the two latents' norms, Q's up projection split over tp by heads. Decode tokens take the
// data-movement friendly path: q_nope absorbed into the latent space by W_UK (a GEMM a head), attention as MQA over
// the cached latent (heads of kv_lora_rank + rope_head_dim sharing one key), W_UV after. Prompt tokens take the
// compute friendly one: kv_b up-projects their latents to K and V (heads of head_dim + rope_head_dim and
// v_head_dim), then MHA. A chunk's earlier context, which vLLM up-projects again chunk by chunk, is not counted.
void mla_attention(std::vector<Kernel>& out, const ModelSpec& m, const InferenceSpec& inf, int tp,
                   std::span<const ServingPass> passes) {
  const double w = bytes_per_element(inf.weights);
  const double h = m.hidden, heads = static_cast<double>(m.heads) / tp;
  const double lq = m.q_lora_rank, lkv = m.kv_lora_rank, r = m.rope_head_dim, nope = m.head_dim(), v = m.v_head_dim;
  double decode = 0, prompt = 0;
  for (const ServingPass& p : passes) (p.phase == ServingPhase::Decode ? decode : prompt) += static_cast<double>(p.batch) * p.new_tokens;
  const double tokens = decode + prompt;
  Kernel down = gemm(KernelClass::QkvGemm, tokens, lq + lkv + r, h, w);
  down.bytes += Bytes(tokens * (lkv + r) * bytes_per_element(inf.kv_cache));   // the new tokens' latents cached
  out.push_back(down);
  out.push_back(stream(KernelClass::LayerNorm, 2 * tokens * (lq + lkv) * kActivationBytes));
  out.push_back(gemm(KernelClass::MlaUpGemm, tokens, heads * (nope + r), lq > 0 ? lq : h, w));
  // W_UK and W_UV: vLLM keeps 16-bit copies of them, dequantised at load (process_weights_after_loading).
  if (decode > 0) out.push_back(batched_gemm(KernelClass::MlaUpGemm, decode, lkv, nope, heads, kActivationBytes));
  if (prompt > 0) out.push_back(gemm(KernelClass::MlaUpGemm, prompt, heads * (nope + v), lkv, w));      // kv_b
  attention_kernels(out, m, inf, tp, passes);
  if (decode > 0) out.push_back(batched_gemm(KernelClass::MlaUpGemm, decode, v, lkv, heads, kActivationBytes));
  out.push_back(gemm(KernelClass::ProjGemm, tokens, h, heads * v, w));
}

// An MLP of `ffn` columns on this GPU: up (and gate), activation, down.
void dense_mlp(std::vector<Kernel>& out, double tokens, double h, double ffn, bool swiglu, double weight_bytes) {
  const double up = swiglu ? 2 * ffn : ffn;
  out.push_back(gemm(KernelClass::MlpUpGemm, tokens, up, h, weight_bytes));
  out.push_back(stream(KernelClass::Activation, (up + ffn) * tokens * kActivationBytes));
  out.push_back(gemm(KernelClass::MlpDownGemm, tokens, h, ffn, weight_bytes));
}

}  // namespace

std::string_view to_string(ServingPhase p) { return p == ServingPhase::Prefill ? "prefill" : "decode"; }

double speculative_tokens_per_round(const SpeculativeDecoding& s) {
  DTSIM_ASSERT(s.tokens >= 1 && s.acceptance >= 0.0 && s.acceptance <= 1.0, "a checked speculative spec");
  double sum = 0, term = 1;   // 1 + a + ... + a^k: the closed form loses its digits as a nears 1
  for (int i = 0; i <= s.tokens; ++i, term *= s.acceptance) sum += term;
  return sum;
}

Seconds serving_host_step(const InferenceSpec& inf) {
  return inf.inside_iteration ? Seconds(0) : compute_constants().serving_step_overhead;
}

double logit_rows(const ServingPass& p) {
  if (p.phase == ServingPhase::Decode) return static_cast<double>(p.batch) * p.new_tokens;
  return p.samples ? p.batch : 0.0;
}

ServingPass serving_pass(const InferenceSpec& inf, ServingPhase phase) {
  DTSIM_ASSERT(inf.prompt_tokens >= 1 && (phase == ServingPhase::Prefill || inf.output_tokens >= 1),
               "a serving pass of a resolved inference spec");
  if (phase == ServingPhase::Prefill) {
    const CachedPrefix cached = cached_prefix(inf, inf.prompt_tokens);
    return {phase, inf.batch, inf.prompt_tokens - cached.gpu - cached.host, inf.prompt_tokens};
  }
  // Decode step j (0-based) attends over prompt + j + 1 tokens; the mean over the output's steps.
  return {phase, inf.batch, 1, inf.prompt_tokens + (inf.output_tokens + 1) / 2};
}

Sharding serving_sharding(const Workload& w, const topology::GpuSpec& gpu) {
  const ParallelPlan& plan = w.plan;
  return Sharding{.tp = plan.tp, .ep = plan.ep, .etp = serving_expert_tp(plan),
                  .attention_dp = attention_data_parallel(w) ? plan.dp : 1,
                  .dispatch_bytes = dispatch_bytes_per_element(*w.inference, gpu)};
}

ExpertExchange expert_exchange(const Workload& w, const topology::GpuSpec& gpu, double tokens) {
  DTSIM_ASSERT(attention_data_parallel(w) && tokens > 0, "an exchange under attention data parallelism");
  const ModelSpec& m = w.model;
  // The busiest receiver's copies: never fewer than the k copies of its own tokens each GPU sends (ep = dp, so the
  // mean a GPU receives is what it sends, and serving_expert_load rounds the busiest up from the mean).
  const double copies = serving_expert_load(m, tokens * w.plan.dp, w.plan.ep).rows;
  return {Bytes(copies * m.hidden * dispatch_bytes_per_element(*w.inference, gpu)),
          Bytes(copies * m.hidden * kActivationBytes)};
}

double dispatch_bytes_per_element(const InferenceSpec& inf, const topology::GpuSpec& gpu) {
  const Precision p = serving_compute_precision(inf, gpu);
  if (p == Precision::Fp8) return 1.0 + 4.0 / 128;   // DeepEP's fp8 dispatch: an fp32 scale per 128 channels
  return low_float(p) ? bytes_per_element(p) : kActivationBytes;   // MXFP8, NVFP4, MXFP4: their own block scales
}

Precision serving_compute_precision(const InferenceSpec& inf, const topology::GpuSpec& gpu) {
  if (computes_in_own_precision(inf.weights)) return inf.weights;
  if ((low_float(inf.weights) || inf.weights == Precision::Int8) && gpu.peak_for(inf.weights)) return inf.weights;   // W8A8 / W4A4 on the GPU's own units
  return sixteen_bit(gpu);
}

std::vector<Kernel> serving_layer_kernels(const ModelSpec& m, const InferenceSpec& inf, int tp, const ServingPass& pass) {
  return serving_layer_kernels(m, inf, tp, std::span(&pass, 1));
}

std::vector<Kernel> serving_layer_kernels(const ModelSpec& m, const InferenceSpec& inf, int tp,
                                          std::span<const ServingPass> passes) {
  return serving_layer_kernels(m, inf, Sharding{.tp = tp}, passes, false);
}

std::vector<Kernel> serving_layer_kernels(const ModelSpec& m, const InferenceSpec& inf, const Sharding& s,
                                          std::span<const ServingPass> passes, bool moe) {
  const int tp = s.tp;
  DTSIM_ASSERT(tp >= 1 && !passes.empty() && (!moe || m.moe()), "serving kernels of a checked plan");
  const double w = bytes_per_element(inf.weights);
  const double kv = bytes_per_element(inf.kv_cache);
  const double tokens = batch_tokens(passes);
  const double h = m.hidden;
  const double kv_dim = static_cast<double>(m.kv_dim()) / tp;
  const double heads = static_cast<double>(m.heads) / tp;
  const double q_dim = heads * m.head_dim();
  const double row = tokens * h * kActivationBytes;   // one activation row per token, whole hidden

  std::vector<Kernel> out;
  out.push_back(stream(KernelClass::LayerNorm, 2 * row));
  if (m.mla()) {
    mla_attention(out, m, inf, tp, passes);
  } else {
    Kernel qkv = gemm(KernelClass::QkvGemm, tokens, q_dim + 2 * kv_dim, h, w);
    qkv.bytes += Bytes(tokens * 2 * kv_dim * kv);   // the new tokens' K and V appended to the cache
    out.push_back(qkv);
    attention_kernels(out, m, inf, tp, passes);
    out.push_back(gemm(KernelClass::ProjGemm, tokens, h, q_dim, w));
  }
  out.push_back(stream(KernelClass::Residual, 3 * row));
  out.push_back(stream(KernelClass::LayerNorm, 2 * row));
  if (moe) {
    const auto experts = serving_moe_kernels(m, inf, s, tokens);
    out.insert(out.end(), experts.begin(), experts.end());
  } else {
    dense_mlp(out, tokens, h, static_cast<double>(m.ffn_hidden) / tp, m.activation == Activation::Swiglu, w);
  }
  out.push_back(stream(KernelClass::Residual, 3 * row));
  return out;
}

double expected_normal_maximum(int n) {
  DTSIM_ASSERT(n >= 1, "a maximum over at least one draw");
  if (n == 1) return 0.0;
  // A function of n alone, asked for at every new iteration size of a stream: computed once per n and thread.
  thread_local std::unordered_map<int, double> known;
  if (const auto it = known.find(n); it != known.end()) return it->second;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx; the integrand is negligible outside [-8, 8 + sqrt(2 ln n)].
  constexpr double kStep = 1e-3;
  const double hi = 8.0 + std::sqrt(2.0 * std::log(static_cast<double>(n)));
  double sum = 0;
  for (double x = -8.0; x <= hi; x += kStep) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    sum += x * n * phi * std::pow(cdf, n - 1);
  }
  return known.emplace(n, sum * kStep).first->second;
}

ExpertLoad serving_expert_load(const ModelSpec& m, double tokens, int ep) {
  DTSIM_ASSERT(m.moe() && ep >= 1 && m.experts % ep == 0 && tokens > 0, "expert load of a checked MoE plan");
  const double experts = m.experts, k = m.experts_per_token, local = experts / ep;
  const double z = expected_normal_maximum(ep);
  const double hit = 1.0 - std::pow(1.0 - k / experts, tokens);
  const double hit_mean = local * hit;
  const double hit_spread = std::sqrt(local * hit * (1.0 - hit));
  const double share = 1.0 / ep;
  const double rows_mean = tokens * k * share;
  const double rows_spread =
      experts > 1 ? std::sqrt(tokens * k * share * (1.0 - share) * (experts - k) / (experts - 1.0)) : 0.0;
  // Some GPU gets at least its whole share of the copies, rounded up (pigeonhole); none more than every token's
  // copies that its experts can take; and a GPU computes on no expert without a row.
  const double most = tokens * std::min(k, local);
  const double rows = std::min(most, std::max({rows_mean + z * rows_spread, rows_mean * m.expert_imbalance,
                                               std::ceil(rows_mean - 1e-9)}));
  return {std::min({local, hit_mean + z * hit_spread, rows}), rows};
}

std::vector<Kernel> serving_moe_kernels(const ModelSpec& m, const InferenceSpec& inf, const Sharding& s, double tokens) {
  DTSIM_ASSERT(m.moe() && s.ep * s.etp == s.tp * s.attention_dp && tokens > 0, "an MoE layer over a checked serving plan");
  const double w = bytes_per_element(inf.weights);
  const double h = m.hidden, experts = m.experts, k = m.experts_per_token;
  const double ffn = static_cast<double>(m.expert_width()) / s.etp;
  const bool swiglu = m.activation == Activation::Swiglu;
  const double up = swiglu ? 2 * ffn : ffn;
  // Under attention data parallelism every replica's tokens reach the experts: a GPU's experts are loaded by
  // the tokens of all attention_dp GPUs.
  const bool exchanged = s.attention_dp > 1;
  const ExpertLoad load = serving_expert_load(m, tokens * s.attention_dp, s.ep);
  const double rows = load.rows, hit = std::max(load.experts, 1.0);

  std::vector<Kernel> out;
  out.push_back(gemm(KernelClass::Router, tokens, experts, h, kActivationBytes));
  // The 16-bit router logits read; the top-k ids and weights written (4 B each), as vLLM's topk_softmax kernel.
  out.push_back(stream(KernelClass::RouterTopk, tokens * (experts * kActivationBytes + k * 8.0)));
  // No copies made: moe_align_block_size sorts the (token, expert) ids by expert, and the grouped GEMM gathers
  // each copy's row as it reads it (vllm/model_executor/layers/fused_moe/fused_moe.py). Exchanged, each token's
  // row is read and written once, quantised, to the send buffer (DeepEP's low-latency dispatch), which the NIC
  // reads once for each GPU it goes to.
  out.push_back(stream(KernelClass::TokenPermute,
                       exchanged ? tokens * h * (kActivationBytes + s.dispatch_bytes) + 3.0 * tokens * k * 4.0
                                 : 3.0 * tokens * k * 4.0));
  out.push_back(batched_gemm(KernelClass::ExpertUpGemm, rows / hit, up, h, hit, w));
  out.push_back(stream(KernelClass::Activation, (up + ffn) * rows * kActivationBytes));
  out.push_back(batched_gemm(KernelClass::ExpertDownGemm, rows / hit, h, ffn, hit, w));
  // The outputs summed back per token with the router's weights: the local copies (rows), or, exchanged, the k
  // copies each token gets back from its experts' GPUs.
  out.push_back(stream(KernelClass::TokenUnpermute, ((exchanged ? tokens * k : rows) + tokens) * h * kActivationBytes));
  if (m.shared_experts > 0)
    dense_mlp(out, tokens, h, static_cast<double>(m.shared_experts) * m.expert_width() / s.tp, swiglu, w);
  return out;
}

Kernel serving_attention_kernel(const ModelSpec& m, const InferenceSpec& inf, int tp, const ServingPass& pass) {
  DTSIM_ASSERT(tp >= 1 && pass.batch >= 1 && pass.new_tokens >= 1 && pass.context >= pass.new_tokens, "a serving pass");
  if (m.mla()) return mla_attention_kernel(m, inf, tp, pass);
  const double kv_dim = static_cast<double>(m.kv_dim()) / tp;
  const double heads = static_cast<double>(m.heads) / tp;
  const double q_dim = heads * m.head_dim();
  const double pass_tokens = static_cast<double>(pass.batch) * pass.new_tokens;
  Kernel attention;
  attention.kind = KernelClass::FlashAttention;
  attention.flops = FlopCount(4.0 * pass_tokens * static_cast<double>(pass.context) * q_dim);
  attention.bytes = Bytes(2.0 * pass_tokens * q_dim * kActivationBytes +
                          static_cast<double>(pass.batch) * pass.context * 2 * kv_dim * bytes_per_element(inf.kv_cache));
  attention.attention = AttentionShape{pass.batch * heads, static_cast<double>(pass.context),
                                       static_cast<double>(m.head_dim()), pass.phase == ServingPhase::Prefill};
  if (pass.new_tokens < pass.context) attention.attention->queries = pass.new_tokens;   // a chunk after cached tokens
  return attention;
}

Kernel mla_attention_kernel(const ModelSpec& m, const InferenceSpec& inf, int tp, const ServingPass& pass) {
  DTSIM_ASSERT(m.mla() && tp >= 1 && pass.batch >= 1 && pass.context >= pass.new_tokens, "an MLA serving pass");
  const double heads = static_cast<double>(m.heads) / tp;
  const double lkv = m.kv_lora_rank, r = m.rope_head_dim, nope = m.head_dim(), v = m.v_head_dim;
  const double queries = static_cast<double>(pass.batch) * pass.new_tokens;
  const double keys = static_cast<double>(pass.batch) * pass.context;   // every sequence's cached tokens
  const double context = pass.context;
  Kernel a;
  a.kind = KernelClass::FlashAttention;
  if (pass.phase == ServingPhase::Decode) {
    // MQA over the latent: scores over kv_lora + rope, values of kv_lora; the latent read once for all the heads.
    a.flops = FlopCount(2.0 * queries * context * heads * (2 * lkv + r));
    a.bytes = Bytes(queries * heads * (2 * lkv + r) * kActivationBytes + keys * (lkv + r) * bytes_per_element(inf.kv_cache));
    a.attention = AttentionShape{pass.batch * heads, context, lkv + r, false};
  } else {
    // MHA over the up-projected keys and values (kv_b's output, 16-bit) and the cached latents of earlier tokens.
    a.flops = FlopCount(2.0 * queries * context * heads * (nope + r + v));
    a.bytes = Bytes(queries * heads * (nope + r + v) * kActivationBytes + keys * heads * (nope + r + v) * kActivationBytes);
    a.attention = AttentionShape{pass.batch * heads, context, nope + r, true};
    if (pass.new_tokens < pass.context) a.attention->queries = pass.new_tokens;
  }
  return a;
}

Kernel serving_embedding_kernel(const ModelSpec& m, double tokens) {
  return stream(KernelClass::Embedding, 2 * tokens * m.hidden * kActivationBytes);
}

std::vector<Kernel> serving_logits_kernels(const ModelSpec& m, const InferenceSpec& inf, int tp,
                                           std::span<const ServingPass> passes) {
  // Only each sequence's last token is projected to the vocabulary (the next token's distribution).
  const double rows = sampled_rows(passes);
  if (rows == 0) return {};
  return {stream(KernelClass::LayerNorm, 2 * rows * m.hidden * kActivationBytes),
          gemm(KernelClass::Logits, rows, static_cast<double>(m.logits_width()) / tp, m.hidden,
               bytes_per_element(inf.weights))};
}

StepGraph generate_serving_step(const Workload& w, const topology::GpuSpec& gpu, const ServingPass& pass) {
  return generate_serving_step(w, gpu, std::span(&pass, 1));
}

StepGraph generate_serving_step(const Workload& w, const topology::GpuSpec& gpu, std::span<const ServingPass> passes) {
  DTSIM_ASSERT(w.inference.has_value(), "generate_serving_step needs an inference workload");
  const InferenceSpec& inf = *w.inference;
  const ModelSpec& m = w.model;
  const ParallelPlan& plan = w.plan;
  const Precision precision = serving_compute_precision(inf, gpu);
  const Bytes activation(batch_tokens(passes) * m.hidden * kActivationBytes);
  const Sharding shard = serving_sharding(w, gpu);
  // The attention block (norm to projection) and the MLP block (residual to residual, the experts' in an MoE
  // layer): each ends in a row-parallel GEMM whose partial sums the TP group all-reduces.
  const auto blocks = [&](bool moe) {
    const auto layer = serving_layer_kernels(m, inf, shard, passes, moe);
    const auto split = std::ranges::find(layer, KernelClass::ProjGemm, &Kernel::kind) + 1;
    return std::pair{std::vector<Kernel>(layer.begin(), split), std::vector<Kernel>(split, layer.end())};
  };
  const auto [attention_block, mlp_block] = blocks(false);
  const std::vector<Kernel> moe_block = m.moe() ? blocks(true).second : std::vector<Kernel>{};
  // Under attention data parallelism the MoE block runs in three parts around the tokens' two exchanges: to the
  // experts' GPUs after the permute (dispatch), and back before the unpermute (combine).
  const bool exchanged = shard.attention_dp > 1;
  const auto up = std::ranges::find(moe_block, KernelClass::ExpertUpGemm, &Kernel::kind);
  const auto back = std::ranges::find(moe_block, KernelClass::TokenUnpermute, &Kernel::kind);
  const std::vector<Kernel> routed(moe_block.begin(), up), experts(up, back), combined(back, moe_block.end());
  const ExpertExchange exchange = exchanged ? expert_exchange(w, gpu, batch_tokens(passes)) : ExpertExchange{};

  StepGraph g{w, Placement(plan), Granularity::Layer, 1, {}};
  const std::vector<int> per_stage = stage_layers(plan, m.layers);
  int first_layer = 0;
  for (int stage = 0; stage < plan.pp; ++stage) {
    std::vector<Op> ops;
    auto add = [&](OpBody body) {
      Deps deps;
      if (!ops.empty()) deps.push_back(static_cast<std::uint32_t>(ops.size() - 1));
      ops.push_back(Op{std::move(body), std::move(deps)});
    };
    auto compute = [&](Scope scope, int layer_index, const std::vector<Kernel>& kernels, Seconds host = Seconds(0)) {
      ComputeOp c;
      c.duration = host;
      c.scope = scope;
      c.layer = layer_index;
      c.micro_batch = 0;
      c.flops = total_flops(kernels);
      c.bytes = total_bytes(kernels);
      // Serving kernels at small batches are bound by HBM whatever their kind (a decode GEMM reads its weights for a
      // few rows): the op's memory time, which the energy model draws at the memory-bound power, is every kernel
      // on the memory side of its roofline.
      for (const Kernel& k : kernels) {
        const KernelTiming t = kernel_timing(k, gpu, precision);
        c.duration += t.time;
        if (t.memory_bound) c.memory_time += t.time;
      }
      add(c);
    };
    auto all_reduce = [&](int layer_index) {
      if (plan.tp > 1) add(CollectiveOp{CollectiveKind::AllReduce, Group::Tp, activation, CommPurpose::TensorParallel,
                                        layer_index, 0});
    };
    const PipeTag tag{0, 0, Pass::Forward};
    if (stage > 0) add(RecvOp{stage - 1, activation, tag});
    else compute(Scope::Embedding, -1, {serving_embedding_kernel(m, batch_tokens(passes))},
                 serving_host_step(inf));   // the iteration's host work before its first kernel
    auto all_to_all = [&](int layer_index, Bytes bytes) {
      add(CollectiveOp{CollectiveKind::AllToAll, Group::Ep, bytes, CommPurpose::ExpertParallel, layer_index, 0});
    };
    for (int l = first_layer; l < first_layer + per_stage[static_cast<std::size_t>(stage)]; ++l) {
      compute(Scope::Layer, l, attention_block);
      all_reduce(l);
      if (m.moe_layer(l) && exchanged) {
        compute(Scope::Layer, l, routed);
        all_to_all(l, exchange.dispatch);
        compute(Scope::Layer, l, experts);
        all_to_all(l, exchange.combine);
        compute(Scope::Layer, l, combined);
        continue;   // tp 1: no all-reduce
      }
      compute(Scope::Layer, l, m.moe_layer(l) ? moe_block : mlp_block);
      all_reduce(l);
    }
    first_layer += per_stage[static_cast<std::size_t>(stage)];
    if (stage + 1 < plan.pp) {
      add(SendOp{stage + 1, activation, tag});
    } else {
      const auto logits = serving_logits_kernels(m, inf, plan.tp, passes);
      if (!logits.empty()) compute(Scope::Logits, -1, logits);
      // Vocabulary-parallel logits gathered for sampling: each rank's slice of every sampling sequence's last token.
      if (plan.tp > 1 && !logits.empty())
        add(CollectiveOp{CollectiveKind::AllGather, Group::Tp,
                         Bytes(sampled_rows(passes) * m.logits_width() * kActivationBytes),
                         CommPurpose::TensorParallel, -1, 0});
    }
    g.classes.push_back(stage_class(g.placement, stage, std::move(ops)));
  }
  return g;
}

}  // namespace dtsim::workloads
