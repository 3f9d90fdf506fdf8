// A killed `run` or `sweep` leaves nothing behind: its simulation children and a sweep's workers (and theirs) end
// with it, whatever signal ended it. The program runs in a session of its own, so that every process it started,
// however far down, is found by its session id after it is gone.
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;

namespace {

// The program in a new session, default signal dispositions, output discarded.
pid_t start(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setsid();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    std::vector<char*> argv{const_cast<char*>(DTSIM_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(DTSIM_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

// The live processes of session `sid` but `except` (a zombie has ended: only its exit status is left).
std::vector<pid_t> live_in_session(pid_t sid, pid_t except) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  REQUIRE(proc != nullptr);
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == except) continue;
    // A process may end between readdir and the read (ESRCH): then it is not live.
    std::string stat;
    try {
      stat = slurp(fs::path("/proc") / e->d_name / "stat");
    } catch (const std::exception&) {
      continue;
    }
    // pid (comm) state ppid pgrp session ...: comm may hold spaces, so read after its closing parenthesis.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (session == sid && state != 'Z' && state != 'X') out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

// Waits up to `seconds` for `done()`.
template <class Done>
bool within(double seconds, Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// Starts `args`, waits until the program has at least `children` processes under it, kills it with `sig` and
// checks that none of them outlives it.
void kill_and_check(const std::vector<std::string>& args, std::size_t children, int sig) {
  const pid_t pid = start(args);
  REQUIRE_MESSAGE(within(120, [&] { return live_in_session(pid, pid).size() >= children; }),
                  "the program never started its children");
  const auto before = live_in_session(pid, pid);
  ::kill(pid, sig);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));   // ended by the signal, or by its handler with an error
  // The parent-death signal is immediate; a child left running would play on for a minute (kLong).
  CHECK_MESSAGE(within(3, [&] { return live_in_session(pid, -1).empty(); }),
                fmt::format("{} of its {} processes outlived it", live_in_session(pid, -1).size(), before.size()));
  for (pid_t p : live_in_session(pid, -1)) ::kill(p, SIGKILL);   // not left for the next test either way
}

// A step that plays on SimGrid for a minute: GPT-3 175B over Ethernet (ECMP) on 12,288 GPUs (bench h).
const std::string kLong = src("scenarios/bench/gpt3-175b-eth-curve.yaml");

}  // namespace

TEST_CASE("run: killed by SIGKILL, SIGTERM or SIGINT, its simulation process ends with it") {
  for (int sig : {SIGKILL, SIGTERM, SIGINT}) {
    CAPTURE(sig);
    kill_and_check({"run", kLong, "--set", "cluster.nodes=1536"}, 1, sig);
  }
}

TEST_CASE("sweep: killed by SIGKILL, SIGTERM or SIGINT, its workers and their simulations end with it") {
  const fs::path dir = fresh_dir("orphan", "sweep");
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << slurp(kLong) << "sweep:\n  cluster.nodes: [1536, 1280, 1024, 768]\n";
  for (int sig : {SIGKILL, SIGTERM, SIGINT}) {
    CAPTURE(sig);
    // Two workers, each with its simulation process.
    kill_and_check({"sweep", (dir / "s.yaml").string(), "--jobs", "2", "--no-report", "--out", (dir / "out").string()},
                   4, sig);
    fs::remove_all(dir / "out");
  }
  fs::remove_all(dir);
}

TEST_CASE("simulation.max_seconds: a point past its limit is stopped with the one-line error, a sweep keeps the rest") {
  const auto started = std::chrono::steady_clock::now();
  const Result r = dtsim("run " + kLong + " --set cluster.nodes=1536 --set simulation.max_seconds=1.5");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(r.status == 2);
  CHECK(r.err.find("gpt3-175b-eth-curve.yaml: simulation.max_seconds: point gpt3-175b-eth-curve ran past its limit of "
                   "wall-clock seconds and was stopped: '1.5'") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(took < 30);   // stopped, not played to its end (a minute)
  // A sweep: the long point (on SimGrid) is an error row, the short one (the analytic engine, a quarter second)
  // is simulated.
  const fs::path dir = fresh_dir("orphan", "limit");
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << slurp(kLong) << "sweep:\n  simulation.engine: [simgrid, analytic]\n";
  const Result s = dtsim("sweep " + (dir / "s.yaml").string() +
                         " --set cluster.nodes=1536 --set simulation.max_seconds=5 --no-report --out " + (dir / "out").string());
  CHECK(s.status == 0);
  const auto rows = json_lines(slurp(dir / "out/results.jsonl"));
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    CAPTURE(row.dump());
    if (row["name"] == "gpt3-175b-eth-curve[engine=simgrid]")
      CHECK(row["error"].get<std::string>().find("simulation.max_seconds") != std::string::npos);
    else
      CHECK(row["step_time_s"].get<double>() > 0);
  }
  // Bad limits are the loader's one-line errors.
  for (const auto& [value, expect] : std::vector<std::pair<std::string, std::string>>{
           {"0", "simulation.max_seconds: out of range '0' (allowed: a number > 0 and <= 604800)"},
           {"soon", "simulation.max_seconds: not a number 'soon'"}}) {
    const Result bad = dtsim("run --set simulation.max_seconds=" + value);
    CHECK(bad.status == 2);
    CHECK(bad.err.find(expect) != std::string::npos);
  }
  // The resolved scenario keeps it.
  const Result kept = dtsim("run " + src("scenarios/default.yaml") + " --set simulation.max_seconds=600 --set simulation.engine=analytic --out " +
                            (dir / "run").string());
  CHECK(kept.status == 0);
  CHECK(slurp(dir / "run/scenario.resolved.yaml").find("max_seconds: 600") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("run: a simulation past a second draws a progress line on a terminal, and none elsewhere") {
  // `script` gives the program a terminal (util-linux, in every Debian); the line is redrawn in place (\r). A
  // machine that cannot open a pseudo-terminal (a container without /dev/pts) cannot show the line at all.
  if (std::system("script -qc true /dev/null > /dev/null 2>&1") != 0) {
    MESSAGE("no pseudo-terminal here: the progress line is not checked");
    return;
  }
  const std::string command = std::string(DTSIM_BINARY) + " run " + kLong +
                              " --set cluster.nodes=1536 --set simulation.max_seconds=3 > /dev/null";
  const Result r = dtsim("", "script -qc '" + command + "' /dev/null; exit 0; ");
  CHECK(r.out.find("dtsim: simulating, ") != std::string::npos);
  CHECK(r.out.find(" % of the ops after ") != std::string::npos);
  CHECK(r.out.find("(limit 3 s)") != std::string::npos);
  CHECK(r.out.find("simulation.max_seconds: point gpt3-175b-eth-curve ran past its limit") != std::string::npos);
  // A served stream too: a day of requests at 100 a second, the share of its requests served.
  const std::string stream = std::string(DTSIM_BINARY) + " run " + src("scenarios/bench/llama2-70b-stream-8xh100.yaml") +
                             " --set inference.requests.rate_per_s=100 --set inference.requests.duration_s=86400"
                             " --set simulation.max_seconds=4 > /dev/null";
  const Result served = dtsim("", "script -qc '" + stream + "' /dev/null; exit 0; ");
  CHECK(served.out.find(" % of the requests after ") != std::string::npos);
  CHECK(served.out.find("simulation.max_seconds: point llama2-70b-stream-8xh100 ran past its limit") != std::string::npos);
  // Without a terminal: the error line alone (the max_seconds case above counts its lines).
  const Result quiet = dtsim(std::string("run ") + kLong + " --set cluster.nodes=1536 --set simulation.max_seconds=2");
  CHECK(quiet.err.find("simulating") == std::string::npos);
}
