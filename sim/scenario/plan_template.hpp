// A scenario as the template of the plan search's candidates: its resolved keys with those the search sets removed
// where the scenario did not give them, so that each candidate loads with the framework's defaults for its plan
// (the plan driver searches every such key, auto_knobs only those left to `auto`).
#pragma once

#include <optional>
#include <string>
#include <yaml-cpp/yaml.h>

#include "sim/scenario/scenario.hpp"
#include "sim/search/plan_search.hpp"

namespace dtsim::scenario {

// `key` (dotted) was written by the scenario, its sweep point or --set, and not as `auto`.
bool given(const Scenario& s, const std::string& key);

struct Template {
  const Scenario& base;
  YAML::Node node;
  sim::search::Fixed fixed;   // what the scenario gives (the rest is searched)
  std::optional<int> dp;      // parallelism.dp when given
  int cp = 1;                 // context parallelism: not searched, part of the model-parallel product
};

// `s` as a template: every plan key it did not give left to the search.
Template make_template(const Scenario& s);

// The candidate `c` of `t` on `gpus` GPUs as a scenario, on the SimGrid engine or the analytic one (InputError when
// it is not a valid plan).
Scenario candidate(const Template& t, const sim::search::PlanChoice& c, int gpus, bool simgrid);

// The candidate's workload, or the one-line reason it is not a plan (for sim::search::search).
sim::search::Made make(const Template& t, const sim::search::PlanChoice& c, int gpus);

}  // namespace dtsim::scenario
