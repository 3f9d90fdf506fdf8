// A scenario's bill of materials, prices and run length, and the energy and cost of a step it simulated: what
// `run`, `plan`, `compare` and `topo` share.
#pragma once

#include <nlohmann/json.hpp>

#include "results/cost.hpp"
#include "results/training_run.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/bill_of_materials.hpp"

namespace dtsim::drivers {

// The bill of `s`'s cluster with the scenario's `cost` prices and powers over the catalog's.
topology::BillOfMaterials scenario_bom(const scenario::Scenario& s, const topology::Topology& topo);

// Prices resolved; ownership of a bill with an unpriced part is an InputError naming the part.
results::Prices scenario_prices(const scenario::Scenario& s, const topology::BillOfMaterials& bom);

results::RunLength run_length(const scenario::Scenario& s);
double tokens_per_step(const workloads::Workload& w);

struct Accounting {
  results::StepEnergy energy;
  results::TrainingCost cost;
  results::Prices prices;
  double tokens_per_step = 0;
  // With a run length (training.tokens or training.steps): the run under failures and checkpoints.
  std::optional<results::TrainingRun> run;
  std::optional<results::SampledRun> sampled;   // with reliability.seed
  int gpus = 0;
  int held_gpus = 0;                            // with the spares (reliability.on_failure: spare)
  results::Recovery recovery;
};

// The expected run of `steps` steps of `step` seconds under the scenario's `reliability` and `cluster.storage`:
// failure rates scaled to the cluster's GPUs, servers, NICs and switches (the bill of materials), checkpoints of
// the memory plan's weights and optimizer states.
struct RunModel {
  results::RunInputs inputs;
  results::ClusterCounts counts;
};
RunModel run_model(const scenario::Scenario& s, const topology::BillOfMaterials& bom, Seconds step, double steps);
results::TrainingRun training_run(const scenario::Scenario& s, const topology::BillOfMaterials& bom, Seconds step,
                                  double steps);

// The step's energy and cost, from its GPUs' energy and its time.
Accounting account(const scenario::Scenario& s, const topology::BillOfMaterials& bom, Joules gpu_energy, Seconds step);

// Adds `energy` and `cost` (results/cost.hpp), and `training_run` with a run length, to a result object.
void add_accounting(nlohmann::json& row, const Accounting& a, Seconds step);

// DESIGN.md's `bill_of_materials` object, and its table.
nlohmann::json bom_json(const topology::BillOfMaterials& bom);
std::string bom_table(const topology::BillOfMaterials& bom);

}  // namespace dtsim::drivers
