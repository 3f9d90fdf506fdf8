// The SimGrid engine: plays a StepGraph on a topology with flow-level link contention.
//
// Platform built in code from our Topology (no XML): every device a transfer starts or ends at a host, every
// link one shared link per direction with its bandwidth x protocol efficiency and its latency, a device with a
// finite switching capacity (the star's hub) a shared link every route through it crosses, routes from
// topology::Router. Network model
// set explicitly to the textbook one: CM02, no cross-traffic, no TCP-gamma cap, fairbottleneck sharing
// (../shared/SIMGRID.md); the result's `network_model` says so.
//
// Every rank is played (rank classes are expanded), but where the symmetry shortcut applies; compute ops are
// timers and transfers are activities created just in time (when their dependencies are met), so live
// transfers stay bounded. One SimGrid engine per process: callers run each
// simulation in a child process (run_isolated).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/timeline.hpp"
#include "topology/builders.hpp"
#include "topology/routing.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim {

// Each collective is lowered (sim::lower) for its group's layout: the machine of each member is its GPU's
// Node::machine; nvls is true when every machine of the group has an NVSwitch that reduces in the switch: a
// non-blocking Switch node of that machine (not the star's capacity-limited hub) linked to its GPUs by a link
// whose catalog class has `switch_reduction`. NVLS transfers to and from the switch are capped at their `rate`.
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
};

// Plays `graph` on `topology`: rank r runs on topology.gpus()[r]. Must run in a process that has not run a
// SimGrid simulation before (see run_isolated).
Timeline play_simgrid(const workloads::StepGraph& graph, const topology::Topology& topology, const SimgridOptions& options);

// Times one collective per size, one after the other, over the GPUs `ranks` (indices into topology.gpus()),
// in one simulation; each time runs from the collective's start (the previous one's end) to its end. `routing` and
// `aggregate` as in SimgridOptions. Same process rule as play_simgrid.
std::vector<Seconds> time_collectives(workloads::CollectiveKind kind, const std::vector<Bytes>& sizes,
                                      const std::vector<int>& ranks, const topology::Topology& topology,
                                      const GroupLayout& layout, Algorithm algorithm,
                                      topology::Routing routing = topology::Routing::Single, bool aggregate = true,
                                      int max_channels = 0);

// Runs `work` in a forked child and returns what it returned (any bytes). An exception in the child comes back
// as the same message: InputError as InputError, anything else as std::runtime_error.
std::string run_isolated(const std::function<std::string()>& work);

}  // namespace dtsim::sim
