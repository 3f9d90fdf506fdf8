// Mixed clusters (`cluster.groups`, docs/planning.md): GPUs of several kinds, each pipeline stage's compute on the
// kind its ranks have. Ranks follow the groups: group 0's GPUs are ranks 0 .. n0 - 1, and so on.
//
// The step is generated on each kind, and each stage (rank class) takes its ops from the slowest kind among its
// ranks: a synchronous step waits for its slowest member, as with stragglers (sim/drivers/stragglers.hpp). A stage
// whose ranks hold two kinds (data-parallel replicas of each) runs its faster ranks at their own speed on SimGrid
// (`relative`), at the slower kind's on the analytic engine. Replicas given different micro-batch counts
// (`parallelism.replica_micro_batches`) form cohorts (workloads::RankClass::cohort): a class per stage and count,
// each generated with its own count, meeting in the gradients' reduction.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::drivers {

struct MixedStep {
  workloads::StepGraph graph;
  std::vector<double> relative;   // per rank: its kind's compute time of its stage over the stage's slowest kind's
};

// The group of each of the plan's `ranks`.
std::vector<int> group_of_ranks(const topology::ClusterSpec& c, int ranks);

// The step of `s` (a cluster with groups) spliced per stage as above.
MixedStep mixed_step(const scenario::Scenario& s);

// The plan search's step graph for a candidate workload of `s` (a cluster with groups): its layers balanced and its
// stages on their kinds, as `run` plays it. Holds a reference to `s`.
std::function<workloads::StepGraph(const workloads::Workload&)> mixed_graph_fn(const scenario::Scenario& s);

// `w` (a candidate plan of `s`) with its layers balanced as balance_stages does; unchanged without groups.
workloads::Workload balanced(const scenario::Scenario& s, workloads::Workload w);

// With groups, `parallelism.layers_per_stage` left out, and stages on different kinds: the layers split so that
// each pipeline stage takes about as long as the others (each layer to the stage, virtual stages included, whose
// physical stage's compute grows least); recorded in `auto_chosen`. Otherwise `s` unchanged.
scenario::Scenario balance_stages(scenario::Scenario s);

// With groups, `parallelism.replica_micro_batches` left out, and data-parallel replicas on different kinds: each
// replica takes micro-batches in proportion to its speed (every replica one, then each further one where the
// replica's step, (count + the bubble) x its slowest stage's compute per micro-batch, grows least); recorded in
// `auto_chosen`. Not when the replicas exchange data every micro-batch (experts across replicas, FSDP), where each
// must run the same count. Otherwise `s` unchanged.
scenario::Scenario balance_batches(scenario::Scenario s);

// The memory plan of `w` (a plan of `s`): with groups, each pipeline stage checked against its own kind (the
// smallest among its ranks), the stage with the least to spare reported; otherwise on the cluster's GPU.
workloads::MemoryPlan mixed_memory(const scenario::Scenario& s, const workloads::Workload& w);

// balance_stages, then balance_batches: how run, plan and graph split a mixed cluster's work.
scenario::Scenario balance(scenario::Scenario s);

}  // namespace dtsim::drivers
