// Jobs for the workload tests: a GPT shape (MHA, ffn = 4h, where Megatron's closed forms hold exactly), a preset cut to a
// few layers, a Mixtral MoE job; the GPUs they time kernels on; check_plan's message.
#pragma once

#include <string>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/model.hpp"
#include "workloads/plan.hpp"

namespace dtsim::test {

// check_plan's one-line message for `w` on `gpus` GPUs, or "no error".
inline std::string plan_error(const workloads::Workload& w, int gpus) {
  try {
    workloads::check_plan(w, gpus);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The GPU the workload tests time kernels on.
inline const topology::GpuSpec& a100() { return topology::find_gpu("a100-sxm4-80gb"); }
inline const topology::GpuSpec& h100() { return topology::find_gpu("h100-sxm5-80gb"); }

// A preset model cut to `layers` layers, trained in BF16 at the framework's defaults; the plan is the caller's.
inline workloads::Workload preset_job(std::string_view model, int layers) {
  workloads::Workload w;
  w.model = workloads::find_model(model);
  w.model.layers = layers;
  w.training = workloads::training_defaults(topology::Precision::Bf16);
  return w;
}

inline workloads::Workload gpt_job(int tp, int pp, int dp, int global_batch, int layers = 8) {
  workloads::Workload w;
  w.model.name = "gpt-test";
  w.model.layers = layers;
  w.model.hidden = 2048;
  w.model.heads = 16;
  w.model.kv_heads = 16;
  w.model.ffn_hidden = 8192;
  w.model.vocab = 51200;
  w.model.seq_length = 2048;
  w.training = workloads::training_defaults(topology::Precision::Bf16);
  w.training->global_batch = global_batch;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  workloads::check_plan(w, tp * pp * dp);
  return w;
}

// `w`'s model made `hidden` wide with `heads` query and `kv_heads` key-value heads and an MLP of `ffn`.
inline void set_width(workloads::Workload& w, int hidden, int heads, int kv_heads, int ffn) {
  w.model.hidden = hidden;
  w.model.heads = heads;
  w.model.kv_heads = kv_heads;
  w.model.ffn_hidden = ffn;
}

// Mixtral-8x7B's shape, 4 layers, on `tp` x `pp` x `dp` GPUs with `ep`-way (`etp`) experts.
inline workloads::Workload moe_job(int tp, int pp, int dp, int ep, int etp = 0, int layers = 4) {
  workloads::Workload w = preset_job("mixtral-8x7b", layers);
  w.model.seq_length = 4096;
  w.training->global_batch = 4 * dp;
  w.training->sequence_parallel = tp > 1;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  w.plan.ep = ep;
  w.plan.etp = etp;
  w.plan.zero = 1;   // the distributed optimizer, as Megatron-Core's recipes run
  workloads::check_plan(w, tp * pp * dp);
  return w;
}

}  // namespace dtsim::test
