// A GPT-shaped job for tests (MHA, ffn = 4h), where Megatron's closed forms hold exactly.
#pragma once

#include <string>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
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

}  // namespace dtsim::test
