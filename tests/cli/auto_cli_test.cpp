// `auto` for what a scenario leaves out (issue 40): training.micro_batch, parallelism.vpp and training.recompute,
// absent or written `auto`, are chosen by the plan search restricted to them, the rest of the plan as the scenario
// gives it; an explicit value is never replaced; `auto` on any other key is a one-line error.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

// A 16-layer GPT of 2,048 on one 8-GPU DGX H100, TP 2 x PP 2 x DP 2: the plan search's interleaving depths
// (1 to 8) and auto's (every depth up to 16 / 2 = 8 layers a stage) are the same here, so the two must agree.
constexpr const char* kOpen = R"(name: open
cluster: {preset: dgx-h100}
model: {layers: 16, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, seq_length: 4096}
training: {global_batch: 64}
parallelism: {tp: 2, pp: 2}
simulation: {engine: analytic}
)";

fs::path write(const std::string& tag, const std::string& text) {
  const fs::path dir = fresh_dir("auto", tag);
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << text;
  return dir / "s.yaml";
}

json run_json(const fs::path& file, const std::string& extra = "") {
  const auto r = dtsim("run " + file.string() + " --format json" + extra);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("auto: the knobs a scenario leaves out get the plan search's choice with the rest of its plan fixed") {
  const fs::path file = write("search", kOpen);
  const json run = run_json(file);
  const json& chosen = run.at("auto_chosen");
  REQUIRE(chosen.size() == 3);
  // The same search by `plan`, with what the run kept fixed (tp, pp, zero, order, sequence parallelism) set.
  const json& resolved = run.at("scenario");
  const std::string fixed = fmt::format(
      " --set parallelism.tp=2 --set parallelism.pp=2 --set parallelism.zero={} --set parallelism.order={}"
      " --set training.sequence_parallel={}",
      resolved.at("parallelism").at("zero").get<int>(), resolved.at("parallelism").at("order").get<std::string>(),
      resolved.at("training").at("sequence_parallel").get<bool>());
  const auto p = dtsim("plan " + file.string() + " --top 1 --confirm 0 --format json" + fixed);
  REQUIRE_MESSAGE(p.status == 0, p.err);
  const json best = json::parse(p.out).at("plans").at(0);
  CHECK(chosen.at("training.micro_batch") == best.at("training").at("micro_batch"));
  CHECK(chosen.at("parallelism.vpp") == best.at("parallelism").at("vpp"));
  CHECK(chosen.at("training.recompute") == best.at("training").at("recompute"));
  // Larger micro-batches and interleaving than 1 and 1 are what a practitioner runs here, and the search finds them.
  CHECK(chosen.at("training.micro_batch").get<int>() > 1);
  CHECK(chosen.at("parallelism.vpp").get<int>() > 1);
  // The run is the run of that plan written out: the same step, nothing left to choose.
  const json fixed_run = run_json(file, fmt::format(" --set training.micro_batch={} --set parallelism.vpp={}"
                                                    " --set training.recompute={}",
                                                    chosen.at("training.micro_batch").get<int>(),
                                                    chosen.at("parallelism.vpp").get<int>(),
                                                    chosen.at("training.recompute").get<std::string>()));
  CHECK(fixed_run.at("step_time_s").get<double>() == run.at("step_time_s").get<double>());
  CHECK(fixed_run.at("auto_chosen").empty());
  // The resolved scenario holds the choice; the table says it was chosen.
  CHECK(resolved.at("training").at("micro_batch") == chosen.at("training.micro_batch"));
  CHECK(resolved.at("parallelism").at("vpp") == chosen.at("parallelism.vpp"));
  const auto table = dtsim("run " + file.string());
  REQUIRE(table.status == 0);
  CHECK(table.out.find("open                         auto chose parallelism.vpp ") != std::string::npos);
}

TEST_CASE("auto: written `auto` is the same as leaving the key out, and an explicit value is never replaced") {
  const fs::path file = write("explicit", kOpen);
  const json left = run_json(file);
  const json written = run_json(file, " --set training.micro_batch=auto --set parallelism.vpp=auto --set training.recompute=auto");
  CHECK(written.at("auto_chosen") == left.at("auto_chosen"));
  CHECK(written.at("step_time_s").get<double>() == left.at("step_time_s").get<double>());
  const json one = run_json(file, " --set training.micro_batch=1");
  CHECK_FALSE(one.at("auto_chosen").contains("training.micro_batch"));
  CHECK(one.at("auto_chosen").contains("parallelism.vpp"));
  CHECK(one.at("scenario").at("training").at("micro_batch").get<int>() == 1);
  const json all = run_json(file, " --set training.micro_batch=2 --set parallelism.vpp=1 --set training.recompute=full");
  CHECK(all.at("auto_chosen").empty());
  CHECK(all.at("scenario").at("parallelism").at("vpp").get<int>() == 1);
  CHECK(all.at("scenario").at("training").at("recompute") == "full");
}

// Worked by hand: 16 sequences over 8 data-parallel replicas leave 2 a replica, so micro-batch 1 or 2; one stage, so
// no interleaving (and none reported as chosen). One sequence a replica is micro-batch 1, not a choice either. Llama-2 7B's states (16 bytes a parameter, unsharded at zero 0) do not fit on a 40 GB A100
// however it recomputes: nothing fits, and auto takes the choice that misses memory by the least, the largest
// recomputation at the smallest micro-batch, so that the run reports by how much.
TEST_CASE("auto: worked by hand, the only choices a plan allows, and the nearest when nothing fits") {
  const fs::path small = write("hand", R"(name: hand
cluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}
model: {layers: 4, hidden: 1024, heads: 16, ffn_hidden: 4096, vocab: 32000, seq_length: 2048}
training: {global_batch: 16}
simulation: {engine: analytic}
)");
  const json run = run_json(small);
  CHECK_FALSE(run.at("auto_chosen").contains("parallelism.vpp"));   // one stage: nothing to interleave, nothing chosen
  CHECK(run.at("scenario").at("parallelism").at("vpp").get<int>() == 1);
  const int mb = run.at("auto_chosen").at("training.micro_batch").get<int>();
  CHECK((mb == 1 || mb == 2));
  CHECK(run.at("auto_chosen").at("training.recompute") == "none");   // a small model fits without recomputing
  const json one = run_json(small, " --set training.global_batch=8");
  CHECK_FALSE(one.at("auto_chosen").contains("training.micro_batch"));
  CHECK(one.at("scenario").at("training").at("micro_batch").get<int>() == 1);
  const fs::path big = write("nearest", R"(name: nearest
cluster: {gpu: a100-sxm4-40gb, gpus_per_node: 8, intra: nvswitch}
model: {preset: llama2-7b}
training: {global_batch: 16}
parallelism: {zero: 0}
simulation: {engine: analytic}
)");
  const json miss = run_json(big);
  CHECK_FALSE(miss.at("memory").at("fits").get<bool>());
  CHECK(miss.at("auto_chosen").at("training.micro_batch").get<int>() == 1);
  CHECK(miss.at("auto_chosen").at("training.recompute") == "full");
}

