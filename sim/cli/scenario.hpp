// A scenario as the program sees it after loading: plain structs of each layer plus where each key came from.
// No YAML type exists outside the loader.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/cluster.hpp"
#include "workloads/plan.hpp"

namespace dtsim::cli {

struct Scenario {
  std::string name;
  topology::ClusterSpec cluster;
  // The job: present when the scenario has a `model` section (then also `training` or `inference`, and
  // `parallelism`, whose `dp` defaults to gpus / (tp x pp)). A topology-only scenario has none.
  std::optional<workloads::Workload> workload;
  std::string file;                          // where it was read from ("<default>" for the embedded one)
  std::map<std::string, std::string> origin; // dotted key -> "file:line" (or "--set") where it was given
};

// An override from the command line: `key` is a dotted path ("cluster.intra"), `value` YAML text.
struct Override {
  std::string key;
  std::string value;
};

// Loads every YAML document of `text` (documents separated by `---`) as one scenario each, applying
// `overrides` to each. Throws InputError with the file, line, key, value and what is allowed.
std::vector<Scenario> load_scenarios(const std::string& text, const std::string& file,
                                     const std::vector<Override>& overrides = {});
std::vector<Scenario> load_scenario_file(const std::string& path, const std::vector<Override>& overrides = {});

// The resolved scenario, every default filled in, as YAML that loads back to the same scenario.
std::string to_yaml(const Scenario& scenario);

// "file:line" of `key` (or of its nearest given parent), for errors raised after loading.
std::string locate(const Scenario& scenario, const std::string& key);

// The embedded default scenario of `./dtsim run` with no file.
const std::string& default_scenario_text();

}  // namespace dtsim::cli
