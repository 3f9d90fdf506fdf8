// Stragglers (`reliability.stragglers`, docs/planning.md): GPUs slower than the catalog's and NICs slower than their
// links' rate, played in the step. A synchronous step waits for its slowest member: a TP group at its slowest
// rank's pace every layer, a pipeline at its slowest stage's, the data-parallel reduction for its slowest replica.
//
// SimGrid plays every rank at its own speed (symmetry refused), so each collective starts when its last member
// arrives; the analytic engine plays one timeline per stage, each at its slowest rank's speed. Both play the graph
// whose stages run at their slowest rank's speed (slowed_by_class), SimGrid with each rank's own speed relative to
// that (relative_scale): the timeline the interference pass replays per stage is its slowest rank's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "sim/timeline.hpp"
#include "topology/topology.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::drivers {

// Per rank, how many times longer its compute takes: named ranks and servers, slow servers drawn at random and the
// spread (seeded by reliability.seed, 0 when absent), multiplied; `forward`: its forward and recompute ops besides
// (slow servers with `pass: forward`). InputError for a rank or server the plan lacks.
struct Factors {
  std::vector<double> all;
  std::vector<double> forward;
  [[nodiscard]] double of_forward(std::size_t r) const { return all[r] * forward[r]; }
};
Factors straggler_factors(const scenario::Scenario& s, const topology::Topology& topo, int ranks);

// `topo` with the named NICs' links at 1 / factor of their rate; InputError for a name that is not a NIC.
topology::Topology with_slow_nics(const scenario::Scenario& s, topology::Topology topo);

// `g` with each class's compute ops lengthened by its slowest rank's factors (forward ops by both).
workloads::StepGraph slowed_by_class(workloads::StepGraph g, const Factors& factor);
// Per rank, its factors over its class's slowest (each at most 1): SimgridOptions::compute_scale and forward_scale.
Factors relative_scale(const workloads::StepGraph& g, const Factors& factor);

// Per step, the seconds a rank's compute stream sits idle, by what it waited for: each gap before a compute op is
// put down to the dependency that ended last (a collective's purpose, CommPurpose's names; `pipeline` for a send
// or receive; `host` for a host op), and the time from its last compute op to its last op's end to that op. The
// mean over ranks; nullopt when the timeline has no ranks (the analytic engine).
std::optional<std::map<std::string, double>> waits(const workloads::StepGraph& g, const sim::Timeline& t);

// The expected factor of the slowest of `gpus` GPUs (servers of `per_node`) under the spread and the slow servers.
double expected_slowest(const scenario::StragglerSpec& st, int gpus, int per_node);

// The `stragglers` result object (docs/results.md).
nlohmann::json stragglers_json(const scenario::Scenario& s, const Factors& factor, Seconds clean,
                               Seconds slowed, const std::optional<std::map<std::string, double>>& clean_waits,
                               const std::optional<std::map<std::string, double>>& slowed_waits);

}  // namespace dtsim::drivers
