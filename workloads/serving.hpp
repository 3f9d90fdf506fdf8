// One serving pass as a StepGraph: a static batch of sequences run forward once through every pipeline stage,
// either prefilling their prompts (every prompt token at once, causal attention over the prompt) or decoding one
// token each (attention over the KV cache the sequence holds). The same engines play it as a training step:
// the pipeline's activations cross the topology as sends, and each layer's two tensor-parallel all-reduces
// (after the attention's output projection and after the MLP, Megatron's row-parallel layers) run on it.
//
// Weights are read in `inference.weights`: 16- and 32-bit weights compute in their own precision; fp8 and int8
// compute in that precision on a GPU with a tensor peak for it (W8A8: TensorRT-LLM's fp8, SmoothQuant's int8),
// otherwise, like int4, they are dequantised inside a 16-bit GEMM (weight-only kernels, Marlin and AWQ class):
// the GEMM reads the narrow weights, computes at the 16-bit peak, and converts the weights on the vector units
// (Kernel::dequant_elements, timed in compute_model.hpp). The KV cache is read and written in `inference.kv_cache`; activations are 16-bit.
#pragma once

#include <span>
#include <vector>

#include "topology/catalog.hpp"
#include "workloads/kernels.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::workloads {

enum class ServingPhase { Prefill, Decode };
std::string_view to_string(ServingPhase p);

// What one pass computes, per data-parallel replica: `batch` sequences each adding `new_tokens` tokens (the
// prompt in prefill, 1 in decode) to a KV cache that then holds `context` tokens.
struct ServingPass {
  ServingPhase phase = ServingPhase::Decode;
  int batch = 1;
  int new_tokens = 1;
  int context = 1;
  bool samples = true;   // its last token is projected to the vocabulary (false: a prompt chunk short of the end)

  bool operator==(const ServingPass&) const = default;
};

// The tokens of a `prompt_tokens`-token prompt a prefix cache holds when `hit` of its tokens are cached
// (inference.prefix_cache_hit): never the prompt's last token, which is computed to sample the first output
// token, and of the rest whole blocks of `block_tokens` (vLLM matches and keeps the cache by block): a full hit on
// a prompt of whole blocks recomputes its last block.
int prefix_cached_tokens(int prompt_tokens, double hit, int block_tokens);

// A prompt's tokens the prefix cache holds: on the GPUs (prefix_cached_tokens of inference.prefix_cache_hit), and
// beyond them in host memory (inference.kv_offload.hit of its tokens, capped as the GPU's hit is, in whole blocks),
// loaded instead of prefilled.
struct CachedPrefix {
  int gpu = 0;
  int host = 0;
};
CachedPrefix cached_prefix(const InferenceSpec& inf, int prompt_tokens);
// The time to load `tokens` tokens' KV cache from host memory into a replica's GPUs (linear in them): each GPU its share (its
// stage's layers, its heads: the largest stage's) over its own link to host memory (the GPU's cpu_link, else its
// PCIe host_link) at the link's efficiency (PCIe Gen5: 63 x 0.8 = 50.4 GB/s, where vLLM's offloading connector
// measures "up to about 50GB/s" a direction on an H100 with 2 MB blocks: blog.vllm.ai 2026-01-08).
Seconds host_load_time(const Workload& w, const topology::GpuSpec& gpu, double tokens);
// The host memory `tokens` tokens' offloaded KV cache take for one replica (a speculative draft's with the
// target's): every TP rank keeps its own blocks (vLLM's --kv-offloading-size is "summed across all TP ranks"), so
// MLA's latent, whole on each rank, counts tp times.
Bytes host_cache_bytes(const Workload& w, double tokens);
// Refuses a host tier (inference.kv_offload.host_GB) that cannot hold `tokens` tokens loaded at once (a stream's
// largest hit of one request, a static batch's hits of every sequence).
void check_host_cache(const Workload& w, long long tokens);

// Tokens a speculative round yields per sequence on average: (1 - a^(k + 1)) / (1 - a), k + 1 at a = 1.
double speculative_tokens_per_round(const SpeculativeDecoding& s);
// The host work an iteration waits for before its first kernel (serving_step_overhead): none for passes run
// inside another workload's iteration (a speculative draft's: vLLM V1 proposes inside execute_model, TensorRT-LLM
// in its C++ runtime).
Seconds serving_host_step(const InferenceSpec& inf);
// Rows a pass projects to the vocabulary: each sequence's last token when it samples; a decode pass of several
// tokens (a speculative verify) every one of them, each drafted token's distribution being checked.
double logit_rows(const ServingPass& p);

// The pass for `phase` of `inf`: prefill of the prompts (but their cached prefix, prefix_cached_tokens), or the decode step at the middle of the output (the
// KV cache's mean length over the decode steps: a step's time is affine in it, so this is the mean step).
ServingPass serving_pass(const InferenceSpec& inf, ServingPhase phase);

// The shard a serving GPU holds under `w`'s plan: its tp, and its ep and etp (the experts over the same GPUs,
// or under attention data parallelism over all the replicas' GPUs, attention_dp = dp).
Sharding serving_sharding(const Workload& w, const topology::GpuSpec& gpu);
// Under attention data parallelism, an MoE layer's two exchanges for `tokens` tokens on each GPU, as nccl-tests
// counts an all-to-all's buffer: the busiest GPU's token copies (the most its experts receive of all the GPUs'
// tokens, serving_expert_load), dispatched in dispatch_bytes_per_element, combined 16-bit.
struct ExpertExchange {
  Bytes dispatch;
  Bytes combine;
};
ExpertExchange expert_exchange(const Workload& w, const topology::GpuSpec& gpu, double tokens);
// The bytes an exchanged token copy's element takes on its way to its experts (attention data parallelism): where
// the experts' GEMMs compute in a low-precision float the dispatch quantises for them (DeepSeek-V3 and DeepEP's
// low-latency kernels: fp8 with a 4-byte scale per 128 channels; MXFP8, NVFP4, MXFP4 with their block scales),
// else 16-bit.
double dispatch_bytes_per_element(const InferenceSpec& inf, const topology::GpuSpec& gpu);

