// What a scenario's `training` (or `inference`) section says, resolved: batch, precisions, optimizer,
// recomputation. Defaults follow mixed-precision practice (Megatron-LM): 16-bit weights and compute, fp32
// gradients, fp32 master weights and optimizer states.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/units.hpp"
#include "workloads/model.hpp"
#include "workloads/request_stream.hpp"

namespace dtsim::workloads {

using topology::Precision;

enum class Optimizer { AdamW, Adafactor, Sgd };
// Op: torchtitan's per-op selective checkpointing (selective_ac_option "op"): every compute op's output kept but
// every second matmul's, so the backward reruns those matmuls (a Llama block's K, output and MLP-up-gate
// projections) with the element-wise ops between.
enum class Recompute { None, Selective, Full, Op };

std::string_view to_string(Optimizer o);
std::string_view to_string(Recompute r);
std::optional<Optimizer> parse_optimizer(std::string_view name);
std::optional<Recompute> parse_recompute(std::string_view name);
inline constexpr std::string_view kOptimizerNames = "adamw, adafactor, sgd";
inline constexpr std::string_view kRecomputeNames = "none, selective, full, op";

// What selective recomputation recomputes (training.recompute_modules), Megatron-Core's --recompute-modules, as
// its TransformerConfig documents them: core_attn (the attention core, the default), moe_act (the experts'
// activation), layernorm (both norms), mla_up_proj (MLA's up projections), mlp (a dense layer's MLP), moe (the
// whole MoE layer: router, exchange, experts, shared experts), shared_experts. A bit set of RecomputeModule.
enum class RecomputeModule : unsigned {
  CoreAttn = 1U << 0,
  MoeAct = 1U << 1,
  Layernorm = 1U << 2,
  MlaUpProj = 1U << 3,
  Mlp = 1U << 4,
  Moe = 1U << 5,
  SharedExperts = 1U << 6,
};
inline constexpr unsigned bit(RecomputeModule m) { return static_cast<unsigned>(m); }
std::string_view to_string(RecomputeModule m);
std::optional<RecomputeModule> parse_recompute_module(std::string_view name);
std::vector<std::string_view> recompute_module_names(unsigned modules);   // in kRecomputeModuleNames' order
inline constexpr std::string_view kRecomputeModuleNames =
    "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts";

// How far ZeRO-3 gathers parameters ahead of the compute that needs them. Layer: the next layer's gathers run
// while this layer computes, so two layers are gathered at once. None: each layer's gathers wait for the previous
// layer's compute, one layer gathered. Auto: Layer where the memory plan holds the prefetched layer, else None:
// a run that fits only without the prefetch cannot have prefetched.
enum class Zero3Prefetch { Auto, Layer, None };
std::string_view to_string(Zero3Prefetch p);
std::optional<Zero3Prefetch> parse_zero3_prefetch(std::string_view name);
inline constexpr std::string_view kZero3PrefetchNames = "auto, layer, none";

// The software whose defaults a scenario's feature keys take (training.framework): Megatron-Core with the
// overlaps NVIDIA's published Megatron-LM runs turn on (today's, the default), NeMo's performance recipes on top of
// it, Megatron-LM as the SC'21 runs were (2021) and as Korthikanti et al.'s (2022), DeepSpeed as it runs today and
// its ZeRO-3 as it ran in 2021. apply_framework says what each sets.
enum class Framework { MegatronCore, Nemo, Megatron2021, Megatron2022, DeepSpeed, DeepSpeed2021, Torchtitan };
std::string_view to_string(Framework f);
std::optional<Framework> parse_framework(std::string_view name);
inline constexpr std::string_view kFrameworkNames =
    "megatron-core, nemo, megatron-2021, megatron-2022, deepspeed, deepspeed-2021, torchtitan";
// Megatron-Core and what is built on it (NeMo): the plan-dependent defaults of apply_framework_plan apply.
[[nodiscard]] bool megatron_core_based(Framework f);
// DeepSpeed as it runs today or as its ZeRO-3 ran in 2021.
[[nodiscard]] bool deepspeed_based(Framework f);
// Whether framework `f` runs `layers` layers on `pp` stages of `vpp` virtual stages each (vpp 1: always).
// `most_unequal`: the deepest split into unequal virtual stages to try, where the framework takes them.
[[nodiscard]] bool framework_interleaves(Framework f, int layers, int pp, int vpp, int most_unequal);

// The attention core (training.attention): unfused kernels that write the b x heads x s x s scores to memory, or
// one fused kernel that keeps them on chip: flash, the architecture's best (Transformer Engine's cuDNN fused
// attention on Hopper, FlashAttention-2 on Ampere), or flash2, FlashAttention-2 itself (PyTorch SDPA's first
// backend on Ampere and Hopper, which on Hopper runs no Hopper-specific instructions).
enum class AttentionKernel { Unfused, Flash, Flash2 };
std::string_view to_string(AttentionKernel a);
std::optional<AttentionKernel> parse_attention_kernel(std::string_view name);
inline constexpr std::string_view kAttentionKernelNames = "unfused, flash, flash2";
[[nodiscard]] constexpr bool fused(AttentionKernel a) { return a != AttentionKernel::Unfused; }

// Transformer Engine's low-precision training (training.fp8): the linear layers' GEMMs in fp8 (hybrid: E4M3
// forward, E5M2 gradients; e4m3: E4M3 throughout; both per-tensor scaled), in MXFP8 (Blackwell: E4M3 with an E8M0
// scale per 32 elements, TE's MXFP8BlockScaling) or in NVFP4 (Blackwell: E2M1 with an E4M3 scale per 16, TE's
// NVFP4BlockScaling), everything else in the 16-bit precision.
enum class Fp8 { None, Hybrid, E4m3, Mxfp8, Nvfp4 };
std::string_view to_string(Fp8 f);
std::optional<Fp8> parse_fp8(std::string_view name);
inline constexpr std::string_view kFp8Names = "none, hybrid, e4m3, mxfp8, nvfp4";
// The 8- and 4-bit float formats GEMMs run in (fp8, mxfp8, fp4, mxfp4): their layers keep 16-bit weights and activations.
[[nodiscard]] constexpr bool low_float(Precision p) {
  return p == Precision::Fp8 || p == Precision::Mxfp8 || p == Precision::Fp4 || p == Precision::Mxfp4;
}
// Bytes of a stored activation element at compute precision `p`: its own width, 16-bit for the low-precision GEMM
// formats (fp8, mxfp8, fp4), whose layers keep bf16 activations.
double activation_element_bytes(Precision p);
// The precision a recipe's GEMMs run at (and its casts write): fp8, mxfp8 or fp4.
topology::Precision low_gemm_precision(Fp8 f);

// How an MoE layer's tokens reach their experts (training.moe_dispatcher): alltoall, Megatron-Core's all-to-all
// dispatcher (NCCL all-to-all over the expert-parallel group, one copy per chosen expert); deepep, its flex
// dispatcher on DeepSeek's DeepEP (each token sent once to each node holding one of its experts over RDMA, to the
// GPU of the same rail, and forwarded there over NVLink, the two stages pipelined; combine the reverse).
enum class MoeDispatcher { AllToAll, DeepEp };
std::string_view to_string(MoeDispatcher d);
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name);
inline constexpr std::string_view kMoeDispatcherNames = "alltoall, deepep";

