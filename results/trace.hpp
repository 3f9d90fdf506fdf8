// Perfetto / Chrome trace of a simulated step (JSON "traceEvents", opens in ui.perfetto.dev): a process per
// GPU with a compute track, a collective track and a pipeline track; a "links" process with one utilisation
// counter per link direction that carried traffic (fraction of line rate), from the engine's transfer records.
#pragma once

#include <string>

#include "sim/timeline.hpp"
#include "topology/routing.hpp"
#include "topology/topology.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::results {

// Ranks traced one by one when the graph is at most this large; beyond it, one rank per class (the
// slowest), so traces of thousands of GPUs stay loadable.
inline constexpr int kTraceAllRanksUpTo = 64;

std::string trace_json(const workloads::StepGraph& g, const sim::Timeline& t, const topology::Topology& topo,
                       topology::Routing routing);

}  // namespace dtsim::results
