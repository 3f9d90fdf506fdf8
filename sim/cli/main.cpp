// The dtsim program: arguments in, one subcommand out. The only place in dtsim that exits.
//   status 0: success; 2: bad input (one line on stderr); 3: internal error (a broken invariant).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "sim/cli/collective_options.hpp"
#include "sim/cli/commands.hpp"
#include "sim/simgrid/isolated.hpp"
#include "topology/error.hpp"

namespace {

using dtsim::cli::Format;

constexpr int kBadInput = 2;
constexpr int kInternal = 3;

const std::map<std::string, Format> kFormats = {{"table", Format::Table}, {"json", Format::Json}};
const std::map<std::string, Format> kRunFormats = {{"table", Format::Table}, {"json", Format::Json}, {"csv", Format::Csv}};

void add_scenario_options(CLI::App* cmd, dtsim::cli::ScenarioArgs& args, bool file_required,
                          const std::map<std::string, Format>& formats = kFormats) {
  auto* file = cmd->add_option("scenario", args.file, "scenario YAML file");
  if (file_required) file->required();
  cmd->add_option("--set", args.sets, "override a scenario key: key=value (repeatable)");
  cmd->add_option("--format", args.format, "output format")->transform(CLI::CheckedTransformer(formats));
}

// CLI11's message, with "did you mean" for a misspelt command or option: the commands' names, or the options of
// the command that was given.
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  const std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && std::ranges::find(commands, first) == commands.end())
    return dtsim::InputError("command", first, "unknown command", fmt::format("{}", fmt::join(commands, ", "))).what();
  std::string text = e.what();
  std::vector<std::string> options, extras = app.remaining();
  for (const auto* sub : app.get_subcommands()) {
    for (const auto* o : sub->get_options()) {
      for (const auto& n : o->get_lnames()) options.push_back("--" + n);
      for (const auto& n : o->get_snames()) options.push_back("-" + n);
    }
    for (const auto& extra : sub->remaining()) extras.push_back(extra);
  }
  std::ranges::sort(extras);
  extras.erase(std::unique(extras.begin(), extras.end()), extras.end());
  for (const auto& extra : extras)
    if (extra.starts_with("--"))
      if (const auto hint = dtsim::did_you_mean(extra, options); !hint.empty())
        text += extras.size() == 1 ? fmt::format("; {}", hint) : fmt::format("; {} {}", extra, hint);
  return text;
}