// How context-parallel attention gets the other ranks' keys and values (training.cp_comm, Megatron-Core's
// --cp-comm-type): p2p, ring attention (each of cp - 1 steps passes a KV block to the next rank while attention
// computes on the one it has; backward passes KV and their gradients); all_gather, the whole sequence's K and V
// gathered before attention (backward: their gradients reduce-scattered after it), exposed.
enum class CpComm { P2p, AllGather };
std::string_view to_string(CpComm c);
std::optional<CpComm> parse_cp_comm(std::string_view name);
inline constexpr std::string_view kCpCommNames = "p2p, all_gather";

// Which fused loss runs under training.cross_entropy_fusion (Megatron-Core's --cross-entropy-fusion-impl, default
// native: megatron/core/model_parallel_config.py). native: megatron/core/fusions/fused_cross_entropy.py, the
// unfused loss's steps in three compiled (torch.compile) regions, still over fp32 logits, the only fused loss up
// to Megatron-Core 0.11; te: Transformer Engine's Triton kernels over the 16-bit logits
// (transformer_engine/pytorch/triton/cross_entropy.py), since Megatron-LM 0f60adbd (2025-03).
enum class LossFusion { Native, Te };
std::string_view to_string(LossFusion f);
std::optional<LossFusion> parse_loss_fusion(std::string_view name);
inline constexpr std::string_view kLossFusionNames = "native, te";

// LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"), training.lora: every weight of the
// model frozen, and beside each targeted linear layer W (k x n) a trainable adapter B A, A k x rank and B rank x n,
// whose output adds to W's. The targets are Megatron-Core's linear layers of a transformer block: qkv (the fused Q
// K V projection, linear_qkv), proj (the attention output, linear_proj), fc1 (the MLP's up and gate, linear_fc1),
// fc2 (its down projection, linear_fc2). Frozen weights need no gradient, no optimizer state and no master copy;
// the backward still computes every data gradient, for the adapters below.
enum class LoraTarget : unsigned { Qkv = 1U << 0, Proj = 1U << 1, Fc1 = 1U << 2, Fc2 = 1U << 3 };
inline constexpr unsigned bit(LoraTarget t) { return static_cast<unsigned>(t); }
std::optional<LoraTarget> parse_lora_target(std::string_view name);
std::vector<std::string_view> lora_target_names(unsigned targets);   // in kLoraTargetNames' order
inline constexpr std::string_view kLoraTargetNames = "qkv, proj, fc1, fc2";
struct LoraSpec {
  int rank = 0;           // 0: no LoRA, every weight trains
  unsigned targets = 0;   // LoraTarget bits
  [[nodiscard]] bool on() const { return rank > 0; }
  [[nodiscard]] bool targets_module(LoraTarget t) const { return on() && (targets & bit(t)) != 0; }
};
// LoRA's defaults under framework `f` (training.lora: true, {} or a rank alone): see training.cpp.
LoraSpec lora_defaults(Framework f);

// DeepSpeed's ZeRO++ (Wang et al. 2023, "ZeRO++: Extremely Efficient Collective Communication for Giant Model
// Training"; training.zero_pp, with ZeRO-3): qwz, every parameter all-gather in int8 with a scale per block
// (DeepSpeed's zero_quantized_weights); hpz, a secondary partition of the parameters within each node, which the
// backward's all-gathers read instead of the whole data-parallel group (zero_hpz_partition_size); qgz, the
// gradients' reduce-scatter replaced by int4 all-to-alls, first within the node, then across nodes
// (zero_quantized_gradients).
struct ZeroPp {
  bool qwz = false;
  bool hpz = false;
  bool qgz = false;
  [[nodiscard]] bool any() const { return qwz || hpz || qgz; }
};

// Bytes of one element stored in `p` (int4: 0.5; tf32 is stored as fp32).
double bytes_per_element(Precision p);

