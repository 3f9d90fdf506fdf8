// The one description of a kernel that the three passes are materialised from (kernels.cpp): a GPU's share of a
// layer's work (Dims), a kernel as a GEMM shape or an element-wise traffic pair (Step), the element-wise traffic
// rules, and the layer's steps in forward order (layer_steps.cpp). Internal to the workloads library.
#pragma once

#include <vector>

#include "workloads/kernels.hpp"
#include "workloads/model.hpp"
#include "workloads/training.hpp"

namespace dtsim::workloads::detail {

// One GPU's share of the work, in elements (not bytes), and the element sizes in bytes.
struct Dims {
  double b = 0;            // sequences in the micro-batch
  double s = 0;            // sequence length
  double cp = 1;           // context-parallel size: this GPU holds s / cp of each sequence
  double tp = 1;           // tensor-parallel size
  double h = 0;            // hidden size
  double tokens = 0;       // b * s / cp: the rows of every linear layer (gathered when sequence-parallel)
  double ew_tokens = 0;    // tokens of the norms, dropouts and residuals: tokens / t with SP, else tokens
  double heads = 0;        // attention heads on this GPU: a / t
  double kv_heads = 0;     // key and value heads on this GPU (MLA: a / t, each up-projected from the latent)
  double qk_head = 0;      // a head's width in Q K^T (MLA: the head_dim and the rope part)
  double v_head = 0;       // a head's width in probabilities x V
  double qkv_out = 0;      // Q, K and V columns on this GPU: (heads x head_dim + 2 kv_dim) / t; MLA: its
                           // projections' parameters over h, / t (one GEMM of their FLOPs)
  bool mla = false;        // MLA: its up projections, which mla_up_proj recomputes: Q's from its rank q_lora
  double q_lora = 0;       // latent (0: none, from the hidden state) to q_up columns / t, and K's and V's from
  double q_up = 0;         // the kv_lora latent to kv_up / t
  double kv_lora = 0;
  double kv_up = 0;
  double ffn = 0;          // ffn_hidden / t
  double up_out = 0;       // ffn (gelu) or 2 ffn (swiglu: gate and up)
  double vocab = 0;        // vocab / t (vocab-parallel embedding and logits)
  double e = 0;            // bytes per activation element (training.precision)
  double we = 0;           // bytes per weight element (training.weight_dtype)
  double ge = 0;           // bytes per gradient element (training.grad_dtype)
  double fp32 = 0;         // bytes per fp32 element (losses and statistics kept in fp32)
  bool swiglu = false;
  bool learned_positions = false;
  bool flash = false;      // the attention core as one fused kernel
  bool flash2 = false;     // that kernel FlashAttention-2
  bool causal = true;
  bool fp8 = false;        // the linear layers' GEMMs in fp8 (Transformer Engine)
  Precision low = Precision::Fp8;   // ... at this precision (its recipe's: fp8, mxfp8, fp4)
  double cast_out = 2.0;   // bytes a cast writes per element: the low-precision tensor and its transpose
  bool fused_loss = false;
  bool te_loss = false;    // that loss Transformer Engine's (workloads::te_loss), else Megatron-Core's native
  bool frozen = false;     // LoRA: the model's weights need no gradient (only data gradients run backward)
  double lora_rank = 0;    // LoRA: the adapters' rank (0: none) and which linear layers have one (LoraTarget bits)
  unsigned lora_targets = 0;
  bool hidden_dropout = true;      // dropout after the projection and the MLP (model.hidden_dropout > 0)
  bool attention_dropout = true;   // over the attention probabilities (model.attention_dropout > 0)
  // MoE layers
  double experts = 0;         // routed experts
  double top_k = 0;
  double local_experts = 0;   // experts / ep
  double routed = 0;          // tokens this GPU routes: its sequence-parallel share
  double expert_rows = 0;     // token copies its experts compute on: routed x top_k x etp (balanced)
  double expert_ffn = 0;      // an expert's width on this GPU: expert_ffn_hidden / etp
  double expert_up = 0;       // expert_ffn, or 2 expert_ffn (swiglu)
  double shared_ffn = 0;      // the shared experts' width on this GPU: shared x expert_ffn_hidden / t
  double imbalance = 1;       // model.expert_imbalance
};

Dims dims_of(const ModelSpec& m, const TrainingSpec& t, Sharding s, int micro_batch);

// Bytes an element-wise kernel moves in each pass.
struct Traffic {
  double forward = 0;
  double backward = 0;
};

// A kernel as described once: a GEMM (with or without a weight operand), a fused attention kernel, or an
// element-wise kernel.
struct Step {
  KernelClass kind = KernelClass::Residual;
  std::optional<GemmShape> gemm;
  bool weighted = true;   // GEMMs: B is a weight matrix (false: both operands are activations)
  Traffic traffic;        // element-wise and fused attention kernels
  std::optional<AttentionShape> attention;   // fused attention, with its forward FLOPs as the model counts them
  double attention_flops = 0;
  bool fp8 = false;       // a GEMM in fp8
  int launches = 1;
  double load = 1;        // Kernel::load
  unsigned modules = 0;   // the training.recompute_modules that recompute it (RecomputeModule bits)
  bool frozen = false;    // a weighted GEMM whose weight does not train (LoRA): backward, the data gradient only
};

Step gemm_step(KernelClass kind, GemmShape g, bool weighted = true);
Step elementwise_step(KernelClass kind, Traffic t);

// A step as the kernel of `pass`; a pass's steps as its kernels, in execution order (backward: reversed).
Kernel kernel_of(const Step& step, Pass pass, const Dims& d);
std::vector<Kernel> materialise(const std::vector<Step>& steps, Pass pass, const Dims& d);

// Element-wise traffic, in bytes; `n` elements of `e` bytes, masks 1 byte per element.
Traffic norm_traffic(double n, double e);
Traffic dropout_traffic(double n, double e);
Traffic residual_traffic(double n, double e, bool after_dropout);
Traffic softmax_traffic(double n, double e);
Traffic activation_traffic(double n, double e, bool swiglu);

// A layer's steps in forward order, each tagged with the recompute modules that recompute it (`mla_up`: MLA's up
// projections after the QKV GEMM, as mla_up_proj recomputes them); what torchtitan's per-op checkpointing reruns
// of a dense layer; whether the recompute pass repeats a step.
std::vector<Step> layer_steps(const Dims& d, bool moe, bool mla_up);
std::vector<Step> op_recompute_steps(const Dims& d);
bool recomputed(const Step& step, const TrainingSpec& t);

}  // namespace dtsim::workloads::detail
