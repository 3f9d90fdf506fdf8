// A scenario as the program sees it after loading: plain structs of each layer plus where each key came from.
// No YAML type exists outside the loader.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/cost.hpp"
#include "results/training_run.hpp"
#include "topology/cluster.hpp"
#include "sim/collectives/collective.hpp"
#include "workloads/plan.hpp"
#include "workloads/step_graph.hpp"

namespace YAML {
class Node;
}

namespace dtsim::scenario {

enum class EngineKind { Simgrid, Analytic };

// The `simulation` section: which engine plays the step and how collectives are lowered.
struct SimulationSpec {
  EngineKind engine = EngineKind::Simgrid;
  sim::Algorithm collective_algo = sim::Algorithm::Auto;
  int max_channels = 0;    // rings per ring collective across machines, 0 = one per rank of a machine (NCCL's
                           // channels; sim::CollectiveTuning::max_channels)
  workloads::Granularity granularity = workloads::Granularity::Layer;
  bool memoize = true;     // SimGrid: replay collectives on isolated groups (sim::SimgridOptions::memoize)
  bool aggregate = true;   // SimGrid: a ring's steps as one flow per transfer (sim::SimgridOptions::aggregate)
  bool symmetry = true;    // SimGrid: play one rank of each TP group (sim::SimgridOptions::symmetry)
  bool interference = true;   // overlapped communication slows the compute beside it (sim/analytic/interference.hpp)
  std::optional<double> max_seconds;   // wall-clock limit of one point's run (run_point); none: no limit
};

// The `cost` section: how a run is paid for, and any price or power the catalog's should give way to. Rental:
// GPU-hours at gpu_hour_usd (default: the GPU's catalog rate), power included. Ownership: the bill of materials'
// capital over `years`, plus the facility's energy at kwh_usd. Unset fields take the catalog's (site_defaults()).
struct PartOverride {
  std::optional<double> usd;
  std::optional<double> watts;
};
struct CostSpec {
  results::CostMode mode = results::CostMode::Rental;
  std::optional<double> gpu_hour_usd;
  std::optional<double> gpu_usd;         // a GPU's purchase price (ownership)
  std::optional<double> years;
  std::optional<double> kwh_usd;
  std::optional<double> pue;
  std::map<std::string, PartOverride> parts;   // catalog part name -> its price or power here
};

// The `reliability` section (a whole training run, docs/planning.md): the failure classes and how the job
// checkpoints and restarts.
// `reliability.stragglers`: GPUs slower than the catalog's and NICs slower than their links' rate. A synchronous step
// waits for its slowest member (sim/drivers/stragglers.hpp). Factors are how many times longer (compute) or how many
// times slower (a NIC's links) than nominal, at least 1.
struct StragglerSpec {
  std::map<int, double> ranks;           // rank: its compute ops take `factor` times as long
  std::map<int, double> nodes;           // server: every GPU of it so (power capping, a hot rack)
  std::map<std::string, double> nics;    // NIC by name (dtsim topo): every link of it at 1 / factor of its rate
  double spread = 0;                     // each GPU's compute time times exp(spread z), z standard normal
  // Servers drawn slow at random: each with probability `slow_share`, all its GPUs `slow_factor` times longer, in
  // their forward computations only (recomputation included) when `slow_forward_only`.
  double slow_share = 0;
  double slow_factor = 1;
  bool slow_forward_only = false;
};
// `slow_nodes: default`: MegaScale (Jiang et al., NSDI 2024) on its Ampere cluster: slower in the forward pass.
inline constexpr double kSlowNodeShare = 0.005;
inline constexpr double kSlowNodeFactor = 1.10;
inline constexpr const char* kSlowNodeSource =
    "MegaScale (Jiang et al., NSDI 2024): about 0.5 % of machines run substantially slower (section 5.1), specific "
    "hosts taking about 10 % more time to execute the same forward computations (section 6.3)";

struct ReliabilitySpec {
  std::vector<results::FailureClass> failures = results::default_failure_classes();   // `none`: empty
  std::optional<double> interval_s;   // work between checkpoints; nullopt: auto (Daly's optimum)
  bool async = false;                 // checkpoints copied off the GPUs, then written while training goes on
  double restart_s = 600;             // detection and restart; reading the checkpoint is added (kRestartSource)
  std::optional<unsigned long long> seed;   // given: one run drawn at random beside the expectation
  std::optional<StragglerSpec> stragglers;
  results::OnFailure on_failure = results::OnFailure::Restart;   // results::Recovery
  int spares = 0;                     // servers the job holds beside its own (on_failure: spare)
  std::optional<double> repair_s;     // how long a failed server is out (no default: no source dtsim can cite)
};
inline constexpr const char* kRestartSource =
    "MegaScale (Jiang et al., NSDI 2024), section 6.3: detecting a failure and running the diagnostic tests takes "
    "less than 10 minutes";

// `cluster.storage`: the file system checkpoints are written to and read from, GB/s for the whole cluster. Absent:
// Llama 3's storage per GPU (kStorageSource).
struct StorageSpec {
  std::optional<double> write_GBps;
  std::optional<double> read_GBps;
};
inline constexpr double kStorageGBpsPerGpu = 2000.0 / 16384;
inline constexpr const char* kStorageSource =
    "Llama 3 (Meta 2024), section 3.3.1: Tectonic sustains 2 TB/s for 16,384 H100, 0.122 GB/s a GPU (BLOOM's "
    "2.3 TB checkpoint in about 40 s on 384 A100 is 0.15 GB/s a GPU)";

// The `reference` section: published figures to print beside dtsim's (the founding article's claims, a paper's
// measurement), keyed by result field (`scaling_efficiency`, `step_time_s`, `tp_comm_ms`, ...).
struct Reference {
  std::string source;
  std::map<std::string, double> values;
  // A ratio row: `values` are published ratios of this row's figures to those of the row named here (same file),
  // as a measurement of one benchmark on two systems gives them. Empty: absolute figures.
  std::string baseline;
  // Keys the rows set that the source does not publish (a table's own rule): `validate` also runs the rows with
  // these removed, at dtsim's defaults, beside the rows as written.
  std::vector<std::string> unstated;
  // Keys the source states otherwise than the rows set them (the software it names, where the table's own rule
  // runs another): the second run takes these values (dotted key -> its YAML value).
  std::map<std::string, std::string> stated;
};

// Which point of its file's `sweep:` a scenario is: its index in sweep order and the values it took.
struct SweepPoint {
  int index = -1;                                         // -1: the scenario has no sweep
  std::vector<std::pair<std::string, std::string>> values;   // dotted key -> value (flow-style YAML)
};

struct Scenario {
  std::string name;
  topology::ClusterSpec cluster;
  // The job: present when the scenario has a `model` section (then also `training` or `inference`, and
  // `parallelism`, whose `dp` defaults to gpus / (tp x pp)). A topology-only scenario has none.
  std::optional<workloads::Workload> workload;
  SimulationSpec simulation;
  CostSpec cost;
  Reference reference;
  ReliabilitySpec reliability;
  StorageSpec storage;
  SweepPoint point;
  std::string file;                          // where it was read from ("<default>" for the embedded one)
  // Loaded with keep_invalid_points: why this sweep point is not a valid scenario (then only name, file and
  // point are set). Empty otherwise.
  std::string invalid;
  std::map<std::string, std::string> origin; // dotted key -> "file:line" (or "--set") where it was given
  // The knobs left to `auto` (absent or written `auto`: training.micro_batch, parallelism.vpp, training.recompute,
  // training.offload_layers with it):
  // loaded at the framework's default, chosen by resolve_auto (the drivers' auto_knobs.hpp), then empty.
  std::vector<std::string> auto_keys;
  // What resolve_auto chose: dotted key -> value as the resolved scenario writes it, in auto_keys' order.
  std::vector<std::pair<std::string, std::string>> auto_chosen;
};

// The value that leaves a tunable knob (Scenario::auto_keys) to the plan search.
inline constexpr std::string_view kAuto = "auto";

// An override from the command line: `key` is a dotted path ("cluster.intra"), `value` YAML text.
struct Override {
  std::string key;
  std::string value;
};

// The most points a sweep expands to. Every point is loaded and held: 65,536 points take 16.5 s and 1.1 GB
// (`memory` on GPT 1.7B), a million took minutes and 17 GB. Larger grids: several files.
inline constexpr std::size_t kMostSweepPoints = 100'000;

// The largest batch a scenario may give (training.global_batch and micro_batch, inference.batch).
inline constexpr long long kMaxSequences = 1'000'000'000;

// Loads every YAML document of `text` (documents separated by `---`) as one scenario each, applying
// `overrides` to each; a document with `sweep:` axes gives one scenario per point, in sweep order (cartesian
// product of the axes, first axis outermost; the axes under `sweep.zip` advance together as one axis). Throws InputError with the file, line, key, value and what is allowed.
// `keep_invalid_points` (dtsim sweep): a sweep point that does not load is kept with its reason (`invalid`)
// instead of ending the load, unless no point of the document loads. `most_points`: the most points a sweep may
// expand to (the fuzz target passes fewer).
std::vector<Scenario> load_scenarios(const std::string& text, const std::string& file,
                                     const std::vector<Override>& overrides = {}, bool keep_invalid_points = false,
                                     std::size_t most_points = kMostSweepPoints);

// One scenario from a document built in code (no sweep, no overrides), read as a file's document is, without
// writing and parsing it as text (the planner builds one per candidate plan: the text round trip was 95 % of a
// search). `doc` is changed (cluster presets are expanded in place): pass a copy. Throws InputError.
Scenario load_scenario(YAML::Node doc, const std::string& file);
// The text of the scenario file `path` (InputError when it is no readable regular file).
std::string read_scenario_text(const std::string& path);
std::vector<Scenario> load_scenario_file(const std::string& path, const std::vector<Override>& overrides = {},
                                         bool keep_invalid_points = false);

// The documents of `text`, each that lists `reference.unstated` with those keys removed (from the document, its
// sweep axes, and the section maps a sweep axis gives whole), loaded as load_scenarios loads them: the rows of a
// validation table written from what its source states, every other key at dtsim's defaults; `overrides` applied
// after the removal, as load_scenarios applies them. Empty when no document lists any.
std::vector<Scenario> load_stated_only(const std::string& text, const std::string& file,
                                       const std::vector<Override>& overrides = {});

// The resolved scenario, every default filled in, as YAML that loads back to the same scenario.
std::string to_yaml(const Scenario& scenario);

// "file:line" of `key` (or of its nearest given parent), for errors raised after loading.
std::string locate(const Scenario& scenario, const std::string& key);

// The embedded default scenario of `./dtsim run` with no file.
const std::string& default_scenario_text();
// The embedded validation scenarios of `./dtsim validate` with no file: (origin, YAML text), scenarios/validation's.
const std::vector<std::pair<std::string, std::string>>& validation_scenarios();

// Where a scenario comes from: the text itself (named "<dict>": the Python module's dicts, as JSON), else a file,
// else (`file` empty) the embedded default; `sets` are --set's "key=value" overrides.
struct Source {
  std::string file;
  std::optional<std::string> text;
  std::vector<std::string> sets;
};
// Every scenario point of `source`, as load_scenarios loads them (InputError with the one-line message).
std::vector<Scenario> load(const Source& source, bool keep_invalid_points = false);

// "key=value" -> Override; throws InputError for a malformed one.
Override parse_set(const std::string& text);
// Each of --set's "key=value" texts, in order.
std::vector<Override> parse_sets(const std::vector<std::string>& texts);

}  // namespace dtsim::scenario
