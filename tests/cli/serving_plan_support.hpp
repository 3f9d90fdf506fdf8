// What the `dtsim plan` serving tests share: a static-batch scenario, scenario files, the engines' flag lists
// (tests/data/frameworks), and a written launch script run with Slurm's commands stubbed.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli_support.hpp"

namespace serving_plan_support {

using namespace cli_support;

inline const char* const kServedBatch70b =
    "name: l70\n"
    "cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
    "model: {preset: llama2-70b}\n"
    "inference: {batch: 32, prompt_tokens: 1024, output_tokens: 256}\n"
    "parallelism: {tp: 8}\n";

// The script run with Slurm's commands stubbed: srun's arguments, one a line.
inline std::vector<std::string> served_launched(const fs::path& dir, const std::string& script, const std::string& env = "") {
  const fs::path job = dir / "job.sbatch";
  std::ofstream(job) << script;
  REQUIRE(std::system(("bash -n " + job.string()).c_str()) == 0);
  stub_slurm(dir, {"node1", "node2"});
  fs::remove(dir / "args");
  REQUIRE(std::system(fmt::format("cd {} && {} PATH={}:$PATH SLURM_JOB_ID=7 SLURM_JOB_NODELIST=node[1-2] SRUN_ARGS={} bash {}", dir.string(), env,
                                  (dir / "bin").string(), (dir / "args").string(), job.string())
                          .c_str()) == 0);
  const std::vector<std::string> args = srun_arguments(dir / "args");
  // srun's own option first: the launch follows it.
  REQUIRE(args.size() > 2);
  CHECK(args[0] == "--ntasks-per-node");
  const auto launch = args.begin() + (args[2] == "--mpi=pmix" ? 3 : 2);
  return {launch, args.end()};
}

inline std::string served_after(const std::vector<std::string>& args, const std::string& flag) {
  const auto it = std::ranges::find(args, flag);
  return it == args.end() || it + 1 == args.end() ? std::string("(absent)") : *(it + 1);
}

// Every `--flag` of `args` is in the engine's list, none twice.
inline void served_check_flags(const std::vector<std::string>& args, const std::string& list) {
  const auto known = listed(list);
  REQUIRE(known.size() > 30);   // trtllm-serve has 39, the others hundreds
  std::set<std::string> seen;
  for (const auto& a : args) {
    if (!a.starts_with("--")) continue;
    CHECK_MESSAGE(known.count(a) == 1, list, ": ", a);
    CHECK_MESSAGE(seen.insert(a).second, a, " twice");
  }
}


}  // namespace serving_plan_support
