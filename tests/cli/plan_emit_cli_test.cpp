// `dtsim plan --emit`: the best plan as a framework's own launch in a Slurm script, every flag checked against the
// framework's own list (tests/data/frameworks), and the plans and names it cannot write as one-line errors.
#include <cstdlib>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/plan_test_support.hpp"

using namespace cli_support;
using nlohmann::json;
using plan_test_support::small_scenario;

namespace {

// `yaml` written as dir/name, and what `plan --confirm 0 --emit framework` gives on it.
cli_support::Result emit(const fs::path& dir, const std::string& name, const std::string& yaml,
                         const std::string& framework) {
  fs::create_directories(dir);
  std::ofstream(dir / name) << yaml;
  return dtsim("plan " + (dir / name).string() + " --confirm 0 --emit " + framework);
}

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
  const auto names = listed("megatron-lm-arguments.txt");   // core_r0.11.0's arguments.py; the file cites it
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
  CHECK(unknown.err.find("dtsim: error: --emit: unknown framework 'alpa' (allowed: megatron, torchtitan, deepspeed, nemo (training); vllm, trtllm, sglang (serving))") == 0);
  // ZeRO-3 (no pipeline) fixed by the scenario: Megatron-LM has no flag for it.
  const fs::path z = small_scenario("emit-zero3", "simulation: {engine: analytic}\nparallelism: {zero: 3, tp: 1, pp: 1}\n");
  const auto zero3 = dtsim("plan " + z.string() + " --confirm 0 --emit megatron");
  CHECK(zero3.status == 2);
  CHECK(zero3.err.find("--emit: cannot run the best plan: ZeRO stage 3") != std::string::npos);
  const fs::path two = small_scenario("emit-two", "simulation: {engine: analytic}\nsweep:\n  training.global_batch: [32, 64]\n");
  const auto several = dtsim("plan " + two.string() + " --confirm 0 --emit megatron");
  CHECK(several.status == 2);
  CHECK(several.err.find("--emit: writes one script a point, and the scenario has 2:") != std::string::npos);
  // The fused loss: Megatron-Core's native one is core_r0.11.0's --cross-entropy-loss-fusion; Transformer Engine's
  // has no flag there.
  const fs::path fused = small_scenario("emit-loss", "simulation: {engine: analytic}\n");
  const auto native = dtsim("plan " + fused.string() + " --top 1 --confirm 0 --emit megatron --set training.cross_entropy_fusion=true");
  REQUIRE_MESSAGE(native.status == 0, native.err);
  CHECK(native.out.find(" --cross-entropy-loss-fusion \\\n") != std::string::npos);
  const auto te = dtsim("plan " + fused.string() +
                        " --top 1 --confirm 0 --emit megatron --set training.cross_entropy_fusion=true --set training.cross_entropy_fusion_impl=te");
  CHECK(te.status == 2);
  CHECK(te.err.find("--emit: cannot run the best plan: Transformer Engine's fused loss") != std::string::npos);
  for (const auto* r : {&unknown, &zero3, &several, &te}) CHECK(std::count(r->err.begin(), r->err.end(), '\n') == 1);
  for (const auto& p : {s, z, two, fused}) fs::remove_all(p.parent_path());
}

TEST_CASE("plan --emit torchtitan: the best plan as torchtitan's own options over its llama3 config, every option one it has") {
  const fs::path dir = fresh_dir("plan", "emit-titan");
  const auto r = emit(dir, "s.yaml",
                  "name: llama3-8b-8xh100\n"
                  "cluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                  "model: {preset: llama3-8b}\n"
                  "training: {framework: torchtitan, global_batch: 64}\n"
                  "simulation: {engine: analytic}\n",
                  "torchtitan");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string& script = r.out;
  std::ofstream(dir / "job.sbatch") << script;
  CHECK(std::system(("bash -n " + (dir / "job.sbatch").string()).c_str()) == 0);
  const auto from = script.find("\"$TORCHTITAN/train.py\"");
  REQUIRE(from != std::string::npos);
  // Every option is one of torchtitan's (9dec370a's torchtitan/config_manager.py; the file cites the commit).
  const auto names = listed("torchtitan-arguments.txt");
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
  const auto gpt = emit(dir, "gpt.yaml",
                  "name: gpt\ncluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                  "model: {preset: gpt-1.7b}\ntraining: {framework: torchtitan, global_batch: 32}\n"
                  "simulation: {engine: analytic}\n",
                  "torchtitan");
  CHECK(gpt.status == 2);
  CHECK(gpt.err.find("--emit: cannot run the best plan: model 'gpt-1.7b' (torchtitan's flavours: llama3-8b, "
                     "llama3-70b, llama3-405b)") != std::string::npos);
  CHECK(std::count(gpt.err.begin(), gpt.err.end(), '\n') == 1);
  fs::remove_all(dir);
}

