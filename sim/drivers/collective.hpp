// One collective over every GPU of a cluster, timed by the SimGrid engine: what `dtsim collective` prints and the
// claims evaluate.
#pragma once

#include <string>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "topology/cluster.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::drivers {

// One collective over every GPU of `cluster`, timed by the SimGrid engine (in a child process) at each size,
// with the algorithm and protocol the lowering chose for it; `max_channels` as simulation.max_channels; a
// broadcast starts from rank `root`.
struct CollectiveTiming {
  Seconds time;
  std::string algorithm;
  std::string protocol;
};
std::vector<CollectiveTiming> collective_times(const topology::ClusterSpec& cluster, workloads::CollectiveKind kind,
                                               sim::Algorithm algorithm, const std::vector<Bytes>& sizes,
                                               int max_channels = 0, int root = 0);

}  // namespace dtsim::drivers
