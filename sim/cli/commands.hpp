// The subcommands of the `dtsim` program. Each returns the process exit status; errors in input surface as
// InputError and are turned into one line and status 2 by main().
#pragma once

#include "sim/drivers/collective.hpp"

#include <optional>
#include <string>
#include <vector>

#include "results/collective_report.hpp"
#include "results/report.hpp"
#include "sim/drivers/sweep_rows.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim::cli {

enum class Format { Table, Json, Csv };

struct ScenarioArgs {
  std::string file;                 // empty = the embedded default scenario (or `text`)
  std::vector<std::string> sets;    // "key=value"
  Format format = Format::Table;
  std::optional<std::string> text;  // the scenario itself (the Python module's dicts, as JSON), named "<dict>"
};

// Where `run` writes besides stdout: a Perfetto trace, and a directory with result.json, result.csv and
// scenario.resolved.yaml (plus trace.json when a trace is asked for).
struct RunOutputs {
  std::string trace;
  std::string dir;
  std::string trace_ranks = "stages";   // --trace-ranks: stages | all | a list such as 0,8,16-23
  bool trace_links = false;             // --trace-links: per-link utilisation counters
};

// Simulates one step of each scenario point (DESIGN.md's result fields), as a table, JSON or CSV.
int run_command(const ScenarioArgs& args, const RunOutputs& outputs);
int topo_command(const ScenarioArgs& args, const std::string& dot_file);
int catalog_command(Format format);
// The memory plan per GPU of each scenario document (DESIGN.md's `memory` object); needs a `model` section.
int memory_command(const ScenarioArgs& args);

// The step graph of each scenario document: ops per rank class, collectives, FLOPs, and the compute-only
// timeline; optionally as Graphviz DOT (`dot_file`), with one op per kernel when `kernels`.
int graph_command(const ScenarioArgs& args, const std::string& dot_file, bool kernels);

// `dtsim collective` flags (DESIGN.md): the collective's options and the output format.
struct CollectiveArgs : drivers::CollectiveOptions {
  Format format = Format::Table;
};

int collective_command(const CollectiveArgs& args);

// `dtsim plan`: the scenario's parallel plan searched (sim/search), the best `top` printed, the first `confirm` of
// the analytic ranking run on the SimGrid engine.
struct PlanArgs {
  int top = 5;
  int confirm = 5;
  std::string objective = "time";
  std::string out;
  std::string emit;   // a framework (plan_emit.hpp): the best plan as its launch script
};
int plan_command(const ScenarioArgs& args, const PlanArgs& plan);

// `dtsim compare`: each point of the scenario (a sweep over clusters) with its best plan, one row each: step time,
// time, cost and energy to train, capital, the Pareto front of time against cost.
struct CompareArgs {
  int confirm = 5;
  std::string objective = "time";
  std::string out;
};
int compare_command(const ScenarioArgs& args, const CompareArgs& compare);


// Runs every point of each validation scenario (no file: the embedded tables of scenarios/validation) and prints,
// per row, the published figures of its `reference` beside dtsim's with the error, and per table the mean and
// largest absolute error.
// `dtsim sweep`: the sweep's points in up to `jobs` processes, rows streamed to OUT/results.{jsonl,csv}.
struct SweepArgs {
  int jobs = 1;
  drivers::Shard shard;
  bool resume = false;
  std::string out;   // empty: out/<scenario name>
  bool report = true;   // draw DIR/report.md and its charts when the sweep completes (not for a shard)
  int slurm = 0;              // --slurm N: submit the sweep as a Slurm array of N shards instead (sbatch)
  std::string partition;      // --partition, --time, --cpus: the array's Slurm resources
  std::string time;
  int cpus = 2;
};
drivers::Shard parse_shard(const std::string& text);   // "I/N"
int sweep_command(const ScenarioArgs& args, const SweepArgs& sweep);
// `dtsim sweep --slurm N`: writes OUT/sweep.sbatch (scripts/slurm/sweep.sbatch, `slurm_sweep_script()`) and submits
// it as an array of N tasks, each `--shard I/N --resume`; prints the job and the merge command.
int submit_sweep_array(const ScenarioArgs& args, const SweepArgs& sweep);
const std::string& slurm_sweep_script();
// `dtsim merge DIR`: a complete set of shard files into DIR/results.{jsonl,csv}, in sweep order.
int merge_command(const std::string& dir);
// `dtsim report DIR`: DIR/results.jsonl (or a run's DIR/result.json) drawn by gnuplot into DIR/plots/*.png, with
// DIR/report.md linking them. write_report returns the charts drawn.
// `choice`: --x, --series and --facet for a sweep's line charts (empty: the defaults).
int report_command(const std::string& dir, const results::ChartChoice& choice = {});
std::vector<std::string> write_report(const std::string& dir, const results::ChartChoice& choice = {});

// `dtsim claims`: the founding article's claims (DIR/claims.yaml, default the source tree's scenarios/claims)
// evaluated from their scenarios: the article's figures beside dtsim's and a verdict, as markdown (the page
// docs/seed-claims.md) or JSON, to stdout or to `out`; `only` restricts to some claim ids; `json_out`, when
// given, also gets the JSON of the same evaluation.
int claims_command(const std::string& dir, const std::string& out, Format format, const std::vector<std::string>& only,
                   const std::string& json_out = "");

int validate_command(const std::vector<std::string>& files, const std::vector<std::string>& sets,
                     const std::vector<std::string>& only, Format format);

}  // namespace dtsim::cli
