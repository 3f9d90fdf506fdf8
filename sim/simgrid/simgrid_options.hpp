// The SimGrid engine's options (simgrid_engine.hpp): the lowering, what to record, routing, and the switches of
// the scale shortcuts.
#pragma once

#include "sim/collectives/collective.hpp"
#include "topology/routing.hpp"

#include <vector>

namespace dtsim::sim {

// Each collective is lowered (sim::lower) for its group's layout: the machine of each member is its GPU's
// Node::machine; nvls is true when every machine of the group has an NVSwitch that reduces in the switch: a
// non-blocking Switch node of that machine (not the star's capacity-limited hub) linked to its GPUs by a link
// that carries its class's `switch_reduction`. NVLS transfers to and from the switch are capped at their `rate`.
struct SimgridOptions {
  Algorithm algorithm = Algorithm::Auto;
  int max_channels = 0;            // CollectiveTuning::max_channels (simulation.max_channels)
  bool record_transfers = false;   // fill Timeline::transfers (for the trace's link counters)
  topology::Routing routing = topology::Routing::Single;   // how switches choose among equal paths (cluster.routing)
  // Collective memoization (DESIGN.md "Scale"): a collective on an ISOLATED group instance (no directed link or
  // switch capacity its lowered transfers can use is usable by another group instance's collectives or by a
  // pipeline send) takes a time that depends only on its plan (kind, bytes, lowering) and on the sub-topology
  // its transfers cross: one collective per (plan, sub-topology) is played apart before the step, and every
  // collective of an isolated instance is a timer of that duration. Groups that share a link are always played
  // in full (Timeline::memo_refused_collectives counts those). With record_transfers, a replayed collective
  // records the transfers of the one played, on its own nodes.
  bool memoize = true;
  // Aggregated flows (DESIGN.md "Scale"): a collective whose lowering moves the same transfers in every step (a
  // ring) is played as one flow per transfer carrying every step's bytes, then a tail of the latencies the
  // steps would have added (sim::aggregate_steps, flow::Aggregates). Contention-free it takes exactly the
  // stepped time; under contention its flows share links at the ring's steady pace. Lowerings whose steps
  // differ (tree, halving-doubling, NVLS) are always played step by step.
  bool aggregate = true;
  // Symmetry across the ranks of each TP group (DESIGN.md "Scale"): when every TP group is isolated and moving
  // each rank one place along its TP group maps the rest of the traffic, routes and link capacities onto
  // themselves, only the first rank of each TP group is played, on links whose capacity is divided by the
  // number of its images that share them; every other rank has its timeline (RankTimeline::same_as). Refused
  // otherwise, with the reason in Timeline::symmetry. Checks and proof sketch: simgrid_symmetry.hpp.
  bool symmetry = true;
  // Per rank: its compute ops take this many times their duration (stragglers, sim/drivers/stragglers.hpp); empty:
  // every rank as its class. Ranks at different speeds are not images of each other: symmetry is refused.
  std::vector<double> compute_scale;
  std::vector<double> forward_scale;   // per rank, on its forward (and recompute) compute ops besides; empty: 1
};

}  // namespace dtsim::sim
