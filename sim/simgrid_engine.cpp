// The SimGrid engine's entry points: the engine (simgrid_player.cpp, simgrid_collective.cpp) with sim::lower as
// its lowering.
#include "sim/simgrid_engine.hpp"

#include "sim/simgrid_player.hpp"

namespace dtsim::sim {

Timeline play_simgrid(const workloads::StepGraph& graph, const topology::Topology& topology,
                      const SimgridOptions& options) {
  const Algorithm algorithm = options.algorithm;
  return detail::play_graph(graph, topology, options,
                            [algorithm](workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout) {
                              return lower(kind, bytes, layout, algorithm);
                            });
}

std::vector<Seconds> time_collectives(workloads::CollectiveKind kind, const std::vector<Bytes>& sizes,
                                      const std::vector<int>& ranks, const topology::Topology& topology,
                                      const GroupLayout& layout, Algorithm algorithm, bool ecmp) {
  return detail::time_lowered(kind, sizes, ranks, topology, layout,
                              [algorithm](workloads::CollectiveKind k, Bytes bytes, const GroupLayout& l) {
                                return lower(k, bytes, l, algorithm);
                              },
                              ecmp);
}

}  // namespace dtsim::sim
