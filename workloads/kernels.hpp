// The kernels of one transformer layer (and of the embedding, the logits and the optimizer) on ONE GPU, per
// pass, with tensor- and sequence-parallel sharding applied: FLOPs, bytes moved to and from GPU memory, and the
// GEMM shape where there is one.
//
// FLOPs are matrix-multiply FLOPs (2 per multiply-add), the accounting of Megatron-LM and Korthikanti et al.;
// element-wise kernels (softmax, norms, activation, dropout, residual, optimizer update) count 0 FLOPs and are
// timed by their bytes. Backward GEMMs cost twice the forward (input and weight gradients); the recompute pass
// repeats the forward kernels it recomputes (all of them for full recompute; attention scores, softmax, dropout
// and context for selective).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "topology/units.hpp"
#include "workloads/model.hpp"
#include "workloads/training.hpp"

namespace dtsim::workloads {

enum class KernelClass {
  Embedding,        // token (+ position) lookup: memory-bound gather
  LayerNorm,        // layer norm or RMS norm
  QkvGemm,          // fused Q, K, V projection (column-parallel)
  MlaUpGemm,        // MLA's up projections from the latents, as recompute_modules' mla_up_proj reruns them
  AttnScores,       // Q K^T, batched over heads
  Softmax,          // scale, mask, softmax over the scores
  AttnDropout,      // dropout over the attention probabilities
  AttnContext,      // probabilities x V, batched over heads
  FlashAttention,   // the attention core fused (FlashAttention class): scores, softmax, dropout and context in one
  ProjGemm,         // attention output projection (row-parallel)
  MlpUpGemm,        // h -> ffn (gelu: one GEMM; swiglu: gate and up)
  Activation,       // gelu, or silu(gate) * up
  MlpDownGemm,      // ffn -> h (row-parallel); in an MoE layer these three are the shared experts
  Router,           // MoE: h -> experts scores (replicated over TP)
  RouterTopk,       // MoE: the scores' softmax (or sigmoid), top-k and load-balancing loss
  TokenPermute,     // MoE: each token copied once per chosen expert, grouped by destination; after the exchange,
                    // sorted by local expert
  ExpertUpGemm,     // MoE: the local experts' up (and gate) projections, one grouped GEMM
  ExpertDownGemm,   // MoE: their down projections
  TokenUnpermute,   // MoE: the experts' outputs sorted back and summed per token, weighted by the router
  Dropout,          // dropout after the projection and after the MLP
  Residual,         // residual adds
  Fp8Cast,          // fp8 training: an activation or gradient quantised (and transposed) for an fp8 GEMM
  LoraColumnA,      // LoRA: the adapter beside a column-parallel layer (Q K V, MLP up): h -> rank (split over it)
  LoraColumnB,      //   rank -> the layer's output columns on this GPU
  LoraRowA,         // LoRA: the adapter beside a row-parallel layer (projection, MLP down): its input rows -> rank
  LoraRowB,         //   rank -> h / t, gathered
  Quantize,         // ZeRO++: weights or gradients quantised to int8 / int4 for a collective, or dequantised after
  Logits,           // output projection to the vocabulary
  CrossEntropy,     // softmax cross-entropy over the vocabulary
  Conv,             // layer-list workloads: a convolution (an implicit GEMM)
  BatchNorm,        // a batch normalisation
  Pool,             // max or average pooling
  Matmul,           // a fully connected layer
  Elementwise,      // an activation or a residual add
  OptimizerUpdate,  // read gradients and states, write weights and states
};
enum class Pass { Forward, Backward, Recompute };

std::string_view to_string(KernelClass k);
std::string_view to_string(Pass p);
std::optional<KernelClass> parse_kernel_class(std::string_view name);
[[nodiscard]] bool is_gemm(KernelClass k);

// C[m x n] = A[m x k] B[k x n], `batch` times.
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double batch = 1;
};

// A fused attention kernel's problem: `batch_heads` independent (sequence x sequence) attentions.
struct AttentionShape {
  double batch_heads = 0;
  double seq = 0;
  double head_dim = 0;
  bool causal = true;   // a causal mask: the kernel skips the masked half of the scores
  bool flash2 = false;  // FlashAttention-2 (training.attention: flash2), not the architecture's best fused kernel
  // Queries per sequence when fewer than `seq` (a prompt's chunk after its cached or earlier tokens: they attend to
  // all of those and causally among themselves, so the mask hides queries / 2 of seq keys a query on average, not
  // half); 0: as many as seq.
  double queries = 0;
};

