// A cluster of several GPU kinds (`cluster.groups`): the one GPU that the cluster's totals use in its place.
#pragma once

#include <vector>

#include "topology/catalog.hpp"

namespace dtsim::topology {

struct GpuCount {
  GpuSpec gpu;
  int count = 0;
};

// The GPU-count-weighted mean of `groups`: peaks, memory bandwidth, power and prices are means, so that the
// cluster's GPU count times each is the sum over its GPUs (MFU's peak, energy and cost add up over the groups
// exactly); memory is the smallest and its reserve the largest (a fit on it fits every kind); SMs the fewest;
// architecture and links are the first group's. Named "mixed: N x name + M x name".
GpuSpec mean_gpu(const std::vector<GpuCount>& groups);

}  // namespace dtsim::topology
