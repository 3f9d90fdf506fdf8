// `dtsim plan --emit`: the best plan as a framework's own launch in a Slurm script, every flag checked against the
// framework's own list (tests/data/frameworks), and the plans and names it cannot write as one-line errors.
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "cli/plan_test_support.hpp"

using namespace cli_support;
using nlohmann::json;
using plan_test_support::small_scenario;

namespace {

// The `--name` tokens of the command a script runs (after pretrain_gpt.py), in order.
std::vector<std::string> emitted_flags(const std::string& script) {
  std::vector<std::string> out;
  const auto from = script.find("\"$MEGATRON/pretrain_gpt.py\"");
  REQUIRE(from != std::string::npos);
  std::istringstream words(script.substr(from));
  for (std::string w; words >> w;)
    if (w.starts_with("--")) out.push_back(w);
  return out;
}

// Megatron-LM's flag names (core_r0.11.0's megatron/training/arguments.py; the file cites the commit).
std::set<std::string> megatron_flag_names() {
  std::set<std::string> names;
  std::istringstream in(slurp(src("tests/data/frameworks/megatron-lm-arguments.txt")));
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("--")) names.insert(line);
  return names;
}

}  // namespace

TEST_CASE("plan --emit megatron: the best plan as Megatron-LM's own flags in a Slurm script, every flag one it has") {
  const fs::path s = small_scenario("emit", "simulation: {engine: analytic}\n");
  // The best plan Megatron-LM can run: the first ranked without ZeRO 2 or 3 (it shards optimizer states only).
  const auto ranked = json::parse(dtsim("plan " + s.string() + " --top 1000 --confirm 0 --format json").out);
  json plan;
  for (const json& p : ranked["plans"])
    if (p["parallelism"]["zero"].get<int>() < 2) {
      plan = p;
      break;
    }
  REQUIRE(plan.is_object());
  const auto r = dtsim("plan " + s.string() + " --top 1 --confirm 0 --emit megatron");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string& script = r.out;
  CHECK(script.starts_with("#!/bin/bash\n"));
  CHECK(script.find("#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n") != std::string::npos);
  CHECK(script.find("srun torchrun --nnodes 1 --nproc-per-node 8 ") != std::string::npos);
  // A script bash reads.
  const fs::path file = s.parent_path() / "job.sbatch";
  std::ofstream(file) << script;
  CHECK(std::system(("bash -n " + file.string()).c_str()) == 0);
  // Every flag is one of Megatron-LM's, none twice, and the plan's own are the best plan's.
  const auto flags = emitted_flags(script);
  const auto names = megatron_flag_names();
  REQUIRE(names.size() > 300);
  for (const auto& f : flags) CHECK_MESSAGE(names.count(f) == 1, f);
  CHECK(std::set<std::string>(flags.begin(), flags.end()).size() == flags.size());
  const auto has = [&](const std::string& flag_and_value) { return script.find(" " + flag_and_value + " \\\n") != std::string::npos; };
  CHECK(has(fmt::format("--tensor-model-parallel-size {}", plan["parallelism"]["tp"].get<int>())));
  CHECK(has(fmt::format("--pipeline-model-parallel-size {}", plan["parallelism"]["pp"].get<int>())));
  CHECK(has(fmt::format("--micro-batch-size {}", plan["training"]["micro_batch"].get<int>())));
  CHECK(has("--global-batch-size 32"));
  CHECK(has("--num-layers 24"));
  CHECK(has("--hidden-size 2304"));
  // --out: one script a point beside plans.json.
  const fs::path out = s.parent_path() / "out";
  REQUIRE(dtsim("plan " + s.string() + " --top 1 --confirm 0 --emit megatron --out " + out.string()).status == 0);
  CHECK(slurp(out / "gpt-1.7b-8xa100.megatron.sbatch") == script);
  CHECK(fs::exists(out / "plans.json"));
  fs::remove_all(s.parent_path());
}

