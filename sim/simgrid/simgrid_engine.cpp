// The SimGrid engine's entry points: the engine with the lowering as a parameter (simgrid_player.hpp) given
// sim::lower.
#include "sim/simgrid/simgrid_engine.hpp"

#include "sim/simgrid/simgrid_player.hpp"

namespace dtsim::sim {
namespace {

flow::LowerFn lowering(Algorithm algorithm, int max_channels) {
  return [algorithm, tuning = collective_tuning(max_channels)](workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout) {
    return lower_periodic(kind, bytes, layout, algorithm, Protocol::Auto, tuning);
  };
}

}  // namespace

Timeline play_simgrid(const workloads::StepGraph& graph, const topology::Topology& topology,
                      const SimgridOptions& options) {
  return flow::play_graph(graph, topology, options, lowering(options.algorithm, options.max_channels));
}

std::vector<Seconds> time_collectives(workloads::CollectiveKind kind, const std::vector<Bytes>& sizes,
                                      const std::vector<int>& ranks, const topology::Topology& topology,
                                      const GroupLayout& layout, Algorithm algorithm, topology::Routing routing, bool aggregate,
                                      int max_channels) {
  return flow::time_lowered(kind, sizes, ranks, topology, layout, lowering(algorithm, max_channels), routing,
                            aggregate);
}

}  // namespace dtsim::sim
