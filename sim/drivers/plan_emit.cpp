// `dtsim plan --emit`: the best plan as a framework's launch (plan_emit.hpp).
//
// The script around each framework's launch; the launches themselves are plan_emit_flags.cpp's.
#include "sim/drivers/plan_emit.hpp"

#include <fmt/format.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "sim/drivers/plan_emit_flags.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {

std::string emit::job_name(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-') ? c : '_';
  return out.empty() ? "dtsim" : out.substr(0, 64);
}

using emit::job_name;

void check_emit_framework(std::string_view framework) {
  if (framework != "megatron" && framework != "torchtitan" && framework != "deepspeed" && framework != "nemo" &&
      framework != "vllm" && framework != "trtllm" && framework != "sglang")
    throw InputError("--emit", std::string(framework), "unknown framework", std::string(kEmitFrameworks));
}

void check_emit_kind(std::string_view framework, bool serving) {
  const bool engine = framework == "vllm" || framework == "trtllm" || framework == "sglang";
  if (serving && !engine) emit::cannot(framework, "a serving scenario (its engines here: vllm, trtllm, sglang)");
  if (!serving && engine)
    emit::cannot(framework, "a training scenario (it serves: give a scenario with an inference section)");
}

std::string emit_plan(std::string_view framework, const scenario::Scenario& s, const workloads::Workload& w, double step_s,
                      const std::string& skipped) {
  check_emit_framework(framework);
  check_emit_kind(framework, !w.training);
  if (!s.cluster.groups.empty())
    emit::cannot(framework, "a mixed cluster (cluster.groups): its stages' uneven layers on two GPU kinds are not "
                            "written as a launch yet");
  // Each framework: what the script's comment says it runs, its checkout's variable and default, the environment
  // it wants, the lines before the launch, the launch up to its arguments, and the arguments.
  struct Launch {
    std::string about, home, checkout, environment, setup, run;
    std::vector<std::string> arguments;
    int tasks_per_node = 1;
  };
  // Slurm's nodes are servers: an NVLink domain of several (an NVL72 rack's trays) is as many hosts.
  const int nodes = s.cluster.servers(), gpus = s.cluster.gpus_per_server();
  // Under torchrun, one task a node: the first node's name for the rendezvous, before the environment.
  const auto under_torchrun = [&](Launch l, std::string_view entry) {
    l.setup = "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n" + l.setup;
    l.run = fmt::format("srun torchrun --nnodes {} --nproc-per-node {} --rdzv-backend c10d --rdzv-endpoint "
                        "\"$head:29500\" \\\n  \"${}/{}\"", nodes, gpus, l.home, entry);
    return l;
  };
  const Launch l = [&]() -> Launch {
    if (framework == "torchtitan") {
      const auto flavour = emit::torchtitan_flavour(w.model.name);
      return under_torchrun({"torchtitan's train.py (options of pytorch/torchtitan 9dec370a) under torchrun, one task a node, its\n"
                   "# llama3 config file with the plan's options over it.",
                   "TORCHTITAN", "torchtitan", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "", "",
                   emit::torchtitan_flags(w, flavour ? flavour->second : "")},
                  "train.py");
    }
    if (framework == "deepspeed")
      return under_torchrun({"Megatron-DeepSpeed's pretrain_gpt.py (flags of microsoft/Megatron-DeepSpeed f4157bea) under torchrun,\n"
                   "# one task a node, with the DeepSpeed configuration written below (keys of microsoft/DeepSpeed 38327e07f).\n"
                   "# Give DATA, the prefix of a dataset in Megatron's format (.bin and .idx).",
                   "MEGATRON_DEEPSPEED", "Megatron-DeepSpeed", "CUDA_DEVICE_MAX_CONNECTIONS=1",
                   "DATA=${DATA:?set DATA to the prefix of a dataset in the Megatron format}\n"
                   "config=\"ds_config.${SLURM_JOB_ID:-0}.json\"\n"
                   "cat > \"$config\" <<'JSON'\n" + emit::deepspeed_config(w) + "JSON\n",
                   "", emit::deepspeed_flags(w)},
                  "pretrain_gpt.py");
    if (framework == "nemo") {
      auto overrides = emit::bridge_overrides(w);   // first: it refuses what it cannot run
      return {"Megatron-Bridge's scripts/training/run_recipe.py (NVIDIA-NeMo/Megatron-Bridge 067f987d), NeMo's LLM\n"
              "# training, one task a GPU as its own Slurm launcher runs it: the model's Llama 3 recipe with the plan's\n"
              "# overrides, on mock data. The recipe reads the model's configuration from Hugging Face (gated): give\n"
              "# HF_TOKEN or a filled cache.",
              "MEGATRON_BRIDGE", "Megatron-Bridge",
              "PYTHONPATH=\"$MEGATRON_BRIDGE/src:$MEGATRON_BRIDGE/3rdparty/Megatron-LM${PYTHONPATH:+:$PYTHONPATH}\"", "",
              fmt::format("srun python \"$MEGATRON_BRIDGE/scripts/training/run_recipe.py\" \\\n  --recipe {} \\\n"
                          "  --mode pretrain \\\n  --dataset mock",
                          *emit::bridge_recipe_name(w.model.name)),
              std::move(overrides), gpus};
    }
    return under_torchrun({"Megatron-LM's pretrain_gpt.py (flags of NVIDIA/Megatron-LM core_r0.11.0) under torchrun, one task a node.\n"
                 "# It trains on mock data as written: give --data-path and a tokenizer in place of the last lines to train.",
                 "MEGATRON", "Megatron-LM", "CUDA_DEVICE_MAX_CONNECTIONS=1", "", "", emit::megatron_flags(w)},
                "pretrain_gpt.py");
  }();
  std::string out = fmt::format(
      "#!/bin/bash\n"
      "# dtsim plan --emit {0}: {13} for {1}, {2:.4g} s a step on {3} x {4} GPUs.\n# {5}\n"
      "#SBATCH --job-name={1}\n#SBATCH --nodes={3}\n#SBATCH --ntasks-per-node={6}\n#SBATCH --gpus-per-node={4}\n"
      "#SBATCH --exclusive\n{12}set -euo pipefail\n"
      "{7}=${{{7}:-$PWD/{8}}}\n"
      "{9}"
      "export {10}\n"
      "{11}",
      framework, job_name(s.name), step_s, nodes, gpus, l.about, l.tasks_per_node, l.home, l.checkout, l.setup,
      l.environment, l.run,
      // The servers of each NVLink domain dtsim simulated, held together by Slurm's block scheduling.
      s.cluster.server_gpus > 0 ? fmt::format("#SBATCH --segment={}\n", s.cluster.servers_per_node()) : std::string(),
      skipped.empty() ? std::string("the best plan dtsim found")
                      : fmt::format("the fastest plan {0} can run ({0} {1})", framework, skipped));
  for (const std::string& a : l.arguments) out += " \\\n  " + a;
  return out + "\n";
}

std::string emit_file_name(std::string_view framework, const std::string& scenario_name) {
  return fmt::format("{}.{}.sbatch", job_name(scenario_name), framework);
}

}  // namespace dtsim::drivers
