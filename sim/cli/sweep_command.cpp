// `dtsim sweep` and `dtsim merge`: the sweep driver (sim/drivers/sweep.hpp) with a progress line on stderr, and
// the report drawn when the rows are complete.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "sim/cli/command_support.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/sweep.hpp"

namespace dtsim::cli {
namespace {

// The report at the end of a sweep or a merge: the rows are written whatever happens here, so a report that
// cannot be drawn (no gnuplot, no simulated row) is a warning, not a failed sweep.
void draw_report(const std::string& dir) {
  try {
    const auto charts = write_report(dir);
    std::fprintf(stderr, "report in %s/report.md (%zu charts)\n", dir.c_str(), charts.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "no report drawn: %s\n", e.what());
  }
}

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// The progress line on stderr: a bar redrawn in place on a terminal, one line per row otherwise.
class Progress {
 public:
  void start(std::size_t done, std::size_t total) {
    done_ = done, total_ = total;
    start_ = std::chrono::steady_clock::now();
  }
  void finished(std::size_t done, const std::string& name) {
    done_ = done, ++ran_;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = elapsed / static_cast<double>(ran_) * static_cast<double>(total_ - done_);
    const std::size_t width = 30, filled = total_ == 0 ? width : width * done_ / total_;
    const std::string line = fmt::format("sweep [{}{}] {}/{} rows, {} elapsed, ETA {}", std::string(filled, '#'),
                                         std::string(width - filled, ' '), done_, total_, clock_text(elapsed),
                                         clock_text(eta));
    if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%s%s", line.c_str(), done_ == total_ ? "\n" : "");
    else std::fprintf(stderr, "%s: %s\n", line.c_str(), name.c_str());
    std::fflush(stderr);
  }

 private:
  std::size_t total_ = 0, done_ = 0, ran_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::string default_out(const scenario::Scenario& s) {
  const std::string name = s.name.substr(0, s.name.find('['));
  return "out/" + (name.empty() ? std::string("sweep") : name);
}

drivers::Shard parse_shard(const std::string& text) {
  static const std::regex form(R"(([0-9]{1,6})/([0-9]{1,6}))");
  std::smatch m;
  if (std::regex_match(text, m, form)) {
    const drivers::Shard s{std::stoi(m[1]), std::stoi(m[2])};
    if (s.index >= 1 && s.index <= s.count) return s;
  }
  throw InputError("--shard", text, "expected I/N with 1 <= I <= N", "for example 3/8");
}

int sweep_command(const ScenarioArgs& args, const SweepArgs& sweep) {
  drivers::check_count("--jobs", sweep.jobs, 1);   // before loading, as the driver checks it again
  const auto scenarios = load(args, true);
  drivers::check_sweep(scenarios);
  const std::string dir = sweep.out.empty() ? default_out(scenarios.front()) : sweep.out;
  Progress progress;
  drivers::SweepObserver observer;
  observer.start = [&](std::size_t done, std::size_t total) { progress.start(done, total); };
  observer.row = [&](std::size_t done, std::size_t, const std::string& name) { progress.finished(done, name); };
  observer.warning = [](const std::string& message) { std::fprintf(stderr, "%s\n", message.c_str()); };
  const auto r = drivers::sweep(scenarios, dir, {sweep.jobs, sweep.shard, sweep.resume}, observer);
  if (r.signal != 0) {
    std::fprintf(stderr, "\nsweep: stopped by signal %d: %zu whole rows in %s; run the same command with --resume\n",
                 r.signal, r.rows, r.files.jsonl.c_str());
    return 128 + r.signal;
  }
  std::fprintf(stderr, "sweep: %zu rows in %s and %s\n", r.rows, r.files.jsonl.c_str(), r.files.csv.c_str());
  if (r.lost > 0) {
    std::fprintf(stderr, "sweep: %zu points did not finish; run the same command with --resume\n", r.lost);
    return 1;
  }
  if (sweep.report && sweep.shard.count == 1) draw_report(dir);
  return 0;
}

int merge_command(const std::string& dir) {
  const auto r = drivers::merge(dir);
  std::fprintf(stderr, "merge: %zu rows from %d shards into %s/results.{jsonl,csv}\n", r.rows, r.shards, dir.c_str());
  draw_report(dir);
  return 0;
}

}  // namespace dtsim::cli
