// Memory per GPU for training or serving: parameters, gradients, optimizer states (sharded per ZeRO stage),
// activations (Korthikanti et al. for none / selective / full recompute and sequence parallelism, times the
// micro-batches the pipeline schedule keeps in flight), communication buffers, KV cache; and the fit verdict.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/units.hpp"
#include "workloads/plan.hpp"

namespace dtsim::workloads {

struct MemoryParts {
  Bytes params;
  Bytes grads;
  Bytes optimizer;      // optimizer states and master weights
  Bytes activations;
  Bytes kv_cache;
  Bytes buffers;        // communication buckets and gathered-parameter buffers
};

struct MemoryPlan {
  MemoryParts parts;                 // of the most loaded GPU
  int stage = 0;                     // the pipeline stage of that GPU
  Bytes per_gpu;                     // sum of parts
  Bytes capacity;                    // memory - reserve
  Bytes margin;                      // capacity - per_gpu; negative when it does not fit
  bool fits = false;
  int in_flight_micro_batches = 0;   // activations held at the peak, on that stage (inference: 1 decode step)
  bool inference = false;            // a serving plan (weights, KV cache, decode workspace), not training
  std::vector<std::string> notes;    // how each part was counted, one line each
};

// Bytes per parameter the optimizer keeps: the fp32 master copy (with training.master_weights) and its states.
double optimizer_bytes_per_param(const TrainingSpec& t);

// The memory plan of `w` on `gpu`. For training: every stage is evaluated and the most loaded one reported.
MemoryPlan plan_memory(const Workload& w, const topology::GpuSpec& gpu);
// The same with each pipeline stage on its own GPU (a mixed cluster's, `stage_gpus` one per stage; a transformer's
// training): the stage reported is the one with the least memory to spare on its GPU.
MemoryPlan plan_memory(const Workload& w, std::span<const topology::GpuSpec> stage_gpus);

// Whether ZeRO-3 gathers the next layer while this one computes (training.zero3_prefetch, with auto resolved: a
// prefetch only where the memory plan holds two gathered layers). false without ZeRO-3 or data parallelism.
bool zero3_prefetches(const Workload& w, const topology::GpuSpec& gpu);

// Activation bytes of one layer for one micro-batch on one GPU (Korthikanti et al., eq. 1-3 and section 4): a
// dense layer; with `moe`, an MoE layer whose experts are split `etp` ways (the busiest GPU's tokens).
Bytes layer_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp, int micro_batch, bool moe = false,
                             int etp = 1);
// The larger of a dense and (when the model has experts) an MoE layer's: what one layer in flight holds.
Bytes largest_layer_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int tp, int micro_batch, int etp = 1);

// Micro-batches whose activations a stage holds at once under the plan's schedule (1F1B: pp - stage; GPipe: all;
// interleaved: per Megatron's warm-up count), derived from the schedule's order.
int in_flight_micro_batches(const ParallelPlan& plan, int micro_batches, int stage);

// The embedding's parameters on one GPU (the words split over tp, learned positions replicated), and the final
// norm's with the output projection's (tied embeddings with pp > 1: the last stage's own copy of the word
// embedding, all-reduced with the first stage's, as Megatron does; with one stage, none beside the embedding).
double embedding_parameters_per_gpu(const ModelSpec& m, int tp);
double head_parameters_per_gpu(const ModelSpec& m, const ParallelPlan& p);

// One token's keys and values over every layer, all KV heads, in `kv_cache`'s precision (under MLA: its latent
// and rope key a layer).
Bytes kv_bytes_per_token(const ModelSpec& m, Precision kv_cache);
// The GPUs of a tensor-parallel group that one token's cache is split over: tp, its heads shared out; 1 under
// multi-head latent attention, whose one latent vector a token every GPU of the group holds whole (vLLM's MLA
// backends cache kv_c and k_pe per rank).
int kv_split(const ModelSpec& m, int tp);
// KV cache: kv_bytes_per_token x context x batch on one GPU (/ kv_split: tp, or 1 under MLA).
Bytes kv_cache_bytes(const ModelSpec& m, const InferenceSpec& inf, int tp);

// The activations a served stream's fullest iteration holds, which its KV cache leaves room for (the engines size
// the cache after running such an iteration: vLLM's profile run of max_num_batched_tokens tokens): each of
// `tokens` tokens through one layer's widest tensors and the logits of `sequences` sequences, fp32 as the decode
// workspace, over `tp`; attention in the engines' fused kernels, which hold no score matrix.
Bytes stream_workspace(const ModelSpec& m, int tokens, int sequences, int tp);

}  // namespace dtsim::workloads