namespace {

// `j`'s keys, nested ones dotted.
void dotted_keys(const json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : j.items()) {
    out.push_back(prefix + key);
    if (value.is_object()) dotted_keys(value, prefix + key + ".", out);
  }
}

}  // namespace

TEST_CASE("plan --emit deepspeed: Megatron-DeepSpeed's flags and a DeepSpeed configuration that the script writes, all theirs") {
  const fs::path dir = fresh_dir("plan", "emit-deepspeed");
  const auto r = emit(dir, "s.yaml",
                  "name: llama3-8b-zero3\n"
                  "cluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                  "model: {preset: llama3-8b}\n"
                  "training: {framework: deepspeed, global_batch: 64}\n"
                  "parallelism: {zero: 3, tp: 1, pp: 1}\n"
                  "simulation: {engine: analytic}\n",
                  "deepspeed");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const fs::path job = dir / "job.sbatch";
  std::ofstream(job) << r.out;
  CHECK(std::system(("bash -n " + job.string()).c_str()) == 0);
  // Run the script with Slurm's commands stubbed.
  stub_slurm(dir);
  const std::string env = fmt::format("cd {} && PATH={}:$PATH SLURM_JOB_ID=7 SLURM_JOB_NODELIST=node1 SRUN_ARGS={} ",
                                      dir.string(), (dir / "bin").string(), (dir / "args").string());
  // Without a dataset it stops before launching, saying what to give.
  CHECK(std::system((env + "bash " + job.string() + " 2> " + (dir / "err").string()).c_str()) != 0);
  CHECK(slurp(dir / "err").find("set DATA to the prefix of a dataset") != std::string::npos);
  CHECK(!fs::exists(dir / "args"));
  REQUIRE(std::system((env + "DATA=/data/pile bash " + job.string()).c_str()) == 0);
  const auto args = srun_arguments(dir / "args");
  const auto after = [&](const std::string& flag) {
    const auto it = std::ranges::find(args, flag);
    return it == args.end() || it + 1 == args.end() ? std::string("(absent)") : *(it + 1);
  };
  // Every flag is Megatron-DeepSpeed's (or DeepSpeed's own two), none twice.
  const auto flags_known = listed("megatron-deepspeed-arguments.txt");
  REQUIRE(flags_known.size() > 300);
  std::vector<std::string> flags;
  for (const auto& a : args)
    if (a.starts_with("--") && a != "--nnodes" && a != "--nproc-per-node" && a != "--rdzv-backend" && a != "--rdzv-endpoint")
      flags.push_back(a);
  for (const auto& f : flags) CHECK_MESSAGE(flags_known.count(f) == 1, f);
  CHECK(std::set<std::string>(flags.begin(), flags.end()).size() == flags.size());
  CHECK(after("--zero-stage") == "3");
  CHECK(after("--data-path") == "/data/pile");
  CHECK(after("--deepspeed_config") == "ds_config.7.json");
  CHECK(after("--global-batch-size") == "64");
  CHECK(after("--num-key-value-heads") == "8");
  CHECK(std::ranges::find(args, "--no-pipeline-parallel") != args.end());
  // The configuration it wrote: DeepSpeed's keys only, and the plan's batch and stage.
  const json config = json::parse(slurp(dir / "ds_config.7.json"));
  std::vector<std::string> keys;
  dotted_keys(config, "", keys);
  const auto keys_known = listed("deepspeed-config-keys.txt");
  REQUIRE(keys_known.size() > 100);
  for (const auto& k : keys) CHECK_MESSAGE(keys_known.count(k) == 1, k);
  CHECK(config["train_batch_size"] == 64);
  CHECK(config["zero_optimization"]["stage"] == 3);
  CHECK(config["bf16"]["enabled"] == true);
  CHECK(config["train_micro_batch_size_per_gpu"].get<int>() == std::stoi(after("--micro-batch-size")));
  // A plan it cannot run (experts) is the one-line error.
  const auto moe = emit(dir, "moe.yaml",
                  "name: mixtral\n"
                  "cluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch, nodes: 8,\n"
                  "  inter: fat-tree, inter_link: ib-ndr, nics_per_node: 8}\n"
                  "model: {preset: mixtral-8x7b}\ntraining: {global_batch: 256}\n"
                  "parallelism: {tp: 1, pp: 4, ep: 8}\nsimulation: {engine: analytic}\n",
                  "deepspeed");
  CHECK(moe.status == 2);
  CHECK(moe.err.find("--emit: cannot run the best plan: experts") != std::string::npos);
  CHECK(std::count(moe.err.begin(), moe.err.end(), '\n') == 1);
  fs::remove_all(dir);
}