int dispatch(int argc, char** argv) {
  CLI::App app{"dtsim: a discrete-event simulator of distributed deep-learning training"};
  app.require_subcommand(1);
  dtsim::cli::ScenarioArgs run_args, topo_args, memory_args, graph_args;
  std::string graph_dot;
  bool graph_kernels = false;
  std::string dot_file;
  Format catalog_format = Format::Table;

  auto* run = app.add_subcommand("run", "simulate one step of a scenario (no file: the embedded default)");
  add_scenario_options(run, run_args, false, kRunFormats);
  dtsim::cli::RunOutputs run_outputs;
  run->add_option("--trace", run_outputs.trace, "write a Perfetto/Chrome trace of the step to FILE");
  run->add_option("--out", run_outputs.dir, "write result.json, result.csv and scenario.resolved.yaml to DIR");
  run->add_option("--trace-ranks", run_outputs.trace_ranks,
                  "ranks the trace shows: stages (default: one per pipeline stage), all, or a list such as 0,8,16-23");
  run->add_flag("--trace-links", run_outputs.trace_links, "add a utilisation counter per link direction to the trace");
  dtsim::cli::ScenarioArgs sweep_args;
  dtsim::cli::SweepArgs sweep_opts;
  std::string shard_text, merge_dir, report_dir;
  auto* sweep = app.add_subcommand("sweep", "run a scenario's sweep points in parallel processes, streaming rows to "
                                            "OUT/results.{jsonl,csv}");
  sweep->add_option("scenario", sweep_args.file, "scenario YAML file with sweep axes")->required();
  sweep->add_option("--set", sweep_args.sets, "override a scenario key: key=value (repeatable)");
  sweep->add_option("--jobs", sweep_opts.jobs, "worker processes (default 1)");
  sweep->add_option("--shard", shard_text, "run slice I of N (I/N): the points whose index is I-1 modulo N");
  sweep->add_flag("--resume", sweep_opts.resume, "keep the rows already written, run the rest");
  sweep->add_option("--out", sweep_opts.out, "output directory (default out/<scenario name>)");
  sweep->add_flag("!--no-report", sweep_opts.report, "do not draw the report when the sweep completes");
  sweep->add_option("--slurm", sweep_opts.slurm, "submit the sweep to Slurm as a job array of N shards (sbatch)");
  sweep->add_option("--partition", sweep_opts.partition, "--slurm: the partition");
  sweep->add_option("--time", sweep_opts.time, "--slurm: each task's time limit (Slurm's format, e.g. 02:00:00)");
  sweep->add_option("--cpus", sweep_opts.cpus, "--slurm: CPUs per task, its --jobs (default 2)");
  auto* merge = app.add_subcommand("merge", "combine a sweep's shard files into DIR/results.{jsonl,csv}");
  merge->add_option("dir", merge_dir, "the sweep's --out directory")->required();
  auto* report = app.add_subcommand("report", "draw a sweep's or a run's results with gnuplot: DIR/report.md and "
                                              "DIR/plots/*.png");
  report->add_option("dir", report_dir, "a dtsim sweep or dtsim run --out directory")->required();
  dtsim::results::ChartChoice chart_choice;
  report->add_option("--x", chart_choice.x, "the swept axis along x (default: the first numeric one, else gpus)");
  report->add_option("--series", chart_choice.series, "the swept axis that leads the lines' labels (default: all that vary)");
  report->add_option("--facet", chart_choice.facet, "a swept axis to split each chart into panels by");
  report->add_option("--size", chart_choice.size, "page (11 x 5.6 in, 10 pt) or column (3.3 x 2.4 in, 8 pt: a paper column)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, dtsim::results::ChartSize>{
          {"page", dtsim::results::ChartSize::Page}, {"column", dtsim::results::ChartSize::Column}}));
  auto* topo = app.add_subcommand("topo", "describe a scenario's topology: devices, links, diameter, bisection");
  add_scenario_options(topo, topo_args, true);
  topo->add_option("--dot", dot_file, "write the topology as Graphviz DOT to FILE");
  auto* memory = app.add_subcommand("memory", "memory plan per GPU (params, grads, optimizer, activations, KV cache) and fit");
  add_scenario_options(memory, memory_args, true);
  auto* graph = app.add_subcommand("graph", "the step graph: ops per pipeline stage, collectives, FLOPs, compute-only timeline");
  add_scenario_options(graph, graph_args, true);
  graph->add_option("--dot", graph_dot, "write the step graph as Graphviz DOT to FILE (small graphs)");
  graph->add_flag("--kernels", graph_kernels, "one op per kernel instead of one per layer pass");
  dtsim::cli::CollectiveArgs coll;
  auto* collective = dtsim::cli::add_collective_command(app, coll);
  auto* plan = app.add_subcommand("plan", "search the scenario's parallel plan: the fitting plans ranked, the best "
                                         "confirmed on the SimGrid engine");
  dtsim::cli::ScenarioArgs plan_args;
  dtsim::cli::PlanArgs plan_opts;
  add_scenario_options(plan, plan_args, true, kRunFormats);
  plan->add_option("--top", plan_opts.top, "plans printed (default 5)");
  plan->add_option("--confirm", plan_opts.confirm, "best plans of the analytic ranking run on the SimGrid engine (default 5)");
  plan->add_option("--objective", plan_opts.objective, "time | cost | energy (default time)");
  plan->add_option("--out", plan_opts.out, "directory for plans.json and plans.csv");
  plan->add_option("--emit", plan_opts.emit,
                   "write the best plan as a framework's launch in a Slurm script: megatron, torchtitan, deepspeed, nemo (training); "
                   "vllm, trtllm, sglang (serving) (to --out DIR/NAME.FRAMEWORK.sbatch, "
                   "else on standard output)");
  auto* compare = app.add_subcommand("compare", "each cluster of the scenario's sweep with its best plan: time, cost "
                                               "and energy to train, side by side, the Pareto front marked");
  dtsim::cli::ScenarioArgs compare_args;
  dtsim::cli::CompareArgs compare_opts;
  add_scenario_options(compare, compare_args, true, kRunFormats);
  compare->add_option("--confirm", compare_opts.confirm,
                      "best plans per cluster run on the SimGrid engine before the best is chosen (default 5)");
  compare->add_option("--objective", compare_opts.objective, "time | cost | energy (default time)");
  compare->add_option("--out", compare_opts.out, "directory for compare.json and compare.csv (dtsim report draws it)");
  auto* validate = app.add_subcommand("validate", "published measurements against dtsim: per row and per table error "
                                                  "(no file: the embedded tables, scenarios/validation)");
  std::vector<std::string> validate_files, validate_sets, validate_only;
  Format validate_format = Format::Table;
  validate->add_option("scenarios", validate_files, "validation scenario YAML files (reference figures per point)");
  validate->add_option("--set", validate_sets, "override a scenario key: key=value (repeatable)");
  validate->add_option("--only", validate_only, "only these rows, by configuration name (comma-separated or repeated)")
      ->delimiter(',');
  validate->add_option("--format", validate_format, "output format")->transform(CLI::CheckedTransformer(kFormats));
  auto* claims = app.add_subcommand("claims", "the founding article's claims beside dtsim's figures, with verdicts "
                                              "(the page docs/seed-claims.md)");
  std::string claims_dir, claims_out, claims_json, claims_format = "markdown";
  std::vector<std::string> claims_only;
  claims->add_option("--dir", claims_dir, "directory with claims.yaml and the claim scenarios (default: scenarios/claims)");
  claims->add_option("--out", claims_out, "write to FILE instead of stdout");
  claims->add_option("--format", claims_format, "markdown | json")->check(CLI::IsMember({"markdown", "json"}));
  claims->add_option("--json", claims_json, "also write the claims as JSON to FILE (one evaluation for both)");
  claims->add_option("--only", claims_only, "only these claims, by id (comma-separated or repeated)")->delimiter(',');
  auto* catalog = app.add_subcommand("catalog", "list the GPUs and links dtsim knows");
  catalog->add_option("--format", catalog_format, "output format")->transform(CLI::CheckedTransformer(kFormats));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string text = parse_error_text(app, e, argc, argv);
    // CLI11's own messages point at the help; ours already say what is allowed.
    std::cerr << "dtsim: error: " << text << (text.starts_with("command: ") ? "" : " (see dtsim --help)") << "\n";
    return kBadInput;
  }
  if (*run) return dtsim::cli::run_command(run_args, run_outputs);
  if (*plan) return dtsim::cli::plan_command(plan_args, plan_opts);
  if (*compare) return dtsim::cli::compare_command(compare_args, compare_opts);
  if (*collective) return dtsim::cli::collective_command(coll);
  if (*sweep) {
    if (!shard_text.empty()) sweep_opts.shard = dtsim::cli::parse_shard(shard_text);
    if (sweep->count("--slurm") > 0) return dtsim::cli::submit_sweep_array(sweep_args, sweep_opts);
    for (const char* slurm_only : {"--partition", "--time", "--cpus"})
      if (sweep->count(slurm_only) > 0)
        throw dtsim::InputError(slurm_only, "", "sets the Slurm array's resources, so it needs", "--slurm N");
    return dtsim::cli::sweep_command(sweep_args, sweep_opts);
  }
  if (*merge) return dtsim::cli::merge_command(merge_dir);
  if (*report) return dtsim::cli::report_command(report_dir, chart_choice);
  if (*topo) return dtsim::cli::topo_command(topo_args, dot_file);
  if (*memory) return dtsim::cli::memory_command(memory_args);
  if (*graph) return dtsim::cli::graph_command(graph_args, graph_dot, graph_kernels);
  if (*claims)
    return dtsim::cli::claims_command(claims_dir, claims_out, claims_format == "json" ? Format::Json : Format::Table,
                                      claims_only, claims_json);
  if (*validate) return dtsim::cli::validate_command(validate_files, validate_sets, validate_only, validate_format);
  return dtsim::cli::catalog_command(catalog_format);
}

}  // namespace

