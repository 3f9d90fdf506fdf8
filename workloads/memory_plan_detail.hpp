// The memory plan's shared parts (memory_plan.cpp, memory_plan_inference.cpp): internal to workloads/.
#pragma once

#include <string>

#include "topology/catalog.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::workloads::detail {

// The parts summed.
Bytes total(const MemoryParts& p);
// A parameter count as the notes write it: "1.75e9", "350e6".
std::string count(double n);
// `plan` with its total, the GPU's usable memory, the margin and whether it fits.
MemoryPlan finish(MemoryPlan plan, const topology::GpuSpec& gpu);
// An inference workload's plan: the decode step of `batch` sequences holding `context` tokens each.
MemoryPlan plan_inference(const Workload& w, const topology::GpuSpec& gpu);

}  // namespace dtsim::workloads::detail
