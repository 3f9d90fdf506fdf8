// `dtsim sweep --slurm N`: the sweep as a Slurm job array of N shards, submitted with sbatch. The script is
// scripts/slurm/sweep.sbatch (compiled in), written to OUT/sweep.sbatch and submitted from there with the
// program's own path, the scenario and the output directory made absolute, and the --set overrides passed on.
#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "sim/cli/command_support.hpp"
#include "sim/cli/commands.hpp"

extern char** environ;

namespace dtsim::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kNotStarted = -1;
constexpr int kKilled = -2;

struct Ran {
  int status = kNotStarted;
  std::string out, err;
};

// Runs `argv` (found on PATH), its stdout and stderr collected; its exit status, kNotStarted when it could not be
// started, kKilled when a signal ended it.
Ran run_program(const std::vector<std::string>& argv) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0) return {};
  if (::pipe(err_pipe) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return {};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  Ran r;
  const auto drain = [](int fd, std::string& into) {
    std::array<char, 4096> buf{};
    for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      into.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fd);
  };
  drain(out_pipe[0], r.out);   // sbatch writes little: reading one pipe, then the other, cannot fill either
  drain(err_pipe[0], r.err);
  if (spawned != 0) return {};
  int raw = 0;
  while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {}
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : kKilled;
  return r;
}

std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return text.substr(0, end);
}

std::string self_path() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dtsim") : p.string();
}

// A word as the shell reads it back, for the commands printed.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:-") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

int submit_sweep_array(const ScenarioArgs& args, const SweepArgs& sweep) {
  if (sweep.slurm < 1 || sweep.slurm > 100000)
    throw InputError("--slurm", std::to_string(sweep.slurm), "out of range", "a number of array tasks in [1, 100000]");
  if (sweep.shard.count != 1)
    throw InputError("--shard", fmt::format("{}/{}", sweep.shard.index, sweep.shard.count),
                     "is set by each array task of --slurm; with --slurm,", "no --shard");
  if (args.file.empty()) throw InputError("--slurm", std::to_string(sweep.slurm), "needs a scenario file:", "dtsim sweep FILE --slurm N");
  if (sweep.cpus < 1 || sweep.cpus > 4096)
    throw InputError("--cpus", std::to_string(sweep.cpus), "out of range", "CPUs per array task in [1, 4096]");
  // The scenario must load and have sweep axes before anything is submitted.
  const auto scenarios = load(args, true);
  if (scenarios.front().point.index < 0)
    throw InputError("sweep", "", "the scenario has no sweep axes; to simulate one point", "dtsim run", args.file);
  const std::string dir = fs::absolute(sweep.out.empty() ? default_out(scenarios.front()) : sweep.out).lexically_normal().string();
  results::make_directory(dir);
  const std::string script = dir + "/sweep.sbatch";
  results::write_file(script, slurm_sweep_script(), "--out");
  fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
  const std::string binary = self_path();
  std::vector<std::string> argv = {"sbatch", "--parsable", fmt::format("--array=1-{}", sweep.slurm),
                                   fmt::format("--cpus-per-task={}", sweep.cpus),
                                   fmt::format("--output={}/slurm-%A_%a.out", dir), "--export=ALL,DTSIM=" + binary};
  if (!sweep.time.empty()) argv.push_back("--time=" + sweep.time);
  if (!sweep.partition.empty()) argv.push_back("--partition=" + sweep.partition);
  const std::vector<std::string> tail = {script, fs::absolute(args.file).lexically_normal().string(), dir,
                                         std::to_string(sweep.slurm)};
  argv.insert(argv.end(), tail.begin(), tail.end());
  for (const auto& s : args.sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  const Ran r = run_program(argv);
  if (r.status == kNotStarted)
    throw InputError("--slurm", "sbatch", "cannot run (not on PATH):", "Slurm's client on this machine (Debian's slurm-client)");
  if (r.status == kKilled)
    throw InputError("--slurm", "sbatch", "was killed by a signal before it answered:", "an sbatch that runs to its end");
  if (r.status != 0)
    throw InputError("--slurm", std::to_string(sweep.slurm),
                     fmt::format("sbatch refused the array ({})", first_line(r.err.empty() ? r.out : r.err)),
                     "an array Slurm accepts: check --partition, --time and --cpus");
  const std::string job = first_line(r.out).substr(0, first_line(r.out).find(';'));
  std::vector<std::string> quoted;
  for (const auto& a : argv) quoted.push_back(shell_word(a));
  std::printf("sweep: submitted Slurm job %s, %d array tasks of %zu points, rows into %s\n", job.c_str(), sweep.slurm,
              scenarios.size(), dir.c_str());
  std::printf("  %s\n", fmt::format("{}", fmt::join(quoted, " ")).c_str());
  std::printf("when every task has finished: dtsim merge %s\n", shell_word(dir).c_str());
  // The same submission for task I alone (I for the shell to fill), every argument quoted for a shell.
  std::vector<std::string> again;
  for (const auto& a : argv)
    if (a != "--parsable") again.push_back(a.starts_with("--array=") ? "--array=I" : shell_word(a));
  std::printf("a task I that failed or was cancelled, again (it resumes): %s\n",
              fmt::format("{}", fmt::join(again, " ")).c_str());
  return 0;
}

}  // namespace dtsim::cli
