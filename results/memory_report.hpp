// `dtsim memory`: a memory plan as a table (GiB, two decimals) or as DESIGN.md's `memory` JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "topology/catalog.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::results {

// DESIGN.md's `memory` object, bytes as numbers: per_gpu_bytes, capacity_bytes, margin_bytes (negative when it
// does not fit), fits, parts_bytes {params, grads, optimizer, activations, kv_cache, buffers}; plus stage,
// in_flight_micro_batches and notes (how each part was counted).
nlohmann::json memory_json(const workloads::MemoryPlan& plan);

// "fits" or "does not fit: short by X GiB".
std::string memory_verdict(const workloads::MemoryPlan& plan);

// One block per scenario: each part with how it was counted, the total, capacity, margin and verdict.
std::string memory_table(const std::string& name, const topology::GpuSpec& gpu, const workloads::MemoryPlan& plan);

}  // namespace dtsim::results