// Auto tries only what the framework runs: Megatron's virtual stages of equal whole layers, Megatron-LM 2021's
// interleaving past two stages only and its whole-layer recomputation, no interleaving under DeepSpeed's engine.
TEST_CASE("auto: only what the scenario's framework can run") {
  const fs::path file = write("framework", kOpen);
  const auto chosen = [&](const std::string& sets) { return run_json(file, sets).at("auto_chosen"); };
  const json old = chosen(" --set training.framework=megatron-2021");
  CHECK(old.at("parallelism.vpp").get<int>() == 1);                 // two stages: no interleaving in 2021's code
  CHECK(old.at("training.recompute") != "selective");
  const json four = chosen(" --set training.framework=megatron-2021 --set parallelism.pp=4 --set parallelism.tp=1");
  CHECK(16 % (4 * four.at("parallelism.vpp").get<int>()) == 0);
  const json deepspeed = chosen(" --set training.framework=deepspeed --set parallelism.pp=4 --set parallelism.tp=1");
  CHECK(deepspeed.at("parallelism.vpp").get<int>() == 1);
}

// 14 layers on 4 stages split into no equal whole chunks: Megatron-Core (--pipeline-model-parallel-layout) and
// torchtitan interleave them unevenly, Megatron-LM 2022 (--num-layers-per-virtual-pipeline-stage) cannot.
TEST_CASE("auto: Megatron-Core interleaves layers that do not divide into equal virtual stages") {
  const fs::path file = write("uneven", R"(name: uneven
cluster: {preset: dgx-h100}
model: {layers: 14, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, seq_length: 4096}
training: {global_batch: 16}
parallelism: {tp: 2, pp: 4}
simulation: {engine: analytic}
)");
  const auto vpp = [&](const std::string& sets) { return run_json(file, sets).at("auto_chosen").at("parallelism.vpp").get<int>(); };
  CHECK(vpp("") > 1);
  CHECK(vpp(" --set training.framework=torchtitan") > 1);
  CHECK(vpp(" --set training.framework=nemo") > 1);
  CHECK(vpp(" --set training.framework=deepspeed") == 1);
  CHECK(vpp(" --set training.framework=megatron-2022") == 1);
}