TEST_CASE("plan --emit nemo: Megatron-Bridge's Llama 3 recipe with the plan's overrides, one task a GPU, every key its own") {
  const fs::path dir = fresh_dir("plan", "emit-nemo");
  const auto r = emit(dir, "s.yaml",
                  "name: llama3-70b-32xh100\n"
                  "cluster: {preset: dgx-h100, nodes: 4}\n"
                  "model: {preset: llama3-70b}\n"
                  "training: {framework: megatron-core, global_batch: 128}\n"
                  "simulation: {engine: analytic}\n",
                  "nemo");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string& script = r.out;
  CHECK(script.find("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n") != std::string::npos);
  const fs::path job = dir / "job.sbatch";
  std::ofstream(job) << script;
  CHECK(std::system(("bash -n " + job.string()).c_str()) == 0);
  stub_slurm(dir);
  REQUIRE(std::system(fmt::format("cd {} && PATH={}:$PATH SRUN_ARGS={} MEGATRON_BRIDGE=/opt/Megatron-Bridge bash {}",
                                  dir.string(), (dir / "bin").string(), (dir / "args").string(), job.string())
                          .c_str()) == 0);
  const auto args = srun_arguments(dir / "args");
  REQUIRE(args.size() > 8);
  CHECK(args[0] == "python");
  CHECK(args[1] == "/opt/Megatron-Bridge/scripts/training/run_recipe.py");
  CHECK(args[2] == "--recipe");
  CHECK(args[3] == "llama3_70b_pretrain_config");
  CHECK(args[4] == "--mode");
  CHECK(args[6] == "--dataset");
  CHECK(args[7] == "mock");
  // Every override a key of the recipe's configuration (Hydra refuses others), none twice.
  const auto keys_known = listed("megatron-bridge-keys.txt");
  REQUIRE(keys_known.size() > 700);
  std::map<std::string, std::string> value;
  for (std::size_t i = 8; i < args.size(); ++i) {
    const auto eq = args[i].find('=');
    REQUIRE(eq != std::string::npos);
    const std::string key = args[i].substr(0, eq);
    CHECK_MESSAGE(keys_known.count(key) == 1, key);
    CHECK_MESSAGE(value.count(key) == 0, key);
    value[key] = args[i].substr(eq + 1);
  }
  // The degrees divide the 32 GPUs, and the batch is the scenario's.
  const int tp = std::stoi(value.at("model.transformer.tensor_model_parallel_size"));
  const int pp = std::stoi(value.at("model.transformer.pipeline_model_parallel_size"));
  const int cp = std::stoi(value.at("model.transformer.context_parallel_size"));
  CHECK(32 % (tp * pp * cp) == 0);
  CHECK(value.at("train.global_batch_size") == "128");
  CHECK(value.at("dataset.seq_length") == "8192");
  CHECK(value.at("checkpoint.save") == "null");
  // The loss as simulated: megatron-core's, unfused (Megatron-Core's native implementation named).
  CHECK(value.at("model.transformer.cross_entropy_loss_fusion") == "false");
  CHECK(value.at("model.transformer.cross_entropy_fusion_impl") == "native");
  // A model without a recipe, and fp8 on the 8B recipe (whose precision is a name), are one-line errors.
  const auto gpt = emit(dir, "gpt.yaml",
                  "name: gpt\ncluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                  "model: {preset: gpt-1.7b}\ntraining: {global_batch: 32}\n"
                  "simulation: {engine: analytic}\n",
                  "nemo");
  CHECK(gpt.status == 2);
  CHECK(gpt.err.find("--emit: cannot run the best plan: model 'gpt-1.7b' (Megatron-Bridge's Llama 3 recipes") !=
        std::string::npos);
  const auto fp8 = emit(dir, "fp8.yaml",
                  "name: l8\ncluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                  "model: {preset: llama3-8b}\ntraining: {global_batch: 32, fp8: hybrid}\nparallelism: {zero: 1}\n"
                  "simulation: {engine: analytic}\n",
                  "nemo");
  CHECK(fp8.status == 2);
  CHECK(fp8.err.find("fp8 on the 8B recipe") != std::string::npos);
  for (const auto* e : {&gpt, &fp8}) CHECK(std::count(e->err.begin(), e->err.end(), '\n') == 1);
  fs::remove_all(dir);
}