// The precision the GEMMs of `inf` compute in on `gpu` (see above).
Precision serving_compute_precision(const InferenceSpec& inf, const topology::GpuSpec& gpu);

// One layer's kernels on one GPU (tensor-parallel shard `tp`), in execution order: norm, QKV (and the KV-cache
// write), attention, projection, residual, norm, MLP up, activation, MLP down, residual. Several passes run as
// one batch (a continuous-batching iteration): the GEMMs and element-wise kernels run on all their tokens at once,
// and each pass has its own attention kernel over its own cache.
std::vector<Kernel> serving_layer_kernels(const ModelSpec& m, const InferenceSpec& inf, int tp,
                                          std::span<const ServingPass> passes);
std::vector<Kernel> serving_layer_kernels(const ModelSpec& m, const InferenceSpec& inf, int tp, const ServingPass& pass);
// The same on shard `s` (tp, and for a mixture of experts ep x etp = tp: the experts spread over the GPUs that
// serve the attention), with `moe` one of the model's MoE layers (ModelSpec::moe_layer): its MLP is replaced by
// serving_moe_kernels.
std::vector<Kernel> serving_layer_kernels(const ModelSpec& m, const InferenceSpec& inf, const Sharding& s,
                                          std::span<const ServingPass> passes, bool moe);

// The busiest GPU's share of an MoE layer's routed experts when `tokens` tokens pass through it, each routed to
// experts_per_token of model.experts, chosen uniformly and independently per token (a router that balances its
// experts, as their training's auxiliary loss makes it), over `ep` GPUs of experts / ep experts each:
// - experts: the local experts at least one token is routed to, whose weights the GPU reads. An expert is missed by
//   one token with probability 1 - k / E, so hit with p = 1 - (1 - k / E)^tokens: experts / ep x p on a GPU on
//   average, with binomial spread;
// - rows: the tokens' copies the local experts compute on, tokens x k / ep on average, each token's k choices
//   landing on a GPU hypergeometrically (variance k (1/ep)(1 - 1/ep)(E - k)/(E - 1) per token); never below the
//   mean x model.expert_imbalance when that is set.
// The busiest of ep GPUs is the mean plus the expected maximum of ep standard normals times the spread (capped at
// the GPU's experts and the rows at every token's k copies): a decode step waits for it.
struct ExpertLoad {
  double experts = 0;
  double rows = 0;
};
ExpertLoad serving_expert_load(const ModelSpec& m, double tokens, int ep);
// The expected maximum of n independent standard normal draws (0 at n = 1), by quadrature of
// n x phi(x) x Phi(x)^(n-1).
double expected_normal_maximum(int n);

// An MoE layer's MLP on one GPU, on `tokens` tokens, as vLLM's fused MoE layer runs it (vllm/model_executor/layers/
// fused_moe): the router's GEMM (16-bit gate weights on every GPU), its softmax and top-k, the (token, expert)
// ids sorted by expert, the local experts' up (and gate) and down projections each as one grouped GEMM over the
// experts hit, gathering each token copy's row as it reads it (their weights read once, at the busiest GPU's load, serving_expert_load), the activation between, the
// outputs summed back per token with the router's weights; then the shared experts, if any, as a dense MLP split
// over tp. The TP group's all-reduce after it (generate_serving_step) sums the experts' partial outputs as it sums
// a dense MLP's.
std::vector<Kernel> serving_moe_kernels(const ModelSpec& m, const InferenceSpec& inf, const Sharding& s, double tokens);
// The attention kernel of one pass on one GPU: the fused kernel reads Q, the cache's K and V for `context` tokens
// (prefill: causal over the prompt itself) and writes the context vectors.
Kernel serving_attention_kernel(const ModelSpec& m, const InferenceSpec& inf, int tp, const ServingPass& pass);
// The same under multi-head latent attention (model.kv_lora_rank > 0): a decode pass as MQA over the cached
// latent (scores over kv_lora_rank + rope_head_dim, values of kv_lora_rank, the latent read once for every head),
// a prompt as MHA over its up-projected keys (head_dim + rope_head_dim) and values (v_head_dim), causal.
Kernel mla_attention_kernel(const ModelSpec& m, const InferenceSpec& inf, int tp, const ServingPass& pass);
// The first stage's embedding lookup of `tokens` tokens.
Kernel serving_embedding_kernel(const ModelSpec& m, double tokens);
// The last stage's final norm and logits (the last token of each sequence that samples) on one GPU; none when no
// pass samples.
std::vector<Kernel> serving_logits_kernels(const ModelSpec& m, const InferenceSpec& inf, int tp,
                                           std::span<const ServingPass> passes);

// The passes, run as one batch, as a StepGraph of `w` (which must hold `inference` and pass check_plan),
// durations on `gpu`.
StepGraph generate_serving_step(const Workload& w, const topology::GpuSpec& gpu, std::span<const ServingPass> passes);
StepGraph generate_serving_step(const Workload& w, const topology::GpuSpec& gpu, const ServingPass& pass);

}  // namespace dtsim::workloads