struct TrainingSpec {
  int global_batch = 1;                  // sequences per step, all data-parallel replicas together
  int micro_batch = 1;                   // sequences per forward/backward
  Precision precision = Precision::Bf16; // compute (matrix units)
  Precision weight_dtype = Precision::Bf16;   // weights as the forward reads them
  Precision grad_dtype = Precision::Fp32;     // gradients as accumulated and reduced
  bool master_weights = true;            // an fp32 copy of the weights lives with the optimizer states
  Optimizer optimizer = Optimizer::AdamW;
  Precision optimizer_dtype = Precision::Fp32;
  Recompute recompute = Recompute::None;
  unsigned recompute_modules = bit(RecomputeModule::CoreAttn);   // RecomputeModule bits, with Selective
  bool sequence_parallel = false;
  Bytes dp_bucket = Bytes(25e6);         // data-parallel gradient bucket (dp_bucket_MB, decimal MB)
  // Gradient reduction overlaps the backward pass, one collective per filled bucket (PyTorch DDP; Megatron-LM's
  // DDP with --overlap-grad-reduce; key training.overlap_grad_reduce, or its old name dp_overlap). false: one
  // reduction of all the stage's gradients after its last backward, as Megatron-LM's "local" DDP did (the SC'21
  // runs); with ZeRO 2/3, one after each micro-batch's backward.
  bool dp_overlap = true;
  Zero3Prefetch zero3_prefetch = Zero3Prefetch::Auto;
  // The software's features; these defaults are Megatron-LM 2021's (apply_framework sets a framework's).
  Framework framework = Framework::Megatron2021;
  AttentionKernel attention = AttentionKernel::Unfused;
  // The backward's TP collective of each column-parallel layer (Q K V, MLP up) runs beside its weight-gradient
  // GEMM, and with sequence parallelism the layer's input is all-gathered again beside its data-gradient GEMM
  // (Megatron-LM 2022's asynchronous tensor-parallel all-reduce, Korthikanti et al. section 4.2.2; Megatron-Core).
  bool tp_backward_overlap = false;
  // Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers; needs sequence parallelism): each
  // all-gather before a column-parallel GEMM (and, backward, before a row-parallel data-gradient GEMM) is a ring
  // exchange pipelined with the GEMM's tp chunks, each reduce-scatter after a row-parallel GEMM is pipelined with
  // its kTpSplits chunks.
  bool tp_comm_overlap = false;
  // The distributed optimizer (Megatron-Core's ZeRO-1: optimizer states sharded over the data-parallel group,
  // gradients reduce-scattered, parameters all-gathered); a plan's zero stage 1.
  bool distributed_optimizer = false;
  // --overlap-param-gather: the all-gather of the updated parameters runs at the next step's start, bucket by
  // bucket, each layer's first forward waiting only for its own bucket (instead of one all-gather after the
  // optimizer step, before the next step can start).
  bool overlap_param_gather = false;
  bool cross_entropy_fusion = false;     // the loss fused (Megatron-Core's --cross-entropy-loss-fusion) instead of
                                         // Megatron's unfused fp32 one, by cross_entropy_fusion_impl
  LossFusion cross_entropy_fusion_impl = LossFusion::Native;
  Fp8 fp8 = Fp8::None;
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  // Megatron-Core's overlap_moe_expert_parallel_comm (off by default there and here): in the pipeline schedule,
  // a forward and a backward of different micro-batches that follow each other run as one, taking turns at each
  // MoE token exchange, so one pass's exchange travels while the other computes (its combined 1F1B, the DualPipe
  // pairing of DeepSeek-V3's report, section 3.2.1).
  bool overlap_moe_expert_parallel_comm = false;
  // Pipeline exchanges that do not hold the stage's compute (Megatron-Core's overlap_p2p_comm); nullopt: the
  // framework's default for the plan (overlaps_p2p, training.cpp).
  std::optional<bool> overlap_p2p_comm;
  CpComm cp_comm = CpComm::P2p;
  // ZeRO-3's backward fetches the next layer's parameters when it fetches this layer's, so their gathers are
  // issued before this layer's gradients are reduce-scattered (DeepSpeed's PartitionedParameterCoordinator: the
  // pre-backward hook fetches and prefetches, the gradient hooks reduce later); false: each layer's gathers are
  // issued when its backward comes, after the previous layer's reduce-scatter, on the one data-parallel
  // communicator (DeepSpeed's ZeRO-3 of 2021, whose all-gathers blocked: DeepSpeed #1069).
  bool zero3_prefetch_ahead = true;
  // The training run's length (training.tokens or training.steps, at most one): what a step is multiplied by for
  // the time, cost and energy to train. Neither: per step only.
  std::optional<double> tokens;
  std::optional<long long> steps;
  // Megatron-Core's activation offloading (cpu_offloading_num_layers, Transformer Engine's cpu_offload): the first
  // `offload_layers` transformer layers send what they keep for the backward to host memory after their forward
  // and take it back before their backward, on the GPU's link to its CPU (NVLink-C2C on Grace, else PCIe), each
  // copy beside the next layer's compute. Megatron-Core allows it below the model's layer count, with one pipeline
  // stage and no recomputation (megatron/core/transformer/transformer_config.py __post_init__).
  int offload_layers = 0;
  LoraSpec lora;   // training.lora; rank 0: every weight trains
  ZeroPp zero_pp;  // training.zero_pp (ZeRO-3 only)
};

