// Perfetto / Chrome trace of a simulated step (Trace Event Format, JSON "traceEvents", opens in ui.perfetto.dev).
// A process per traced GPU with compute, collective, pipeline-send and pipeline-receive tracks (a track splits into
// lanes where its slices overlap, so every track's slices nest as the format requires); a flow arrow from each
// pipeline send to its receive when both ranks are traced; optionally a "links" process with one utilisation
// counter per link direction that carried traffic (fraction of line rate), from the engine's transfer records.
#pragma once

#include <string>
#include <vector>

#include "sim/timeline.hpp"
#include "topology/routing.hpp"
#include "topology/topology.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::results {

// Which ranks a trace shows (`--trace-ranks`): one per pipeline stage (the first tensor- and data-parallel rank of
// each; its TP peers play the same timeline), every rank, or a list.
struct TraceRanks {
  enum class Mode { Stages, All, List } mode = Mode::Stages;
  std::vector<int> list;   // Mode::List: ascending, distinct
};

// Parses `--trace-ranks`: "stages", "all" or a comma list of ranks and ranges ("0,8,16-23"); InputError naming the
// flag otherwise. Ranks are checked against the cluster by `check_trace_ranks`.
TraceRanks parse_trace_ranks(const std::string& text);
void check_trace_ranks(const TraceRanks& ranks, int gpus);

struct TraceOptions {
  TraceRanks ranks;
  bool links = false;   // `--trace-links`: per-link utilisation counters (needs the engine's transfer records)
};

std::string trace_json(const workloads::StepGraph& g, const sim::Timeline& t, const topology::Topology& topo,
                       topology::Routing routing, const TraceOptions& options = {});

}  // namespace dtsim::results
