// check_plan's parts in files of their own (plan.cpp, plan_training.cpp): internal to workloads/.
#pragma once

#include <string>

#include "workloads/plan.hpp"

namespace dtsim::workloads::detail {

// Throws InputError(key, value, reason, allowed).
[[noreturn]] void fail(const std::string& key, long long value, const std::string& reason, const std::string& allowed);

// The training features' checks: the overlapped expert exchange, per-op and per-module recomputation, activation
// offloading, LoRA, ZeRO++, the micro-batches a replica, sequence parallelism, ZeRO and FSDP with the pipeline.
void check_training(const Workload& w);

}  // namespace dtsim::workloads::detail
