// `dtsim sweep` and `dtsim merge` (DESIGN.md "Sweeps"): the points of a scenario's sweep run in up to --jobs
// worker processes; each finished row is appended to OUT/results.jsonl at once and OUT/results.csv is rewritten
// from the rows (write to a temporary file, then rename), so a kill at any moment leaves at most one torn JSONL
// line, which --resume drops before running what is missing. When the sweep completes both files are rewritten in
// sweep order: the bytes do not depend on --jobs. OUT/scenario.resolved.yaml holds every point's resolved
// scenario. --shard I/N runs the points whose index is I-1 modulo N, into OUT/results.shard-I-of-N.{jsonl,csv};
// `merge OUT` combines a complete set of shards.
#include <poll.h>
#include <sys/wait.h>
#include <signal.h>
#include <csignal>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "results/run_report.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/sweep.hpp"
#include "results/files.hpp"
#include "sim/drivers/run.hpp"
#include "sim/scenario/scenario_json.hpp"
#include "sim/process.hpp"
#include "sim/simgrid/isolated.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {
namespace {


using nlohmann::json;

// FNV-1a, 64 bits, as hex: a digest that stays the same from one build and run to the next.
std::string digest(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

// What identifies a row beyond its index: the point's resolved scenario (or why it does not load), and the whole
// sweep's. --resume keeps a row only for the same point; merge only combines rows of one sweep.
struct Stamp {
  std::vector<std::string> points;   // by index
  std::string sweep;
  int count = 0;
};

Stamp stamp_of(const std::vector<scenario::Scenario>& scenarios) {
  Stamp st;
  for (const scenario::Scenario& s : scenarios) st.points.push_back(digest(s.invalid.empty() ? scenario::to_yaml(s) : s.invalid));
  std::string all;
  for (const auto& d : st.points) all += d;
  st.sweep = digest(all);
  st.count = static_cast<int>(scenarios.size());
  return st;
}

void stamp(json& row, const Stamp& st) {
  const int index = row["point"]["index"].get<int>();
  row["point"]["count"] = st.count;
  row["point"]["digest"] = st.points[static_cast<std::size_t>(index)];
  row["point"]["sweep"] = st.sweep;
}

// A point that cannot be simulated (an invalid plan, an internal error) is a row with the reason.
json error_row(const scenario::Scenario& s, const std::string& reason) {
  return {{"name", s.name}, {"point", scenario::point_json(s.point)}, {"error", reason}};
}

// A simulation process that died (a signal, a crash) gave no result: no row, so --resume runs the point again.
bool died(const std::string& error) { return error.starts_with("simulation process died"); }

// SIGINT or SIGTERM while a sweep runs: the signal's number, for the loop to stop at its next wake-up.
volatile std::sig_atomic_t g_stop = 0;
extern "C" void note_stop(int signo) { g_stop = signo; }

// The sweep's own handlers for SIGINT and SIGTERM (a SIGINT ignored at start, under nohup, stays ignored), and
// what they replaced, for the workers to restore.
struct Dispositions {
  struct sigaction interrupt {}, terminate {};
};

Dispositions install_stop_handlers() {
  Dispositions before;
  ::sigaction(SIGINT, nullptr, &before.interrupt);
  ::sigaction(SIGTERM, nullptr, &before.terminate);
  struct sigaction mine {};
  mine.sa_handler = note_stop;   // no SA_RESTART: poll() returns EINTR and the loop sees the flag
  ::sigemptyset(&mine.sa_mask);
  if (before.interrupt.sa_handler != SIG_IGN) ::sigaction(SIGINT, &mine, nullptr);
  ::sigaction(SIGTERM, &mine, nullptr);
  return before;
}

// One point in a forked worker: its row as JSON text on `fd`. The worker is a process group of its own, so the
// sweep can stop it and its simulation process together; it dies of the signals the sweep had before it began.
[[noreturn]] void work(const scenario::Scenario& s, int fd, const Dispositions& restore) {
  ::setpgid(0, 0);
  ::sigaction(SIGINT, &restore.interrupt, nullptr);
  ::sigaction(SIGTERM, &restore.terminate, nullptr);
  std::string text;
  try {
    text = run_point(s).dump();
  } catch (const std::exception& e) {
    if (died(e.what())) sim::exit_child(1);
    text = error_row(s, e.what()).dump();
  }
  // Checked before the row is sent: a leak must not pass as a result.
  if (sim::found_leaks()) sim::exit_child(sim::kLeakStatus, /*checked=*/true);
  sim::exit_child(sim::write_all(fd, text) ? 0 : 1, /*checked=*/true);
}

struct Worker {
  pid_t pid = 0;
  const scenario::Scenario* scenario = nullptr;
  std::string out;
};


// How a worker ended, for the message when it left no result.
std::string ending(int status) {
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  return "ended";
}

// Runs `todo` in up to `jobs` workers, adding each finished row to `rows` and to the files as it arrives (the CSV
// at most once a second, and at the end). A worker that ends without a result (killed, out of memory) leaves no
// row: its point is returned, for a later --resume to run again.
std::vector<const scenario::Scenario*> run_points(const std::vector<const scenario::Scenario*>& todo, int jobs, const Files& files,
                                        const Stamp& st, Rows& rows, const SweepObserver& observer,
                                                  std::size_t& done, std::size_t total, const Dispositions& restore) {
  std::map<int, Worker> running;   // by the pipe's read end
  std::vector<const scenario::Scenario*> lost;
  std::size_t next = 0;
  auto csv_written = std::chrono::steady_clock::now();
  // Ends every running worker's group; their points are lost (--resume runs them). Rows already written stay whole.
  const auto end_workers = [&] {
    for (const auto& [fd, w] : running) {
      ::kill(-w.pid, SIGTERM);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {}
      ::close(fd);
      lost.push_back(w.scenario);
    }
    running.clear();
  };
  // However the loop ends, a row that cannot be written (a full disk) included, no worker is left behind.
  struct EndWorkers {
    const decltype(end_workers)& end;
    ~EndWorkers() { end(); }
  } guard{end_workers};
  while (next < todo.size() || !running.empty()) {
    if (g_stop != 0) {   // stopped: each worker's group ended, its point lost (--resume runs it); rows kept whole
      end_workers();
      for (; next < todo.size(); ++next) lost.push_back(todo[next]);
      return lost;
    }
    while (next < todo.size() && running.size() < static_cast<std::size_t>(jobs)) {
      std::array<int, 2> fds{};
      if (::pipe(fds.data()) != 0) throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
      std::fflush(stdout);
      std::fflush(stderr);
      const pid_t pid = sim::fork_tied();
      if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
      if (pid == 0) {
        sim::set_progress_sink(nullptr);
        ::close(fds[0]);
        for (const auto& [fd, other] : running) ::close(fd);   // the other workers' pipes are not this one's
        work(*todo[next], fds[1], restore);
      }
      ::setpgid(pid, pid);   // also here: kill(-pid) must find the group even before the worker has run
      ::close(fds[1]);
      running.emplace(fds[0], Worker{pid, todo[next], {}});
      ++next;
    }
    std::vector<pollfd> polled;
    for (const auto& [fd, w] : running) polled.push_back({fd, POLLIN, 0});
    if (::poll(polled.data(), polled.size(), 250) < 0 && errno != EINTR)   // a signal between checks waits 250 ms at most
      throw std::runtime_error(fmt::format("poll failed: {}", std::strerror(errno)));
    for (const pollfd& p : polled) {
      if (p.revents == 0) continue;
      Worker& w = running.at(p.fd);
      std::array<char, 65536> buffer{};
      const ssize_t n = ::read(p.fd, buffer.data(), buffer.size());
      if (n > 0) {
        w.out.append(buffer.data(), static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      ::close(p.fd);
      int status = 0;
      ::waitpid(w.pid, &status, 0);
      json row = json::parse(w.out, nullptr, false);
      if (!row.is_object()) {
        if (observer.warning)
          observer.warning(fmt::format("sweep: {}: the worker {} without a result; --resume runs it again",
                                       w.scenario->name, ending(status)));
        lost.push_back(w.scenario);
        running.erase(p.fd);
        continue;
      }
      stamp(row, st);
      results::append_file(files.jsonl, row.dump() + "\n", "--out");
      rows.emplace(w.scenario->point.index, std::move(row));
      if (std::chrono::steady_clock::now() - csv_written >= std::chrono::seconds(1)) {
        replace_file(files.csv, csv_text(rows));
        csv_written = std::chrono::steady_clock::now();
      }
      ++done;
      if (observer.row) observer.row(done, total, w.scenario->name);
      running.erase(p.fd);
    }
  }
  return lost;
}

}  // namespace


void check_sweep(const std::vector<scenario::Scenario>& scenarios) {
  if (scenarios.front().point.index < 0)
    throw InputError("sweep", "", "the scenario has no sweep axes; to simulate one point", "dtsim run",
                     scenarios.front().file);
  for (std::size_t i = 0; i < scenarios.size(); ++i)
    if (scenarios[i].point.index != static_cast<int>(i))
      throw InputError("sweep", "", "the file has several YAML documents; a sweep is", "one document with sweep axes",
                       scenarios.front().file);
}

SweepResult sweep(const std::vector<scenario::Scenario>& scenarios, const std::string& dir, const SweepOptions& options,
                  const SweepObserver& observer) {
  check_count("--jobs", options.jobs, 1);
  check_sweep(scenarios);
  g_stop = 0;   // a process that sweeps again (the Python module) starts unstopped
  results::make_directory(dir);
  const Files files = files_of(dir, options.shard);
  std::string resolved;   // every point's resolved scenario, next to the rows (an invalid point: its reason)
  for (const scenario::Scenario& s : scenarios)
    resolved += (resolved.empty() ? "" : "---\n") +
                (s.invalid.empty() ? scenario::to_yaml(s) : fmt::format("# {}: not loaded: {}\n", s.name, s.invalid));
  replace_file(dir + "/scenario.resolved.yaml", resolved);
  std::vector<const scenario::Scenario*> mine;
  for (const scenario::Scenario& s : scenarios)
    if (s.point.index % options.shard.count == options.shard.index - 1) mine.push_back(&s);
  const Stamp st = stamp_of(scenarios);
  Rows rows;
  if (options.resume)   // rows of this shard whose point is still the same: the same resolved scenario
    for (auto& [index, row] : read_rows(files.jsonl))
      if (index >= 0 && index < st.count && index % options.shard.count == options.shard.index - 1 &&
          row["point"].value("digest", "") == st.points[static_cast<std::size_t>(index)] &&
          !died(row.value("error", std::string())))   // a dead process's row (written before this was checked)
        rows.emplace(index, std::move(row));
  write_both(files, rows);   // drops a torn line; without --resume, starts afresh
  std::vector<const scenario::Scenario*> todo;
  for (const scenario::Scenario* s : mine) {
    if (rows.contains(s->point.index)) continue;
    if (!s->invalid.empty()) {   // no worker needed
      json row = error_row(*s, s->invalid);
      stamp(row, st);
      rows.emplace(s->point.index, std::move(row));
      continue;
    }
    todo.push_back(s);
  }
  SweepResult out{files, 0, 0, 0};
  std::size_t done = mine.size() - todo.size();
  if (observer.start) observer.start(done, mine.size());
  const Dispositions before = install_stop_handlers();
  const auto lost = run_points(todo, options.jobs, files, st, rows, observer, done, mine.size(), before);
  ::sigaction(SIGINT, &before.interrupt, nullptr);
  ::sigaction(SIGTERM, &before.terminate, nullptr);
  out.rows = rows.size();
  out.lost = lost.size();
  if (g_stop != 0) {
    write_both(files, rows);
    out.signal = static_cast<int>(g_stop);
    return out;
  }
  if (options.shard.count == 1 && lost.empty()) add_scaling(rows);   // shards: merge adds them
  write_both(files, rows);
  return out;
}


MergeResult merge(const std::string& dir) {
  static const std::regex shard_file(R"(results\.shard-([0-9]+)-of-([0-9]+)\.jsonl)");
  std::map<int, std::set<int>> found;   // shard count -> indices present
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, shard_file)) found[std::stoi(m[2])].insert(std::stoi(m[1]));
  }
  if (ec) {
    const std::string reason = fmt::format("cannot read directory ({})", ec.message());
    throw InputError("merge", dir, reason, "a sweep's --out directory");
  }
  if (found.empty())
    throw InputError("merge", dir, "no shard files in the directory",
                     "results.shard-I-of-N.jsonl from dtsim sweep --shard");
  if (found.size() > 1)
    throw InputError("merge", dir, "shards of different counts N in the directory", "the shards of one sweep");
  const auto& [count, present] = *found.begin();
  std::string missing;
  for (int i = 1; i <= count; ++i)
    if (!present.contains(i)) missing += fmt::format("{}{}/{}", missing.empty() ? "" : ", ", i, count);
  if (!missing.empty())
    throw InputError("merge", dir, fmt::format("missing shards {}; merging needs", missing), "all N shards");
  // Every row of one sweep, in its own shard's slice, each point once, all points there.
  Rows rows;
  std::string sweep_digest;
  int points = -1;
  for (int i = 1; i <= count; ++i) {
    const std::string file = files_of(dir, {i, count}).jsonl;
    for (auto& [index, row] : read_rows(file)) {
      const json& p = row["point"];
      const std::string where = fmt::format("{} (point {})", file, index);
      if (!p.contains("sweep") || !p["sweep"].is_string() || !p.contains("count") || !p["count"].is_number_integer())
        throw InputError("merge", where, "a row without its sweep's stamp", "rows written by dtsim sweep --shard");
      if (points < 0) {
        points = p["count"].get<int>();
        sweep_digest = p["sweep"].get<std::string>();
      }
      if (p["sweep"].get<std::string>() != sweep_digest || p["count"].get<int>() != points)
        throw InputError("merge", where, "a row of another sweep than the first shard's", "the shards of one sweep");
      if (index % count != i - 1)
        throw InputError("merge", where, fmt::format("a point outside shard {}/{}'s slice", i, count),
                         fmt::format("points whose index is {} modulo {}", i - 1, count));
      rows.emplace(index, std::move(row));
    }
  }
  if (points < 0 || static_cast<int>(rows.size()) != points)
    throw InputError("merge", dir,
                     fmt::format("the shards hold {} of the sweep's {} points; merging needs", rows.size(), points),
                     "every shard complete (rerun the short ones with --resume)");
  add_scaling(rows);
  write_both(files_of(dir, {1, 1}), rows);
  return {rows.size(), count};
}


}  // namespace dtsim::drivers
