// `dtsim report DIR`: the rows of a sweep (DIR/results.jsonl), of a run (DIR/result.json) or a compare (DIR/compare.json) drawn by gnuplot into
// DIR/plots/*.png, with DIR/report.md linking them. The scripts and data stay beside the charts, so a chart can
// be restyled and redrawn with gnuplot alone.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "results/report.hpp"
#include "results/serving_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/process.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every line an object: a torn or foreign line is an error, not a row silently dropped.
std::vector<json> jsonl_rows(const std::string& path) {
  std::vector<json> rows;
  std::istringstream in(read_text(path));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    json row = json::parse(line, nullptr, false);
    if (!row.is_object())
      throw InputError("report", fmt::format("{}:{}", path, number), "a line that is not a JSON object",
                       "rows written by dtsim sweep (rerun it with --resume to repair a torn file)");
    if (const std::string problem = results::row_problem(row); !problem.empty())
      throw InputError("report", row.contains("name") && row["name"].is_string() ? row["name"].get<std::string>() : "row",
                       problem, "rows written by dtsim sweep",
                       fmt::format("{}:{}", path, number));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<json> result_rows(const std::string& path) {
  json doc = json::parse(read_text(path), nullptr, false);
  std::vector<json> rows;
  if (doc.is_object()) rows.push_back(doc);
  else if (doc.is_array()) rows = doc.get<std::vector<json>>();
  else throw InputError("report", path, "not a result object or an array of them", "result.json from dtsim run --out");
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (const std::string problem = results::row_problem(rows[i]); !problem.empty())
      throw InputError("report", fmt::format("result {}", i + 1), problem, "results written by dtsim run --out", path);
  return rows;
}

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs gnuplot on `script` in `dir`. Empty when it drew the chart; else what went wrong, on one line (gnuplot's
// own messages, which it writes on several, are kept in `dir/<script>.log`).
std::string run_gnuplot(const std::string& gnuplot, const std::string& dir, const std::string& script) {
  const std::string log = script + ".log";
  std::fflush(nullptr);
  const pid_t pid = sim::fork_tied();
  if (pid < 0) return "cannot start gnuplot";
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) sim::exit_child(127);
    if (!std::freopen(log.c_str(), "w", stderr)) sim::exit_child(127);
    ::execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    sim::exit_child(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return "lost the gnuplot process";
  const std::string messages = read_text(dir + "/" + log);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::filesystem::remove(dir + "/" + log);
    return "";
  }
  std::string first;
  for (std::size_t at = 0; at < messages.size() && first.empty();) {   // the first non-blank line
    const std::size_t end = std::min(messages.find('\n', at), messages.size());
    first = messages.substr(at, end - at);
    first.erase(0, first.find_first_not_of(" \t^"));
    at = end + 1;
  }
  return fmt::format("gnuplot failed on {} ({}; all of it in {}/{})", script, first.empty() ? "no message" : first, dir,
                     log);
}

}  // namespace

std::vector<std::string> write_report(const std::string& dir, const results::ChartChoice& choice) {
  namespace fs = std::filesystem;
  std::vector<json> rows;
  std::string source;
  json compare;
  if (fs::exists(dir + "/compare.json")) {
    source = "compare.json";
    compare = json::parse(read_text(dir + "/compare.json"), nullptr, false);
    if (compare.is_discarded())
      throw InputError("report", dir + "/compare.json", "not JSON", "compare.json written by dtsim compare --out");
  } else if (fs::exists(dir + "/results.jsonl")) {
    source = "results.jsonl";
    rows = jsonl_rows(dir + "/results.jsonl");
  } else if (fs::exists(dir + "/result.json")) {
    source = "result.json";
    rows = result_rows(dir + "/result.json");
  } else {
    throw InputError("report", dir, "neither compare.json, results.jsonl nor result.json in the directory",
                     "a dtsim sweep --out directory (merged, for shards), a dtsim run --out or a dtsim compare --out "
                     "directory");
  }
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty())
    throw InputError("report", "gnuplot", "not found on PATH",
                     "Debian's gnuplot-nox (./dtsim installs it when run as root: apt-get install gnuplot-nox)");
  results::Report report;
  try {
    const fs::path where = fs::path(dir).lexically_normal();
    const std::string title = (where.has_filename() ? where : where.parent_path()).filename().string();
    const bool serving = std::ranges::any_of(rows, results::is_serving_row);
    if ((serving || !compare.is_null()) && !(choice.x.empty() && choice.series.empty() && choice.facet.empty()))
      throw InputError(!choice.x.empty() ? "--x" : !choice.series.empty() ? "--series" : "--facet", "",
                       "lays out a training sweep's line charts, not a serving sweep's or a compare's:",
                       "no --x, --series or --facet for this directory");
    report = !compare.is_null() ? results::build_compare_report(compare, fmt::format("dtsim compare: {}", title))
             : serving          ? results::build_serving_report(rows, fmt::format("dtsim report: {}", title), source)
                                : results::build_report(rows, fmt::format("dtsim report: {}", title), source, choice);
  } catch (const std::invalid_argument& e) {
    // A chart option the rows cannot draw: "option\tvalue\treason\tallowed" (results/sweep_charts.hpp).
    const std::string what = e.what();
    if (std::ranges::count(what, '\t') == 3) {
      const auto a = what.find('\t'), b = what.find('\t', a + 1), c = what.find('\t', b + 1);
      throw InputError(what.substr(0, a), what.substr(a + 1, b - a - 1), what.substr(b + 1, c - b - 1), what.substr(c + 1));
    }
    throw InputError("report", dir + "/" + source, e.what(),
                     compare.is_null() ? "at least one simulated row" : "a compare.json in which a cluster fits");
  }
  results::make_directory(dir + "/plots");
  report.files.push_back({"plots/size.gp", results::chart_size_gp(choice.size)});
  // The summary last: it links charts, so it is written only once they are drawn.
  const results::ReportFile* summary = nullptr;
  for (const auto& f : report.files)
    if (f.path == "report.md") summary = &f;
    else results::write_file(dir + "/" + f.path, f.text, "report");
  std::vector<std::string> charts;
  for (const auto& script : report.scripts) {
    const fs::path p(script);
    if (const auto failed = run_gnuplot(gnuplot, (fs::path(dir) / p.parent_path()).string(), p.filename().string());
        !failed.empty())
      throw std::runtime_error(failed);
    charts.push_back(dir + "/" + fs::path(p).replace_extension(".png").string());
  }
  if (summary) results::write_file(dir + "/" + summary->path, summary->text, "report");
  return charts;
}

int report_command(const std::string& dir, const results::ChartChoice& choice) {
  if (!choice.series.empty() && choice.series == choice.facet)
    throw InputError("--facet", choice.facet, "is the --series axis too:", "another axis");
  const auto charts = write_report(dir, choice);
  std::printf("report: %s/report.md with %zu charts in %s/plots\n", dir.c_str(), charts.size(), dir.c_str());
  return 0;
}

}  // namespace dtsim::cli
