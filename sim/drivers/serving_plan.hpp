// `dtsim plan` on a serving scenario: the split of the cluster's GPUs into tensor-parallel, pipeline and
// data-parallel replicas that serves the scenario's load best (serving_plan.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/drivers/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim::drivers {

// One served plan: its scenario (the candidate as loaded, on the engine that timed it) and run_point's row.
struct ServingPlanRow {
  scenario::Scenario scenario;
  nlohmann::json run;
  bool confirmed = false;   // timed on the scenario's own engine (SimGrid) after the analytic screen
  [[nodiscard]] double objective(Objective o) const;
};

struct ServingPlans {
  std::vector<ServingPlanRow> rows;       // every split that serves, best first (the table shows `top`)
  std::size_t top = 0;
  std::size_t candidates = 0;             // tp x pp x dp splits of the GPUs tried
  std::map<std::string, std::size_t> pruned;   // why the others were dropped, with their counts
  int gpus = 0;
  bool stream = false;                    // a request stream (else a static batch)
};

// Every split of the GPUs the scenario leaves open (tp, pp and dp it does not give), each loaded as a scenario
// and run on the analytic engine; a static batch keeps its whole batch (batch x dp as written) split over the
// replicas, a stream is served as given. Ranked by `o`: time is a static batch's request time or a stream's
// median end-to-end latency, cost its USD per million output tokens, energy the facility's joules a token. The
// best `confirm` of a static batch run again on the scenario's engine. Nothing fits: the one-line InputError.
ServingPlans plan_serving(const scenario::Scenario& s, int top, int confirm, Objective o);

// `dtsim plan --format json` for a serving point: {"name", "objective", "plans", "candidates", "pruned"}.
nlohmann::json serving_plan_json(const scenario::Scenario& s, const ServingPlans& p, Objective o);
// The table `dtsim plan` prints for it.
std::string serving_plan_table(const scenario::Scenario& s, const ServingPlans& p, Objective o);
// The CSV rows of serving points' plan_json objects, with their header.
std::string serving_plan_csv(const std::vector<std::pair<std::string, nlohmann::json>>& points);

}  // namespace dtsim::drivers
