// The Blackwell generation and its neighbours (issue: rack-scale NVLink and Blackwell): the catalog's GPUs with their
// block-scaled peaks, training recipes that run the linear layers' GEMMs in MXFP8 or NVFP4, and FP4 weights served.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

json blackwell_run(const std::string& yaml, const std::string& args = "") {
  const fs::path dir = fresh_dir("blackwell", std::to_string(std::hash<std::string>{}(yaml + args)));
  const auto r = dtsim("run " + written(dir, "b.yaml", yaml).string() + " --format json " + args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  json j = json::parse(r.out);
  return j.is_array() ? j.at(0) : j;
}

// Llama 3 8B data-parallel on one 8-GPU server of `gpu` (NeMo's 8B layout: micro-batch 2, batch 128).
std::string llama8b(const std::string& gpu, const std::string& fp8) {
  return fmt::format("name: l8\ncluster: {{gpu: {}, gpus_per_node: 8, intra: nvswitch}}\nmodel: {{preset: llama3-8b}}\n"
                     "training: {{global_batch: 128, micro_batch: 2, fp8: {}}}\nparallelism: {{tp: 1, pp: 1, dp: 8}}\n"
                     "simulation: {{engine: analytic}}\n",
                     gpu, fp8);
}

}  // namespace

TEST_CASE("blackwell: the catalog's 2026 GPUs, each with its block-scaled and FP4 peaks where the part has them") {
  const auto r = dtsim("catalog --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  std::map<std::string, json> peaks;
  const json catalog = json::parse(r.out);
  for (const json& g : catalog.at("gpus")) peaks[g.at("name").get<std::string>()] = g.at("peak_TFLOPS");
  for (const char* name : {"gb200", "gb300", "b300-sxm", "h200-nvl", "mi325x", "mi355x"}) CHECK(peaks.contains(name));
  // FP4 on Blackwell and CDNA 4 only; Blackwell Ultra's FP4 half again Blackwell's, its bf16 unchanged.
  CHECK(peaks.at("gb300").at("fp4").get<double>() == doctest::Approx(1.5 * peaks.at("gb200").at("fp4").get<double>()));
  CHECK(peaks.at("gb300").at("bf16") == peaks.at("gb200").at("bf16"));
  // MXFP4 beside NVFP4 on Blackwell at one rate; AMD's FP4 is MXFP4 only.
  CHECK(peaks.at("gb200").at("mxfp4") == peaks.at("gb200").at("fp4"));
  CHECK(peaks.at("mi355x").contains("mxfp4"));
  CHECK_FALSE(peaks.at("mi355x").contains("fp4"));
  CHECK_FALSE(peaks.at("h200-nvl").contains("fp4"));
  CHECK_FALSE(peaks.at("mi325x").contains("fp4"));
  CHECK_FALSE(peaks.at("h200-nvl").contains("mxfp4"));
  CHECK_FALSE(peaks.at("mi325x").contains("mxfp4"));
  CHECK_FALSE(peaks.at("h100-sxm5-80gb").contains("mxfp8"));
  for (const char* name : {"b200-sxm-180gb", "gb200", "gb300", "b300-sxm", "mi355x"})
    CHECK(peaks.at(name).at("mxfp8") == peaks.at(name).at("fp8"));
}

TEST_CASE("blackwell: NVFP4 training runs faster than MXFP8, which casts a little more than per-tensor fp8") {
  const json bf16 = blackwell_run(llama8b("b200-sxm-180gb", "none"));
  const json fp8 = blackwell_run(llama8b("b200-sxm-180gb", "hybrid"));
  const json mx = blackwell_run(llama8b("b200-sxm-180gb", "mxfp8"));
  const json fp4 = blackwell_run(llama8b("b200-sxm-180gb", "nvfp4"));
  const auto t = [](const json& j) { return j.at("step_time_s").get<double>(); };
  CHECK(t(fp8) < 0.8 * t(bf16));
  CHECK(t(mx) >= t(fp8));
  CHECK(t(mx) < 1.05 * t(fp8));
  CHECK(t(fp4) < 0.85 * t(mx));
  // The linear layers' saved inputs take the recipe's bytes: NVFP4's fewer than MXFP8's.
  CHECK(fp4.at("memory").at("per_gpu_bytes").get<double>() < mx.at("memory").at("per_gpu_bytes").get<double>());
  // The roofline reports what the GPU moves: a per-tensor cast on Blackwell reads bf16 and writes one fp8 copy (3
  // bytes an element), on Hopper the transpose too (4); MXFP8 writes both copies with their scales everywhere.
  const auto cast_bytes = [](const json& j) {
    for (const json& k : j.at("roofline").at("kernels"))
      if (k.at("kernel") == "fp8-cast" && k.at("pass") == "backward") return k.at("bytes").get<double>();
    return 0.0;
  };
  const json hopper = blackwell_run(llama8b("h100-sxm5-80gb", "hybrid"));
  REQUIRE(cast_bytes(hopper) > 0);
  CHECK(cast_bytes(fp8) / cast_bytes(hopper) == doctest::Approx(3.0 / 4.0));
  CHECK(cast_bytes(mx) / cast_bytes(hopper) == doctest::Approx((2.0 + 2.0 * (1.0 + 1.0 / 32)) / 4.0));
  // A GPU without the recipe's matrix units refuses it in one line.
  const fs::path dir = fresh_dir("blackwell", "refused");
  const auto refused = dtsim("run " + written(dir, "h.yaml", llama8b("h100-sxm5-80gb", "mxfp8")).string());
  CHECK(refused.status == 2);
  CHECK_MESSAGE(refused.err.find("training.fp8: needs mxfp8 matrix units, which gpu h100-sxm5-80gb lacks") != std::string::npos,
                refused.err);
  CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  // NVFP4 is NVIDIA's: AMD's FP4 (MXFP4) is no NVFP4 recipe.
  const auto amd = dtsim("run " + written(dir, "m.yaml", llama8b("mi355x", "nvfp4")).string());
  CHECK(amd.status == 2);
  CHECK_MESSAGE(amd.err.find("training.fp8: is NVIDIA's FP4 (Blackwell); gpu mi355x (cdna4) has none") != std::string::npos,
                amd.err);
}

TEST_CASE("blackwell: FP4 weights serve a decode step faster than FP8 ones on a GPU with FP4 units") {
  // One GPU: the decode step reads every weight, and reads half the bytes (with NVFP4's scales, 0.5625 a weight).
  const auto serve = [&](const std::string& weights) {
    return blackwell_run(fmt::format("name: s\ncluster: {{gpu: b200-sxm-180gb, gpus_per_node: 8, intra: nvswitch}}\n"
                                "model: {{preset: llama3-70b}}\ninference: {{batch: 32, prompt_tokens: 1024, "
                                "output_tokens: 256, weights: {}}}\nparallelism: {{tp: 1}}\nsimulation: {{engine: analytic}}\n",
                                weights));
  };
  const json fp8 = serve("fp8"), fp4 = serve("fp4");
  CHECK(fp4.at("tpot_s").get<double>() < 0.8 * fp8.at("tpot_s").get<double>());
  CHECK(fp4.at("memory").at("per_gpu_bytes").get<double>() < fp8.at("memory").at("per_gpu_bytes").get<double>());
}

namespace {

// Llama 3 70B with TP 8 on one GB200 NVL72 rack: each TP group spans two 4-GPU compute trays.
constexpr const char* kNvl72 =
    "name: nvl72\ncluster: {preset: gb200-nvl72}\nmodel: {preset: llama3-70b}\n"
    "training: {global_batch: 144, micro_batch: 1, fp8: hybrid}\nparallelism: {tp: 8, pp: 1, dp: 9}\n"
    "simulation: {engine: analytic}\n";

}  // namespace

TEST_CASE("nvl72: the NVLink domain spans the rack's compute trays, and TP across trays stays on NVLink") {
  const json rack = blackwell_run(kNvl72);
  // The same trays, each its own NVLink domain (4 GPUs), TP's second tray over InfiniBand: far slower.
  const json trays = blackwell_run(kNvl72, "--set cluster.nvlink_domain=4 --set cluster.nodes=18");
  CHECK(rack.at("gpus").get<int>() == 72);
  CHECK(trays.at("step_time_s").get<double>() > 1.5 * rack.at("step_time_s").get<double>());
  // The topology: 72 GPUs on one NVLink switch per rack; the bill counts trays, not 72-GPU servers.
  const fs::path dir = fresh_dir("blackwell", "nvl72-topo");
  const auto topo = dtsim("topo " + written(dir, "t.yaml", "name: t\ncluster: {preset: gb200-nvl72, racks: 2}\n").string() +
                          " --format json");
  REQUIRE_MESSAGE(topo.status == 0, topo.err);
  json t = json::parse(topo.out);
  if (t.is_array()) t = t.at(0);
  std::map<std::string, long long> count;
  for (const json& item : t.at("bill_of_materials").at("items")) count[item.at("name")] += item.at("count").get<long long>();
  CHECK(count["gb200"] == 144);
  CHECK(count["nvl-compute-tray"] == 36);
  CHECK(count["nvlink-switch-tray"] == 18);   // 9 a rack: 72 GPUs x 18 NVLink 5 links over 144 ports a tray
  CHECK(count["connectx-7-400g"] == 144);
  // The resolved scenario writes the servers and the domain as given, and plays the same step.
  const auto run = dtsim("run " + written(dir, "r.yaml", kNvl72).string() + " --format json --out " + (dir / "out").string());
  REQUIRE_MESSAGE(run.status == 0, run.err);
  const std::string resolved = slurp(dir / "out" / "scenario.resolved.yaml");
  CHECK(resolved.find("nvlink_domain: 72") != std::string::npos);
  CHECK(resolved.find("gpus_per_node: 4") != std::string::npos);
  CHECK(resolved.find("nodes: 18") != std::string::npos);
  const auto again = dtsim("run " + (dir / "out" / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE_MESSAGE(again.status == 0, again.err);
  CHECK(json::parse(again.out).at("step_time_s").get<double>() ==
        doctest::Approx(json::parse(run.out).at("step_time_s").get<double>()).epsilon(1e-9));
}

TEST_CASE("nvl72: a rack is 18 servers to Slurm, to stragglers and to the gradients' rings across racks") {
  const std::string dp = "name: d\ncluster: {preset: gb200-nvl72, racks: 2}\nmodel: {preset: llama3-8b}\n"
                         "training: {global_batch: 288, micro_batch: 2, fp8: hybrid}\nparallelism: {tp: 1, pp: 1, dp: 144}\n"
                         "simulation: {engine: analytic}\n";
  // Data parallelism across two racks: the gradients' rings take NCCL's channels (at most 32 blocks), not two per NIC
  // of the whole 72-GPU domain, so the step is the trays' own within 10 %.
  std::string trays = dp;
  trays.replace(trays.find("racks: 2"), 8, "nodes: 36, nvlink_domain: 4");
  const json rack = blackwell_run(dp), tray = blackwell_run(trays);
  CHECK(rack.at("step_time_s").get<double>() == doctest::Approx(tray.at("step_time_s").get<double>()).epsilon(0.10));
  // A straggling server is one compute tray: 4 GPUs slowed, not the rack.
  const json slow = blackwell_run(dp, "--set \"reliability={stragglers: {nodes: {3: 1.5}}}\"");
  CHECK(slow.at("stragglers").at("slowed_ranks").get<int>() == 4);
  // The launch: 18 hosts of 4 GPUs a rack.
  const fs::path dir = fresh_dir("blackwell", "nvl72-emit");
  std::string one = dp;
  one.replace(one.find("racks: 2"), 8, "racks: 1");
  one.replace(one.find("global_batch: 288"), 17, "global_batch: 144");
  one.replace(one.find("dp: 144"), 7, "dp: 72");
  const auto emit = dtsim("plan " + written(dir, "e.yaml", one).string() + " --top 1 --confirm 0 --emit megatron");
  REQUIRE_MESSAGE(emit.status == 0, emit.err);
  CHECK(emit.out.find("#SBATCH --nodes=18") != std::string::npos);
  CHECK(emit.out.find("#SBATCH --gpus-per-node=4") != std::string::npos);
  CHECK(emit.out.find("--nproc-per-node 4") != std::string::npos);
  CHECK(emit.out.find("#SBATCH --segment=18") != std::string::npos);   // the rack's trays held together
}

TEST_CASE("nvl72: a rack's NVLS all-reduce at the fifth-generation switch's rate, the 8-GPU servers' at theirs") {
  // CoreWeave's GB200 NVL72, 72 GPUs, 4 GiB: 839.16 GB/s busbw (the figure nvlink5's port rate is fitted on).
  const auto busbw = [](const std::string& args) {
    const auto r = dtsim("collective " + args + " -b 4G -e 4G --format json");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return json::parse(r.out).at(0).at("busbw_GBps").get<double>();
  };
  CHECK(busbw("--gpu gb200 -g 72 --nodes 1") == doctest::Approx(839.16).epsilon(0.10));
  // Hopper's switch keeps its own rate (8x H100 NVLS ~480 GB/s, nccl.md).
  CHECK(busbw("--gpu h100-sxm5-80gb -g 8 --nodes 1") == doctest::Approx(480).epsilon(0.05));
}

TEST_CASE("nvl72: what an NVLink domain cannot be is a one-line error") {
  const fs::path dir = fresh_dir("blackwell", "nvl72-errors");
  const auto err = [&](const std::string& cluster, const std::string& expected) {
    const auto r = dtsim("topo " + written(dir, "e.yaml", "name: e\ncluster: " + cluster + "\n").string());
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find(expected) != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  err("{preset: gb200-nvl72, nvlink_domain: 6}", "cluster.nvlink_domain: is not a whole number of servers of 4 GPUs");
  err("{gpu: b200-sxm-180gb, nodes: 2, racks: 1, inter: fat-tree}", "cluster.racks: counts NVLink domains that span servers");
  err("{gpu: gb200, gpus_per_node: 4, nvlink_domain: 72, intra: full-mesh, nodes: 18, inter: fat-tree}",
      "cluster.nvlink_domain: spans servers through NVLink switches");
}

// A job of fewer trays than a rack, or of trays that do not fill whole racks, runs as Slurm's segments place it
// (NVIDIA's Megatron-Bridge scripts: all the trays in one domain up to 18, else the largest divisor up to 18).
TEST_CASE("nvl72: a job's trays run in segments of one NVLink domain each, and the bill keeps the racks' switch trays") {
  const fs::path dir = fresh_dir("blackwell", "nvl72-segments");
  const auto topo = [&](int nodes) {
    const auto r = dtsim("topo " + written(dir, fmt::format("s{}.yaml", nodes),
                                           fmt::format("name: s\ncluster: {{preset: gb200-nvl72, nodes: {}}}\n", nodes)).string() +
                         " --format json");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    json t = json::parse(r.out);
    return t.is_array() ? t.at(0) : t;
  };
  const auto switch_trays = [](const json& t) {
    long long n = 0;
    for (const json& item : t.at("bill_of_materials").at("items"))
      if (item.at("name") == "nvlink-switch-tray") n += item.at("count").get<long long>();
    return n;
  };
  const auto layout = [](const json& t) { return t.dump(); };
  const json two = topo(2), sixty_four = topo(64), twenty = topo(20);
  CHECK(layout(two).find("1x8 nvswitch") != std::string::npos);
  CHECK(layout(sixty_four).find("4x64 nvswitch") != std::string::npos);   // 64 trays: 4 segments of 16
  CHECK(layout(twenty).find("2x40 nvswitch") != std::string::npos);       // 20 trays: 2 segments of 10
  CHECK(switch_trays(two) == 9);          // one rack, partly used
  CHECK(switch_trays(sixty_four) == 36);  // four racks
  CHECK(switch_trays(twenty) == 18);
  // TP 8 over the 8 GPUs of two trays stays on NVLink: far faster than with each tray its own domain.
  const std::string tp8 = "name: t\ncluster: {preset: gb200-nvl72, nodes: 2}\nmodel: {preset: llama3-8b}\n"
                          "training: {global_batch: 8, micro_batch: 1, recompute: none}\nparallelism: {tp: 8, pp: 1}\n"
                          "simulation: {engine: analytic}\n";
  const json segment = blackwell_run(tp8), trays = blackwell_run(tp8, "--set cluster.nvlink_domain=4");
  CHECK(trays.at("step_time_s").get<double>() > 1.3 * segment.at("step_time_s").get<double>());
}

// Blackwell Ultra's doubled exponential units: its attention core runs faster than Blackwell's at the same peaks.
TEST_CASE("blackwell: GB300's attention core outruns GB200's at equal GEMM peaks") {
  const std::string yaml = "name: u\ncluster: {gpu: GPU, gpus_per_node: 1, intra: nvswitch}\nmodel: {preset: llama3-8b}\n"
                           "training: {global_batch: 1, micro_batch: 1, recompute: none, fp8: hybrid}\n"
                           "simulation: {engine: analytic}\n";
  const auto with = [&](const std::string& gpu) {
    std::string y = yaml;
    y.replace(y.find("GPU"), 3, gpu);
    return blackwell_run(y).at("step_time_s").get<double>();
  };
  const double gb200 = with("gb200"), gb300 = with("gb300");
  // Llama 3 8B at 8192 tokens spends about a fifth of its compute in the attention core on Blackwell (8 % less
  // time here); published Megatron-Bridge 25.11 runs GB300 19 % faster than GB200 on it (docs/validation.md).
  CHECK(gb300 < 0.95 * gb200);
  CHECK(gb300 > 0.75 * gb200);
}

// NVLS is the link's, not its catalog name's: an NVLink 5 class renamed in the scenario reduces in the switch
// alike (topology::Link carries switch_reduction and switch_port_rate), on both engines.
TEST_CASE("nvl72: a renamed NVLink class keeps its switch reduction") {
  const std::string tp8 = "name: n\ncluster: {gpu: b200-sxm-180gb, gpus_per_node: 8, intra: nvswitch, intra_link: LINK, links_per_gpu: 18}\n"
                          "model: {layers: 4, hidden: 8192, heads: 64, ffn_hidden: 28672, vocab: 32000, seq_length: 4096}\n"
                          "training: {global_batch: 2, micro_batch: 1, recompute: none, sequence_parallel: false, tp_comm_overlap: false}\n"
                          "parallelism: {tp: 8, pp: 1}\n"
                          "simulation: {engine: ENGINE}\n";
  for (const std::string engine : {"analytic", "simgrid"}) {
    const auto with = [&](const std::string& link) {
      std::string y = tp8;
      y.replace(y.find("LINK"), 4, link);
      y.replace(y.find("ENGINE"), 6, engine);
      return blackwell_run(y).at("step_time_s").get<double>();
    };
    CAPTURE(engine);
    const double catalog = with("nvlink5"), renamed = with("{base: nvlink5, name: my-nvlink}");
    const double without = with("{base: nvlink5, name: no-sharp, switch_reduction: false}");
    CHECK(renamed == doctest::Approx(catalog).epsilon(1e-9));
    CHECK(without > 1.02 * catalog);
  }
}

// The segments round-trip through the resolved scenario, an uneven split is refused in one line, and `--emit nemo`
// writes activation offloading as NVIDIA's GB200 recipes do.
TEST_CASE("nvl72: segments and offloading survive the resolved scenario and reach the launch script") {
  const fs::path dir = fresh_dir("blackwell", "nvl72-resolved");
  const std::string job = "name: r\ncluster: {preset: gb200-nvl72, nodes: 16}\nmodel: {preset: llama3-8b}\n"
                          "training: {framework: nemo, global_batch: 64, micro_batch: 1, recompute: none, offload_layers: 4}\n"
                          "parallelism: {tp: 1, pp: 1}\nsimulation: {engine: analytic}\n";
  const auto run = dtsim("run " + written(dir, "r.yaml", job).string() + " --format json --out " + (dir / "out").string());
  REQUIRE_MESSAGE(run.status == 0, run.err);
  const std::string resolved = slurp(dir / "out" / "scenario.resolved.yaml");
  CHECK(resolved.find("nodes: 16") != std::string::npos);
  CHECK(resolved.find("nvlink_domain: 72") != std::string::npos);
  CHECK(resolved.find("offload_layers: 4") != std::string::npos);
  const auto again = dtsim("run " + (dir / "out" / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE_MESSAGE(again.status == 0, again.err);
  CHECK(json::parse(again.out).at("step_time_s").get<double>() ==
        doctest::Approx(json::parse(run.out).at("step_time_s").get<double>()).epsilon(1e-9));
  const auto emit = dtsim("plan " + (dir / "r.yaml").string() + " --top 1 --confirm 0 --emit nemo");
  REQUIRE_MESSAGE(emit.status == 0, emit.err);
  CHECK(emit.out.find("model.transformer.cpu_offloading_num_layers=4") != std::string::npos);
  CHECK(emit.out.find("#SBATCH --segment=16") != std::string::npos);
  const auto megatron = dtsim("plan " + (dir / "r.yaml").string() + " --top 1 --confirm 0 --emit megatron");
  CHECK(megatron.status == 2);
  CHECK(megatron.err.find("activation offloading") != std::string::npos);
  const auto uneven = dtsim("topo " + written(dir, "u.yaml", "name: u\ncluster: {preset: gb200-nvl72, nodes: 27}\n").string());
  CHECK(uneven.status == 2);
  CHECK(uneven.err.find("cluster.nodes: run as Slurm's segments of 9 servers, 2 to a domain of 18") != std::string::npos);
  CHECK(std::count(uneven.err.begin(), uneven.err.end(), '\n') == 1);
}

// MXFP4 weights (E8M0 scales per 32, GPT-OSS's format) served: fewer bytes than NVFP4's (E4M3 per 16), at the FP4
// units' rate on Blackwell; on an MI355X, whose FP4 is MXFP4 only, NVFP4 weights are converted on the vector units.
TEST_CASE("blackwell: MXFP4 weights beside NVFP4's, on NVIDIA's and AMD's FP4 units") {
  const auto serve = [](const std::string& gpu, const std::string& weights) {
    return blackwell_run(fmt::format("name: s\ncluster: {{gpu: {}, gpus_per_node: 8, intra: nvswitch}}\n"
                                     "model: {{preset: llama3-70b}}\ninference: {{batch: 64, prompt_tokens: 1024, "
                                     "output_tokens: 256, weights: {}}}\nparallelism: {{tp: 8}}\n",
                                     gpu, weights));
  };
  const auto bytes = [](const json& r) { return r.at("memory").at("per_gpu_bytes").get<double>(); };
  const auto rate = [](const json& r) { return r.at("tokens_per_s").get<double>(); };
  const json nv = serve("b200-sxm-180gb", "fp4"), mx = serve("b200-sxm-180gb", "mxfp4");
  CHECK(bytes(mx) < bytes(nv));
  CHECK(rate(mx) == doctest::Approx(rate(nv)).epsilon(0.02));
  const json amd_nv = serve("mi355x", "fp4"), amd_mx = serve("mi355x", "mxfp4");
  CHECK(rate(amd_mx) > 1.1 * rate(amd_nv));
}