// The chunks a pipelined reduce-scatter splits its GEMM into (Transformer Engine's default num_splits for
// proj_fprop and fc2_fprop, transformer_engine/pytorch/module/base.py initialize_ub).
inline constexpr int kTpSplits = 4;

// Sets every feature `f` decides to its default there (and `framework`); a scenario's explicit keys come after.
//   megatron-2021, deepspeed, deepspeed-2021: unfused attention and loss, every TP collective exposed, one
//     all-gather after the optimizer step; deepspeed and deepspeed-2021 reduce gradients in the 16-bit
//     precision (DeepSpeed's communication_data_type), deepspeed-2021 without ZeRO-3's backward prefetch ahead;
//   megatron-2022: the same, with the backward's TP collectives overlapped (tp_backward_overlap);
//   megatron-core: fused attention (Transformer Engine's DotProductAttention, the default of Megatron-Core's
//     transformer_engine implementation), the backward's TP overlap, the distributed optimizer with the
//     parameter all-gather overlapped, as the Megatron-LM README's scaling runs state them (--overlap-grad-reduce
//     --overlap-param-gather --tp-comm-overlap); the loss unfused (--cross-entropy-loss-fusion is off by default);
//     the plan-dependent ones (sequence parallelism and tp_comm_overlap where tp > 1, Megatron-Core's bucket
//     size) resolved with the plan (the scenario reader);
//   nemo: megatron-core's, with what NeMo's performance recipes add (scripts/performance, helpers.py): the fused
//     loss (cross_entropy_fusion_impl te), gradients reduced in bf16 (grad_reduce_in_fp32 False), 128 Mi-parameter
//     buckets (MegatronCommOverlapCallback);
//   torchtitan: PyTorch as torchtitan runs it (FSDP2, DTensor TP, torch.compile), pytorch/torchtitan 9dec370a with
//     torch of 2024-12: attention by SDPA, whose first backend on Ampere and Hopper is FlashAttention-2 (flash2;
//     aten/src/ATen/native/transformers/cuda/sdp_utils.cpp priority_order: flash, efficient, math, cuDNN last);
//     the loss unfused; context parallelism rotating the keys and values by all-gather (its
//     context_parallel_rotate_method default, "allgather"); no distributed optimizer (FSDP shards instead);
//     every TP collective exposed unless async TP is asked for (tp_comm_overlap).
void apply_framework(TrainingSpec& t, Framework f);

// The loss fused by Transformer Engine's kernels, over the 16-bit logits (every other loss keeps them in fp32).
bool te_loss(const TrainingSpec& t);