namespace {

// A large step's graph and per-rank timelines touch hundreds of MB once each: with transparent huge pages behind
// malloc the kernel faults them in 2 MiB at a time instead of 4 KiB (bench (a): 1.67 -> 1.33 s on one core).
// glibc reads its tunables once, at startup, so the program runs itself again with glibc.malloc.hugetlb=1 set;
// where that cannot be done it goes on as it is.
void with_huge_pages(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string current = tunables != nullptr ? tunables : "";
  if (current.find("glibc.malloc.hugetlb") != std::string::npos) return;
  const std::string wanted = current.empty() ? "glibc.malloc.hugetlb=1" : current + ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", wanted.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);   // returns only when it failed
}

// An error is one line whatever its parts hold (a reason or allowed list with a line break in it).
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

// Standard output is a file like the others: a write that fails (a full disk, `> /dev/full`) is the one-line error
// and exit status 2, never a silent 0 beside an empty file. Everything the command wrote is flushed here.
int finish(int status) {
  errno = 0;
  std::cout.flush();
  const bool written = std::cout.good();
  const bool flushed = std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
  if (written && flushed) return status;
  // errno names the cause when the last flush failed; a write that failed earlier has left no trace of why.
  const std::string why = errno != 0 ? std::strerror(errno) : "the stream refused a write";
  std::cerr << "dtsim: error: standard output: cannot write (write failed: " << why
            << "); the result was not written whole\n";
  return kBadInput;
}

// A simulation past a second draws a line on a terminal: the share of the step's ops played and the time left at
// that pace (estimated once a few percent are played: the first ones include setting up); erased at the end.
void progress_line(const dtsim::sim::SimulationProgress& p) {
  if (p.finished) {
    std::fputs("\r\033[K", stderr);
    return;
  }
  constexpr double kEstimateFrom = 0.02;
  std::string line = fmt::format("dtsim: simulating, {:.0f} % of the {} after {:.0f} s", 100 * p.share,
                                 p.requests ? "requests" : "ops", p.elapsed_s);
  if (p.share >= kEstimateFrom) line += fmt::format(", about {:.0f} s left", p.elapsed_s * (1 / p.share - 1));
  if (p.limit_s) line += fmt::format(" (limit {:g} s)", *p.limit_s);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  with_huge_pages(argv);
  if (::isatty(STDERR_FILENO) == 1) dtsim::sim::set_progress_sink(progress_line);
  try {
    return finish(dispatch(argc, argv));
  } catch (const dtsim::InputError& e) {
    std::cout.flush();
    std::cerr << "dtsim: error: " << one_line(e.what()) << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "dtsim: internal error: " << one_line(e.what()) << "\n";
    return kInternal;
  }
}