TEST_CASE("plan --emit: an unknown framework, a plan it cannot run and several points without --out are one-line errors") {
  const fs::path s = small_scenario("emit-bad", "simulation: {engine: analytic}\n");
  const auto unknown = dtsim("plan " + s.string() + " --confirm 0 --emit alpa");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("dtsim: error: --emit: unknown framework 'alpa' (allowed: megatron, torchtitan)") == 0);
  // ZeRO-3 (no pipeline) fixed by the scenario: Megatron-LM has no flag for it.
  const fs::path z = small_scenario("emit-zero3", "simulation: {engine: analytic}\nparallelism: {zero: 3, tp: 1, pp: 1}\n");
  const auto zero3 = dtsim("plan " + z.string() + " --confirm 0 --emit megatron");
  CHECK(zero3.status == 2);
  CHECK(zero3.err.find("--emit: cannot run the best plan: ZeRO stage 3") != std::string::npos);
  const fs::path two = small_scenario("emit-two", "simulation: {engine: analytic}\nsweep:\n  training.global_batch: [32, 64]\n");
  const auto several = dtsim("plan " + two.string() + " --confirm 0 --emit megatron");
  CHECK(several.status == 2);
  CHECK(several.err.find("--emit: writes one script a point, and the scenario has 2:") != std::string::npos);
  for (const auto* r : {&unknown, &zero3, &several}) CHECK(std::count(r->err.begin(), r->err.end(), '\n') == 1);
  for (const auto& p : {s, z, two}) fs::remove_all(p.parent_path());
}

TEST_CASE("plan --emit torchtitan: the best plan as torchtitan's own options over its llama3 config, every option one it has") {
  const fs::path dir = fresh_dir("plan", "emit-titan");
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << "name: llama3-8b-8xh100\n"
                                   "cluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                                   "model: {preset: llama3-8b}\n"
                                   "training: {framework: torchtitan, global_batch: 64}\n"
                                   "simulation: {engine: analytic}\n";
  const auto r = dtsim("plan " + (dir / "s.yaml").string() + " --confirm 0 --emit torchtitan");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string& script = r.out;
  std::ofstream(dir / "job.sbatch") << script;
  CHECK(std::system(("bash -n " + (dir / "job.sbatch").string()).c_str()) == 0);
  const auto from = script.find("\"$TORCHTITAN/train.py\"");
  REQUIRE(from != std::string::npos);
  // Every option is one of torchtitan's (9dec370a's torchtitan/config_manager.py; the file cites the commit).
  std::set<std::string> names;
  std::istringstream list(slurp(src("tests/data/frameworks/torchtitan-arguments.txt")));
  for (std::string line; std::getline(list, line);)
    if (line.starts_with("--")) names.insert(line);
  REQUIRE(names.size() > 60);
  std::map<std::string, std::string> value;
  std::istringstream words(script.substr(from));
  std::string w, last;
  while (words >> w) {
    if (w.starts_with("--")) {
      CHECK_MESSAGE(names.count(w) == 1, w);
      last = w;
      value[w] = "";
    } else if (!last.empty() && w != "\\") {
      value[last] = w;
    }
  }
  CHECK(value.at("--model.flavor") == "8B");
  CHECK(value.at("--job.config_file") == "\"$TORCHTITAN/train_configs/llama3_8b.toml\"");
  // The degrees fill the 8 GPUs and the replicas' batches make the global one.
  const int shard = std::stoi(value.at("--training.data_parallel_shard_degree"));
  const int replicate = std::stoi(value.at("--training.data_parallel_replicate_degree"));
  const int tp = std::stoi(value.at("--training.tensor_parallel_degree"));
  const int pp = value.count("--experimental.pipeline_parallel_degree") ? std::stoi(value.at("--experimental.pipeline_parallel_degree")) : 1;
  CHECK(shard * replicate * tp * pp == 8);
  CHECK(std::stoi(value.at("--training.batch_size")) * shard * replicate == 64);
  CHECK(value.at("--training.seq_len") == "8192");
  // A model torchtitan has no flavour for is the one-line error.
  std::ofstream(dir / "gpt.yaml") << "name: gpt\ncluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                                     "model: {preset: gpt-1.7b}\ntraining: {framework: torchtitan, global_batch: 32}\n"
                                     "simulation: {engine: analytic}\n";
  const auto gpt = dtsim("plan " + (dir / "gpt.yaml").string() + " --confirm 0 --emit torchtitan");
  CHECK(gpt.status == 2);
  CHECK(gpt.err.find("--emit: cannot run the best plan: model 'gpt-1.7b' (torchtitan's flavours: llama3-8b, "
                     "llama3-70b, llama3-405b)") != std::string::npos);
  CHECK(std::count(gpt.err.begin(), gpt.err.end(), '\n') == 1);
  fs::remove_all(dir);
}
