// `dtsim sweep --slurm N` without a Slurm: an sbatch stand-in on PATH records the command line the program builds
// (the real submission runs in tests/slurm/run); flags that make no sense without --slurm, or with it, refused.
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "cli/cli_support.hpp"

using namespace cli_support;

TEST_CASE("sweep --slurm: docs/sweeps.md's script written beside the rows and submitted as an array of N shards") {
  const fs::path dir = fresh_dir("slurm", "submit");
  fs::create_directories(dir / "bin");
  // The stand-in prints a job id as `sbatch --parsable` does and keeps its arguments, one a line.
  std::ofstream(dir / "bin/sbatch") << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << (dir / "args.txt").string()
                                    << "\necho 4242\n";
  ::chmod((dir / "bin/sbatch").c_str(), 0755);
  const auto r = dtsim("sweep " + src("tests/data/scenarios/sweep-slurm.yaml") + " --slurm 4 --cpus 1 --time 00:10:00 "
                       "--partition debug --set training.global_batch=64 --out " + (dir / "out").string(),
                       "PATH=" + (dir / "bin").string() + ":$PATH");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("sweep: submitted Slurm job 4242, 4 array tasks of 12 points") == 0);
  CHECK(r.out.find("when every task has finished: dtsim merge " + (dir / "out").string()) != std::string::npos);
  CHECK(slurp(dir / "out/sweep.sbatch") == slurp(src("scripts/slurm/sweep.sbatch")));
  CHECK(slurp(src("docs/sweeps.md")).find(slurp(src("scripts/slurm/sweep.sbatch"))) != std::string::npos);   // shown whole
  std::vector<std::string> args;
  std::istringstream in(slurp(dir / "args.txt"));
  for (std::string a; std::getline(in, a);) args.push_back(a);
  const auto has = [&](const std::string& a) { return std::find(args.begin(), args.end(), a) != args.end(); };
  CHECK(has("--parsable"));
  CHECK(has("--array=1-4"));
  CHECK(has("--cpus-per-task=1"));
  CHECK(has("--time=00:10:00"));
  CHECK(has("--partition=debug"));
  CHECK(has("--export=ALL,DTSIM=" + fs::canonical(DTSIM_BINARY).string()));
  // Then the script, the scenario and the directory (absolute), N, and the overrides for each task's sweep.
  const auto script = std::find(args.begin(), args.end(), (dir / "out/sweep.sbatch").string());
  REQUIRE(script != args.end());
  REQUIRE(args.end() - script == 6);
  CHECK(script[1] == src("tests/data/scenarios/sweep-slurm.yaml"));
  CHECK(script[2] == (dir / "out").string());
  CHECK(script[3] == "4");
  CHECK(script[4] == "--set");
  CHECK(script[5] == "training.global_batch=64");
  fs::remove_all(dir);
}

TEST_CASE("sweep --slurm: the resubmission it prints is the same submission for one task, quoted for a shell") {
  const fs::path dir = fresh_dir("slurm", "again");
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin/sbatch") << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS\"\necho 4242\n";
  ::chmod((dir / "bin/sbatch").c_str(), 0755);
  // An output directory a shell would split, expand or run: spaces, quotes, back-quotes, $( ), a glob.
  const fs::path ran = dir / "ran";
  const fs::path out = dir / ("o u't\"`touch " + ran.string() + "`$(touch " + ran.string() + ")*");
  const std::string env = "PATH=" + (dir / "bin").string() + ":$PATH ARGS=" + (dir / "first.txt").string();
  // The command line of this test goes through a shell too: the directory in single quotes, its quote escaped.
  std::string quoted_out = "'";
  for (char c : out.string()) quoted_out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted_out += "'";
  const auto r = dtsim("sweep " + src("tests/data/scenarios/sweep-slurm.yaml") + " --slurm 4 --set training.global_batch=64 "
                       "--out " + quoted_out, env);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string marker = "again (it resumes): ";
  const auto at = r.out.find(marker);
  REQUIRE(at != std::string::npos);
  const std::string again = r.out.substr(at + marker.size(), r.out.find('\n', at) - at - marker.size());
  REQUIRE(again.starts_with("sbatch --array=I "));
  // Run it as a user would, with the task filled in, and compare what sbatch receives.
  std::ofstream(dir / "again.sh") << "sbatch --array=3 " << again.substr(std::string("sbatch --array=I ").size()) << "\n";
  REQUIRE(std::system(("PATH=" + (dir / "bin").string() + ":$PATH ARGS=" + (dir / "second.txt").string() + " sh " +
                       (dir / "again.sh").string() + " > /dev/null").c_str()) == 0);
  CHECK_FALSE(fs::exists(ran));
  const auto lines = [](const std::string& text) {
    std::vector<std::string> v;
    std::istringstream in(text);
    for (std::string a; std::getline(in, a);) v.push_back(a);
    return v;
  };
  auto first = lines(slurp(dir / "first.txt"));
  std::erase(first, "--parsable");
  std::replace(first.begin(), first.end(), std::string("--array=1-4"), std::string("--array=3"));
  CHECK(lines(slurp(dir / "second.txt")) == first);
  CHECK(std::find(first.begin(), first.end(), out.string()) != first.end());
  fs::remove_all(dir);
}

TEST_CASE("sweep --slurm: no sbatch, a bad count, --shard beside it and its flags without it are one-line errors") {
  const std::string sweep = "sweep " + src("tests/data/scenarios/sweep-slurm.yaml") + " --out /tmp/dtsim-slurm-never ";
  for (const auto& [args, prefix, expect] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--slurm 4", "PATH=/nonexistent", "--slurm: cannot run (not on PATH): 'sbatch'"},
           {"--slurm 0", "", "--slurm: out of range '0'"},
           {"--slurm 2 --shard 1/2", "", "--shard: is set by each array task of --slurm"},
           {"--partition debug", "", "--partition: sets the Slurm array's resources, so it needs (allowed: --slurm N)"},
           {"--slurm 2 --cpus 0", "", "--cpus: out of range '0'"}}) {
    CAPTURE(args);
    const auto e = dtsim(sweep + args, prefix);
    CHECK(e.status == 2);
    CHECK(e.err.find("dtsim: error: " + expect) == 0);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
  fs::remove_all("/tmp/dtsim-slurm-never");
}