// A plan the framework cannot launch (14 layers in unequal virtual stages, which Megatron-Core runs and core_r0.11.0's
// flags cannot write) is skipped for the fastest one it can, and the script's header says so and why.
TEST_CASE("plan --emit: a script behind dtsim's best plan says why the faster ones were not written") {
  const fs::path dir = fresh_dir("plan", "emit-skipped");
  const auto r = emit(dir, "s.yaml",
                      "name: uneven\ncluster: {preset: dgx-h100}\n"
                      "model: {layers: 14, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, seq_length: 4096}\n"
                      "training: {global_batch: 16}\nparallelism: {tp: 2, pp: 4}\nsimulation: {engine: analytic}\n",
                      "megatron");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string header = r.out.substr(0, r.out.find('\n', r.out.find('\n') + 1));
  CHECK(header.find("the fastest plan megatron can run") != std::string::npos);
  CHECK(header.find("14 layers in 4 x 2 unequal virtual stages") != std::string::npos);
  // The launchable plan: no interleaving flag among the arguments.
  CHECK(r.out.substr(header.size()).find("--num-layers-per-virtual-pipeline-stage") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("plan --emit deepspeed writes ZeRO++'s three switches, hpZ over the node's data-parallel ranks") {
  const fs::path dir = fresh_dir("plan", "emit-zero-pp");
  const auto job = [](const std::string& zero_pp) {
    return "name: llama3-8b-zero-pp\n"
           "cluster: {preset: dgx-h100, nodes: 2}\n"
           "model: {preset: llama3-8b}\n"
           "training: {framework: deepspeed, global_batch: 64, zero_pp: " + zero_pp + "}\n"
           "parallelism: {zero: 3, tp: 1, pp: 1}\n"
           "simulation: {engine: analytic}\n";
  };
  const auto r = emit(dir, "s.yaml", job("{qwz: true, hpz: true}"), "deepspeed");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("\"zero_quantized_weights\": true") != std::string::npos);
  CHECK(r.out.find("\"zero_hpz_partition_size\": 8") != std::string::npos);
  CHECK(r.out.find("\"zero_quantized_gradients\": false") != std::string::npos);
  // The other frameworks have no ZeRO++: their emitters say so.
  const auto titan = emit(dir, "t.yaml", job("true"), "torchtitan");
  CHECK(titan.status == 2);
  CHECK(titan.err.find("ZeRO++") != std::string::npos);
  fs::remove_all(dir);
}