struct Kernel {
  KernelClass kind = KernelClass::Residual;
  Pass pass = Pass::Forward;
  FlopCount flops;                         // as the model counts them (Megatron-LM's accounting)
  Bytes bytes;
  std::optional<GemmShape> gemm;           // GEMMs; a weighted backward GEMM: its data-gradient GEMM's shape
  std::optional<GemmShape> weight_gemm;    // a weighted backward GEMM: its weight-gradient GEMM's shape
  std::optional<AttentionShape> attention; // fused attention
  std::optional<Precision> precision;      // a GEMM computing in its own precision (fp8 training's linear layers)
  bool narrow_weights = false;             // weights narrower than 16 bits (serving's int4, int8, fp8, fp4): a
                                           // weight-only GEMM where it computes in 16 bits (Marlin class)
  double dequant_elements = 0;             // narrow weight elements a weight-only GEMM converts to its 16-bit
                                           // precision, each time a thread block uses them (compute_model.hpp)
  int launches = 1;                        // kernel launches it pays: 0 for a part of one varlen launch that
                                           // another part pays (a serving batch's attention over many caches)
  Bytes transposed;                        // of `bytes`, the transposed copy a per-tensor fp8 cast writes for the
                                           // GEMM that reads its operand the other way round, which a GPU whose fp8
                                           // GEMMs take any layout does not write (compute_model.hpp)
  double load = 1;                         // the busiest GPU's work over the mean, which `flops` and `bytes` count
                                           // (MoE experts under model.expert_imbalance): timed at `load` times
};

// What shards one GPU's share of a layer.
struct Sharding {
  int tp = 1;
  bool sequence_parallel = false;
  int ep = 1;    // MoE layers: expert-parallel size (experts / ep on each GPU)
  int etp = 1;   // and expert tensor-parallel size (each expert's width / etp)
  int cp = 1;    // context parallelism: each GPU holds seq_length / cp of a sequence's tokens (all its keys'
                 // attention computed over the ring)
  int attention_dp = 1;   // serving MoE: the replicas whose tokens share each GPU's experts (attention data
                          // parallelism: dp, each GPU routing its own tokens); 1: replicas independent
  double dispatch_bytes = 2;   // and the bytes of an element of the token copies it sends (dispatch_bytes_per_element)
};

// One layer's kernels for `pass` on one GPU, for a micro-batch of `micro_batch` sequences: a dense layer, or
// with `moe` an MoE layer (ModelSpec::moe_layer). Kernel order is execution order (backward: reverse). The
// recompute pass holds only what `training.recompute` recomputes.
std::vector<Kernel> layer_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch, Pass pass,
                                  bool moe = false);

// An MoE layer's token counts on one GPU of a micro-batch of `micro_batch` sequences: the tokens it routes (its
// sequence-parallel share) and the token copies its experts compute on (after the expert-TP gather), both
// balanced, and the bytes one all-to-all moves per GPU (as nccl-tests counts the buffer: every copy it sends)
// and the expert-TP gather's buffer, at the busiest GPU's load.
// With DeepEP (`nodes` > 1 the expert-parallel group spans), the RDMA stage's all-to-all among the rail peers
// carries each token once per distinct node its experts sit on (distinct_nodes of them on average, the experts
// spread evenly over the nodes and chosen uniformly), and the NVLink stage's among the node's peers each token once
// per distinct GPU its experts sit on (the same expectation over the expert-parallel group's GPUs).
struct MoeTraffic {
  double routed_tokens = 0;
  double expert_tokens = 0;
  Bytes all_to_all;
  Bytes expert_gather;
  double distinct_nodes = 1;
  Bytes rail;   // DeepEP's RDMA all-to-all buffer
  Bytes node;   // its NVLink all-to-all buffer
};
// Context parallelism: the whole sequence's keys and values on one GPU (its TP share of the KV heads; MLA's
// up-projected heads), the buffer ring attention circulates (as an all-gather counts it).
Bytes context_kv_bytes(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch);

MoeTraffic moe_traffic(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch, int nodes = 1);

// The mean number of distinct nodes among `nodes` (each holding experts / nodes experts) that a token's top_k
// experts, chosen uniformly, sit on: nodes x (1 - C(experts - experts / nodes, k) / C(experts, k)).
double distinct_nodes(int experts, int top_k, int nodes);

// The first stage's embedding and the last stage's logits and loss for `pass` (neither is ever recomputed).
std::vector<Kernel> embedding_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch, Pass pass);
std::vector<Kernel> logits_kernels(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch, Pass pass);

// The optimizer step over `params` parameters held by this GPU (its ZeRO shard).
Kernel optimizer_kernel(const TrainingSpec& t, double params);

// What every step does to the gradients of those parameters beside the update, each a streaming kernel over
// them, as Megatron-LM (megatron/core/optimizer: clip_grads.py get_grad_norm_fp32, optimizer.py
// _unscale_main_grads_and_check_for_nan; distributed/param_and_grad_buffer.py's reset), DeepSpeed and PyTorch's
// GradScaler and clip_grad_norm_ run them: the gradient norm for clipping (read every gradient), with fp16 loss
// scaling the unscale and the check for inf and NaN (read and write them), and the zeroing of the gradient
// buffer for the next step (write them).
std::vector<Kernel> step_overhead_kernels(const TrainingSpec& t, double params);

FlopCount total_flops(const std::vector<Kernel>& kernels);
Bytes total_bytes(const std::vector<Kernel>& kernels);

}  // namespace dtsim::workloads

// fmt prints kernel classes and passes by name ("qkv-gemm", "backward"). fmt 9.1 takes format_as only when it
// returns an integer, hence formatters.
template <>
struct fmt::formatter<dtsim::workloads::KernelClass> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(dtsim::workloads::KernelClass k, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(dtsim::workloads::to_string(k), ctx);
  }
};
template <>
struct fmt::formatter<dtsim::workloads::Pass> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(dtsim::workloads::Pass p, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(dtsim::workloads::to_string(p), ctx);
  }
};