// Speculative decoding with a draft model (inference.speculative; Leviathan, Kalman and Matias, ICML 2023): each
// round the draft proposes `tokens` tokens, one decode step each, and the target scores them all in one pass of
// tokens + 1 per sequence, keeping the accepted prefix and one token of its own. With each drafted token accepted
// with probability `acceptance` (their alpha, i.i.d.), a round yields (1 - alpha^(tokens + 1)) / (1 - alpha)
// tokens (their eq. 1; speculative_tokens_per_round). The draft runs on the target's GPUs with its pipeline split,
// its own tensor parallelism (`tp`) and the target's precisions, and keeps a KV cache of its own.
struct SpeculativeDecoding {
  ModelSpec draft;
  int tokens = 5;          // vLLM's draft-model example speculates 5 (docs/features/speculative_decoding/draft_model.md)
  double acceptance = 0;   // per drafted token, 0 to 1: vLLM's draft_acceptance_rate (accepted / drafted)
  int tp = 0;              // the draft's tensor parallelism: 1 (on the first GPU of each target TP group) or the
                           // target's, as vLLM allows (vllm/config/speculative.py, _verify_and_get_draft_tp);
                           // 0: the target's (vLLM's default)
};
// The draft's tensor parallelism under a target split `target_tp` (SpeculativeDecoding::tp resolved).
inline int draft_tp(const SpeculativeDecoding& s, int target_tp) { return s.tp > 0 ? s.tp : target_tp; }

// KV-cache offload to host memory as today's engines run it, a second tier of the prefix cache: vLLM's
// OffloadingConnector (--kv-offloading-size) stores each prompt's full blocks to CPU memory as they are computed,
// on a copy stream of its own, and on a prefix hit beyond the GPU's cache loads them back before the request runs,
// the request waiting for its load while the others go on (vllm/distributed/kv_transfer/kv_connector/v1/
// offloading_connector.py: get_num_new_matched_tokens returns the hit as an asynchronous load); TensorRT-LLM's host
// cache (kv_cache_config.host_cache_size) and SGLang's HiCache keep evicted blocks so. The load crosses each GPU's
// link to its host memory (serving.hpp, host_load_time); the stores run beside the compute and cost it nothing.
struct KvOffload {
  double host_GB = 0;   // host memory the offloaded blocks may use per serving replica (vLLM: summed over TP ranks)
  double hit = 0;       // share of each prompt found in host memory beyond the GPU's prefix cache: loaded, not
                        // prefilled (vLLM's external prefix cache hit rate)
};

// Serving instead of training: a memory plan for weights and KV cache (the decode step comes later).
struct InferenceSpec {
  int batch = 1;
  int context = 0;                       // tokens held in the KV cache per sequence (at most; the memory plan's)
  int prompt_tokens = 0;                 // a static batch: each sequence's prompt, prefilled at once,
  int output_tokens = 0;                 // then this many tokens decoded one step at a time (prompt + output <= context)
  Precision weights = Precision::Bf16;
  Precision kv_cache = Precision::Bf16;
  // The share of each prompt's tokens whose KV cache a prefix cache already holds when it arrives (vLLM's automatic
  // prefix caching, SGLang's RadixAttention, TensorRT-LLM's KV cache reuse): they are not prefilled
  // (prefix_cached_tokens, serving.hpp). The cache's memory is counted per sequence, as if nothing were shared.
  double prefix_cache_hit = 0;
  std::optional<KvOffload> kv_offload;   // the prefix cache's second tier in host memory
  std::optional<SpeculativeDecoding> speculative;
  // Passes run inside another workload's iteration (a draft's, draft_workload): the iteration's host work
  // (serving_step_overhead) is that workload's, paid once; not a scenario key.
  bool inside_iteration = false;
  std::optional<RequestStream> requests;   // a served stream (the static batch above then times one request alone)
  ServingFramework framework = ServingFramework::Vllm;   // whose scheduler serves it, and its defaults
  SchedulerLimits scheduler;               // how the stream is served; kv_blocks 0: what the memory plan leaves
  std::optional<Disaggregation> disaggregation;   // prefill and decode on two pools of the cluster (with requests)
};

// Optimizer state bytes per parameter (master weights excluded): AdamW two moments, Adafactor one moment plus
// factored second moments (negligible per parameter), SGD one momentum.
double optimizer_state_bytes_per_param(const TrainingSpec& t);

// Defaults that follow mixed-precision practice for a compute precision: weight dtype and master weights.
TrainingSpec training_defaults(Precision compute);

}  // namespace dtsim::workloads