TEST_CASE("auto: on a key that has none, or where nothing is searched, a one-line error with status 2") {
  const auto one_line = [](const Result& r, const std::string& tail) {
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK_MESSAGE(r.err.find(tail) != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  const fs::path file = write("errors", kOpen);
  one_line(dtsim("run " + file.string() + " --set training.global_batch=auto"),
           "--set: training.global_batch: has no auto: only training.micro_batch, parallelism.vpp, "
           "training.recompute and training.offload_layers are chosen by dtsim when left open, so give 'auto' "
           "(allowed: an integer in [1, ");
  one_line(dtsim("run " + file.string() + " --set training.sequence_parallel=auto"),
           "training.sequence_parallel: has no auto");
  one_line(dtsim("run " + file.string() + " --set training.precision=auto"), "training.precision: has no auto");
  one_line(dtsim("run " + file.string() + " --set training.recompute=auto --set 'training.recompute_modules=[core_attn]'"),
           "training.recompute_modules: chooses what selective recomputation recomputes, and training.recompute is "
           "auto, which may choose none:");
  const fs::path resnet = write("resnet", "name: r\ncluster: {gpu: a100-sxm4-80gb}\nmodel: {preset: resnet50}\n"
                                          "training: {global_batch: 256, micro_batch: auto}\n");
  one_line(dtsim("run " + resnet.string()), "training.micro_batch: is chosen by the plan search, which tunes "
                                            "transformer models only; a layer-list model trains data-parallel, so give "
                                            "'auto' (allowed: an integer >= 1)");
  const fs::path serving = write("serving", "name: s\ncluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\n"
                                            "inference: {batch: 1}\nparallelism: {vpp: auto}\n");
  one_line(dtsim("run " + serving.string()), "parallelism.vpp: is a training knob; a serving job has nothing to choose");
  one_line(dtsim("run " + file.string() + " --set training.overlap_p2p_comm=false"
                                          " --set training.overlap_moe_expert_parallel_comm=true"),
           "training.overlap_p2p_comm: would block each pipeline exchange");
}

TEST_CASE("auto: the resolved scenario written by --out holds the choice and runs alike") {
  const fs::path file = write("resolved", kOpen);
  const fs::path out = file.parent_path() / "out";
  const auto r = dtsim("run " + file.string() + " --format json --out " + out.string());
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string resolved = slurp(out / "scenario.resolved.yaml");
  for (const char* left : {"micro_batch: auto", "vpp: auto", "recompute: auto"}) CHECK(resolved.find(left) == std::string::npos);
  const json again = run_json(out / "scenario.resolved.yaml");
  CHECK(again.at("auto_chosen").empty());
  CHECK(again.at("step_time_s").get<double>() == json::parse(r.out).at("step_time_s").get<double>());
}

// Megatron-Core's activation offloading (training.offload_layers): when the plan fits only by recomputing, `auto`
// offloads the fewest layers that make it fit without recomputation, where that runs faster: on a Grace superchip
// (NVLink-C2C, 450 GB/s a way) the copies hide behind the layers' compute; over an H100's PCIe they would not.
TEST_CASE("auto: activation offloading where recomputation is the alternative, the fewest layers that fit") {
  constexpr const char* kLong = R"(name: long
cluster: {gpu: {base: gb200}, gpus_per_node: 1, intra: nvswitch}
model: {preset: llama3-8b}
training: {framework: nemo, global_batch: 4, micro_batch: 4, fp8: hybrid}
simulation: {engine: analytic}
)";
  const fs::path file = write("offload", kLong);
  const json open = run_json(file);
  const json& chosen = open.at("auto_chosen");
  REQUIRE(chosen.contains("training.offload_layers"));
  const int k = chosen.at("training.offload_layers").get<int>();
  CHECK(k > 0);
  CHECK(k < 31);   // not every layer: the fewest that fit
  CHECK(chosen.at("training.recompute") == "none");
  CHECK(open.at("memory").at("fits").get<bool>());
  // One layer fewer does not fit; recomputing instead is slower.
  const json fewer = run_json(file, fmt::format(" --set training.offload_layers={} --set training.recompute=none", k - 1));
  CHECK_FALSE(fewer.at("memory").at("fits").get<bool>());
  const json full = run_json(file, " --set training.offload_layers=0 --set training.recompute=full");
  CHECK(open.at("step_time_s").get<double>() < full.at("step_time_s").get<double>());
  // The same layers offloaded over PCIe Gen5 (an H100's host link) wait on the copies.
  const json pcie = run_json(file, fmt::format(" --set training.offload_layers={} --set training.recompute=none"
                                               " --set cluster.gpu.cpu_link=pcie5", k));
  CHECK(pcie.at("step_time_s").get<double>() > 1.05 * open.at("step_time_s").get<double>());
}

TEST_CASE("auto: activation offloading that Megatron-Core refuses is a one-line error with status 2") {
  const fs::path file = write("offload-bad", std::string(kOpen));
  const auto err = [&](const std::string& set, const std::string& expected) {
    const auto r = dtsim("run " + file.string() + " " + set);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find(expected) != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  err("--set training.offload_layers=2", "training.offload_layers: runs with one pipeline stage");
  err("--set training.offload_layers=2 --set parallelism.pp=1 --set training.recompute=full",
      "training.offload_layers: does not run with recomputation");
  err("--set training.offload_layers=16 --set parallelism.pp=1 --set training.recompute=none",
      "training.offload_layers: offloads at most the model's layers less one (15)");
  err("--set training.offload_layers=2 --set parallelism.pp=1 --set training.recompute=none --set training.framework=torchtitan",
      "training.offload_layers: is Megatron-Core's activation offloading");
  err("--set training.offload_layers=-1", "training.offload_layers");
}
