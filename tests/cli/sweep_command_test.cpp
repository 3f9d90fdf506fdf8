// `dtsim sweep` and `dtsim merge` end to end (DESIGN.md "Sweeps"): the bytes do not depend on --jobs; a sweep
// killed mid-write resumes without losing, duplicating or tearing a row; shards merge into the full sweep; a
// point that cannot run is a row with its reason; bad options are one-line errors with status 2.
#include <csignal>
#include <cstdlib>
#include <unistd.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

const std::string kSmall = src("tests/data/scenarios/small-tp4.yaml");   // three points

// A fresh directory for one test case (ctest runs cases of this file in parallel).
fs::path fresh_sweep(const std::string& tag) { return fresh_dir("sweep", tag); }

Result sweep(const std::string& file, const fs::path& out, const std::string& options = "") {
  return dtsim("sweep " + file + " --out " + out.string() + " " + options);
}

// A sweep directory's two result files.
struct Outputs {
  std::string jsonl;
  std::string csv;
};

Outputs outputs(const fs::path& dir) { return {slurp(dir / "results.jsonl"), slurp(dir / "results.csv")}; }

// The files in `dir` are `want`, byte for byte.
void check_same(const fs::path& dir, const Outputs& want) {
  CHECK(slurp(dir / "results.jsonl") == want.jsonl);
  CHECK(slurp(dir / "results.csv") == want.csv);
}

// The full sweep with one job: what every other way of running it must reproduce byte for byte.
Outputs reference(const fs::path& dir) {
  const auto r = sweep(kSmall, dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return outputs(dir);
}

std::vector<json> lines(const std::string& jsonl) { return json_lines(jsonl); }

}  // namespace

TEST_CASE("sweep: rows in sweep order, the same bytes with --jobs 1 and --jobs 2") {
  const fs::path one = fresh_sweep("jobs1"), two = fresh_sweep("jobs2");
  const Outputs want = reference(one);
  const auto rows = lines(want.jsonl);
  REQUIRE(rows.size() == 3);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i]["point"]["index"] == static_cast<int>(i));
    CHECK(rows[i]["step_time_s"].get<double>() > 0);
  }
  CHECK(want.csv.rfind("name,point.index,", 0) == 0);
  CHECK(std::count(want.csv.begin(), want.csv.end(), '\n') == 4);   // a header and three rows
  const auto r = sweep(kSmall, two, "--jobs 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_same(two, want);
  CHECK(r.err.find("3/3 rows") != std::string::npos);   // the progress line
  const std::string resolved = slurp(one / "scenario.resolved.yaml");   // the three points, every default filled in
  std::size_t separators = 0;
  for (std::size_t at = resolved.find("\n---\n"); at != std::string::npos; at = resolved.find("\n---\n", at + 1))
    ++separators;
  CHECK(separators == 2);
  CHECK(resolved.find("small-tp4[intra_link=#2]") != std::string::npos);
  CHECK(resolved.find("dp_bucket_MB") != std::string::npos);
  for (const fs::path& d : {one, two}) fs::remove_all(d);
}

TEST_CASE("sweep: --resume after a kill mid-write keeps the whole rows, drops the torn one, runs the rest") {
  const fs::path full = fresh_sweep("full"), cut = fresh_sweep("cut");
  const Outputs want = reference(full);
  fs::create_directories(cut);
  // Killed while writing the second row: the first row whole, half of the second, no CSV yet.
  const std::size_t first = want.jsonl.find('\n') + 1;
  const std::size_t second = want.jsonl.find('\n', first) + 1;
  std::ofstream(cut / "results.jsonl") << want.jsonl.substr(0, first + (second - first) / 2);
  const auto r = sweep(kSmall, cut, "--resume --jobs 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_same(cut, want);
  CHECK(r.err.find("1/3 rows") == std::string::npos);   // the kept row was not run again: progress starts at 2/3
  CHECK(r.err.find("2/3 rows") != std::string::npos);
  // Resuming a finished sweep runs nothing and changes nothing.
  const auto again = sweep(kSmall, cut, "--resume");
  REQUIRE(again.status == 0);
  CHECK(again.err.find("rows,") == std::string::npos);
  check_same(cut, want);
  // Without --resume the directory starts afresh, to the same bytes.
  REQUIRE(sweep(kSmall, cut).status == 0);
  check_same(cut, want);
  for (const fs::path& d : {full, cut}) fs::remove_all(d);
}

TEST_CASE("sweep: a full disk stops it with the path and errno, leaves whole rows only, and --resume completes it") {
  const fs::path full = fresh_sweep("disk-ok"), cut = fresh_sweep("disk-full");
  const Outputs want = reference(full);
  // Room for the resolved scenario and one row (each about 13.5 kB), not two: the second row's append fails part
  // way through, which before the fix left half a row in results.jsonl.
  const Result r = dtsim("sweep " + kSmall + " --out " + cut.string() + " --jobs 1", disk_full_after(20480));
  CHECK(r.status == 2);
  CHECK(r.err.find("dtsim: error: --out: cannot write file (append failed: File too large) '" +
                   (cut / "results.jsonl").string() + "'") != std::string::npos);
  const std::string jsonl = slurp(cut / "results.jsonl");
  REQUIRE_FALSE(jsonl.empty());
  CHECK(jsonl.back() == '\n');
  CHECK(lines(jsonl).size() == 1);
  for (const auto& e : fs::directory_iterator(cut)) CHECK(e.path().extension() != ".tmp");
  const auto resumed = sweep(kSmall, cut, "--resume");
  REQUIRE_MESSAGE(resumed.status == 0, resumed.err);
  CHECK(resumed.err.find("2/3 rows") != std::string::npos);   // the whole row was kept
  check_same(cut, want);
  for (const fs::path& d : {full, cut}) fs::remove_all(d);
}

TEST_CASE("sweep: killed (SIGKILL) at several moments and resumed, the files end as an uninterrupted run's") {
  const fs::path full = fresh_sweep("uninterrupted");
  const std::string scenario = src("scenarios/default.yaml");   // six points, a fraction of a second in all
  REQUIRE(sweep(scenario, full, "--jobs 2").status == 0);
  const Outputs want = outputs(full);
  for (const char* delay : {"0.02", "0.06", "0.1", "0.15"}) {
    CAPTURE(delay);
    const fs::path dir = fresh_sweep(std::string("killed") + delay);
    const std::string killed = std::string("timeout -s KILL ") + delay + " " + DTSIM_BINARY + " sweep " + scenario +
                               " --jobs 2 --out " + dir.string() + " 2>/dev/null";
    (void)std::system(killed.c_str());
    const auto r = sweep(scenario, dir, "--resume --jobs 2");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    check_same(dir, want);
    fs::remove_all(dir);
  }
  fs::remove_all(full);
}

// The direct children of `pid` (Linux /proc), empty when it has none (yet).
std::vector<pid_t> children_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{0}/task/{0}/children", pid));
  std::vector<pid_t> out;
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

TEST_CASE("sweep: one worker killed leaves no row for its point, status 1, and --resume completes the sweep") {
  // Each point plays every transfer (no memo, symmetry or aggregation): about half a second, time to kill it.
  const std::string slow = "--no-report --jobs 1 --set simulation.memoize=false --set simulation.symmetry=false "
                           "--set simulation.aggregate=false --set training.global_batch=256";
  const fs::path full = fresh_sweep("worker_full"), dir = fresh_sweep("worker_killed");
  REQUIRE(sweep(kSmall, full, slow).status == 0);
  const Outputs want = outputs(full);
  const std::string err = (fs::temp_directory_path() / fmt::format("dtsim_worker_{}.err", ::getpid())).string();
  const pid_t sweeper = ::fork();
  REQUIRE(sweeper >= 0);
  if (sweeper == 0) {
    const std::string cmd = fmt::format("exec {} sweep {} --out {} {} 2>{}", DTSIM_BINARY, kSmall, dir.string(), slow, err);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // The first worker: the sweep's only child with --jobs 1. Kill it, and only it.
  std::vector<pid_t> workers;
  for (int i = 0; i < 2000 && workers.empty(); ++i) {
    workers = children_of(sweeper);
    if (workers.empty()) ::usleep(5000);
  }
  REQUIRE(workers.size() == 1);
  CHECK(::kill(workers.front(), SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(sweeper, &status, 0) == sweeper);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  const std::string said = slurp(err);
  fs::remove(err);
  CHECK(said.find("killed by signal 9 without a result; --resume runs it again") != std::string::npos);
  CHECK(said.find("sweep: 1 points did not finish; run the same command with --resume") != std::string::npos);
  // The other two points are there, whole; the killed one is not.
  const auto rows = lines(slurp(dir / "results.jsonl"));
  CHECK(rows.size() == 2);
  for (const auto& row : rows) CHECK(row["point"]["index"].get<int>() != 0);
  const auto resumed = sweep(kSmall, dir, "--resume " + slow);
  REQUIRE_MESSAGE(resumed.status == 0, resumed.err);
  CHECK(resumed.err.find("3/3 rows") != std::string::npos);   // only the lost point ran: progress goes 2 -> 3
  CHECK(resumed.err.find("1/3 rows") == std::string::npos);
  check_same(dir, want);
  for (const fs::path& d : {full, dir}) fs::remove_all(d);
}

TEST_CASE("sweep: --shard I/N slices by index modulo N, and merge gives the full sweep's bytes") {
  const fs::path full = fresh_sweep("unsharded"), dir = fresh_sweep("shards");
  const Outputs want = reference(full);
  REQUIRE(sweep(kSmall, dir, "--shard 1/2").status == 0);
  CHECK(lines(slurp(dir / "results.shard-1-of-2.jsonl")).size() == 2);   // points 0 and 2
  auto missing = dtsim("merge " + dir.string());
  CHECK(missing.status == 2);
  CHECK(missing.err.find("missing shards 2/2") != std::string::npos);
  CHECK(std::count(missing.err.begin(), missing.err.end(), '\n') == 1);
  REQUIRE(sweep(kSmall, dir, "--shard 2/2").status == 0);
  const auto merged = dtsim("merge " + dir.string());
  REQUIRE_MESSAGE(merged.status == 0, merged.err);
  check_same(dir, want);
  for (const fs::path& d : {full, dir}) fs::remove_all(d);
}

TEST_CASE("sweep: a point that cannot run is a row with its reason, never the end of the sweep") {
  const fs::path dir = fresh_sweep("invalid");
  const auto r = sweep(src("tests/data/scenarios/sweep-invalid.yaml"), dir, "--jobs 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto rows = lines(slurp(dir / "results.jsonl"));
  REQUIRE(rows.size() == 4);
  CHECK(rows[0]["step_time_s"].get<double>() > 0);                                   // micro-batch 1, tp 4
  CHECK(rows[1]["error"].get<std::string>().find("parallelism.dp") != std::string::npos);   // tp 3: load
  CHECK(rows[2]["error"].get<std::string>().find("training.micro_batch") != std::string::npos);   // plan check
  CHECK(rows[3].contains("error"));
  for (const auto& row : rows) CHECK(row["point"]["values"].size() == 2);
  CHECK(slurp(dir / "results.csv").find(",error") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep: bad options and a scenario without sweep axes are one-line errors with status 2") {
  const fs::path dir = fresh_sweep("bad");
  for (const std::string options : {"--shard 3/2", "--shard 0/2", "--shard two", "--jobs 0"}) {
    CAPTURE(options);
    const auto r = sweep(kSmall, dir, options);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(options.substr(0, options.find(' '))) != std::string::npos);
  }
  const auto plain = sweep(src("scenarios/bench/gpt3-175b-1024xa100.yaml"), dir);
  CHECK(plain.status == 2);
  CHECK(plain.err.find("no sweep axes") != std::string::npos);
  fs::create_directories(dir);
  const auto nothing = dtsim("merge " + dir.string());
  CHECK(nothing.status == 2);
  CHECK(nothing.err.find("no shard files") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep: strong and weak scaling efficiency against the smallest configuration, not the first row") {
  const fs::path dir = fresh_sweep("scaling");
  REQUIRE(sweep(src("tests/data/scenarios/sweep-scaling.yaml"), dir).status == 0);
  const auto rows = lines(slurp(dir / "results.jsonl"));
  REQUIRE(rows.size() == 3);
  const json& small = rows[1];   // 2 GPUs; the first row has 8
  REQUIRE(small["gpus"] == 2);
  CHECK(small["strong_scaling_efficiency"].get<double>() == 1.0);
  CHECK(small["weak_scaling_efficiency"].get<double>() == 1.0);
  for (const json& row : rows) {
    const double strong = small["step_time_s"].get<double>() * 2 /
                          (row["step_time_s"].get<double>() * row["gpus"].get<double>());
    CHECK(row["strong_scaling_efficiency"].get<double>() == doctest::Approx(strong).epsilon(1e-12));
    CHECK(row["weak_scaling_efficiency"].get<double>() ==
          doctest::Approx(row["tflops_per_gpu"].get<double>() / small["tflops_per_gpu"].get<double>()).epsilon(1e-12));
    CHECK(row["strong_scaling_efficiency"].get<double>() <= 1.0);   // more GPUs, less than linear speed-up
  }
  const std::string csv = slurp(dir / "results.csv");
  CHECK(csv.find("strong_scaling_efficiency") != std::string::npos);
  CHECK(csv.find("weak_scaling_efficiency") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep: --resume reruns the points whose resolved scenario changed, and only those") {
  const fs::path dir = fresh_sweep("changed"), fresh_run = fresh_sweep("changed_reference");
  REQUIRE(sweep(kSmall, dir).status == 0);
  const std::string before = slurp(dir / "results.jsonl");
  const auto r = sweep(kSmall, dir, "--resume --set model.layers=8");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find("3/3 rows") != std::string::npos);   // all three ran again
  REQUIRE(sweep(kSmall, fresh_run, "--set model.layers=8").status == 0);
  CHECK(slurp(dir / "results.jsonl") == slurp(fresh_run / "results.jsonl"));
  CHECK(slurp(dir / "results.jsonl") != before);
  for (const fs::path& d : {dir, fresh_run}) fs::remove_all(d);
}

TEST_CASE("sweep: shards started at once all succeed, and merge refuses a short shard and another sweep's shard") {
  const fs::path full = fresh_sweep("merge_reference"), dir = fresh_sweep("concurrent");
  const Outputs want = reference(full);
  std::string both;
  for (int i = 1; i <= 3; ++i)
    both += std::string(DTSIM_BINARY) + " sweep " + kSmall + " --shard " + std::to_string(i) + "/3 --out " +
            dir.string() + " 2>/dev/null & ";
  REQUIRE(std::system(("(" + both + "wait) ; exit 0").c_str()) == 0);
  for (int i = 1; i <= 3; ++i)
    CHECK(lines(slurp(dir / ("results.shard-" + std::to_string(i) + "-of-3.jsonl"))).size() == 1);
  REQUIRE(dtsim("merge " + dir.string()).status == 0);
  check_same(dir, want);
  // A shard cut short (a job that died): merge says how many points it has, and does not write.
  const fs::path cut = dir / "results.shard-2-of-3.jsonl";
  const std::string shard2 = slurp(cut);
  std::ofstream(cut) << "";
  auto short_merge = dtsim("merge " + dir.string());
  CHECK(short_merge.status == 2);
  CHECK(short_merge.err.find("hold 2 of the sweep's 3 points") != std::string::npos);
  // A shard of another sweep (other model depth): refused.
  const fs::path other = fresh_sweep("other_sweep");
  REQUIRE(sweep(kSmall, other, "--shard 2/3 --set model.layers=8").status == 0);
  fs::copy_file(other / "results.shard-2-of-3.jsonl", cut, fs::copy_options::overwrite_existing);
  auto foreign = dtsim("merge " + dir.string());
  CHECK(foreign.status == 2);
  CHECK(foreign.err.find("another sweep") != std::string::npos);
  std::ofstream(cut) << shard2;
  CHECK(dtsim("merge " + dir.string()).status == 0);
  for (const fs::path& d : {full, dir}) fs::remove_all(d);
  fs::remove_all(other);
}

namespace {

// Alive: in the process table and not a zombie.
bool alive(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(stat, text)) return false;
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

}  // namespace

TEST_CASE("sweep: SIGINT or SIGTERM stops it with 128+N, whole rows, no worker or simulation left, and --resume completes it") {
  const std::string slow = "--no-report --jobs 1 --set simulation.memoize=false --set simulation.symmetry=false "
                           "--set simulation.aggregate=false --set training.global_batch=256";
  const fs::path full = fresh_sweep("signal_full");
  REQUIRE(sweep(kSmall, full, slow).status == 0);
  const Outputs want = outputs(full);
  for (const int signo : {SIGINT, SIGTERM}) {
    CAPTURE(signo);
    const fs::path dir = fresh_sweep(fmt::format("signal{}", signo));
    const std::string err = (fs::temp_directory_path() / fmt::format("dtsim_signal_{}_{}.err", ::getpid(), signo)).string();
    const pid_t sweeper = ::fork();
    REQUIRE(sweeper >= 0);
    if (sweeper == 0) {
      ::signal(SIGINT, SIG_DFL);   // as from a terminal, whatever the test runner ignores
      const std::string cmd = fmt::format("exec {} sweep {} --out {} {} 2>{}", DTSIM_BINARY, kSmall, dir.string(), slow, err);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Stop it while its first worker simulates: the worker and that worker's simulation process must go too.
    std::vector<pid_t> family;
    for (int i = 0; i < 2000; ++i) {
      family = children_of(sweeper);
      if (!family.empty()) {
        const auto grandchildren = children_of(family.front());
        if (!grandchildren.empty()) {
          family.insert(family.end(), grandchildren.begin(), grandchildren.end());
          break;
        }
      }
      ::usleep(5000);
    }
    REQUIRE(family.size() >= 2);
    CHECK(::kill(sweeper, signo) == 0);
    int status = 0;
    REQUIRE(::waitpid(sweeper, &status, 0) == sweeper);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + signo);
    const std::string said = slurp(err);
    fs::remove(err);
    CHECK(said.find(fmt::format("sweep: stopped by signal {}", signo)) != std::string::npos);
    CHECK(said.find("simulation process died") == std::string::npos);
    for (int i = 0; i < 400 && std::any_of(family.begin(), family.end(), alive); ++i) ::usleep(5000);
    for (const pid_t pid : family) CHECK_MESSAGE(!alive(pid), pid);
    for (const auto& row : lines(slurp(dir / "results.jsonl"))) CHECK_FALSE(row.contains("error"));
    const auto resumed = sweep(kSmall, dir, "--resume " + slow);
    REQUIRE_MESSAGE(resumed.status == 0, resumed.err);
    check_same(dir, want);
    fs::remove_all(dir);
  }
  fs::remove_all(full);
}
