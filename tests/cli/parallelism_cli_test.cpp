// Mixtures of experts and context parallelism end to end: `run` on both engines, `graph` naming the MoE ops, the
// resolved scenario loading back to the same step, bad plans refused.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

json moe_run(const std::string& args) {
  const auto r = dtsim("run " + src("tests/data/scenarios/moe-small.yaml") + " --format json " + args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("moe run: both engines time the all-to-alls alike, and expert parallelism across nodes is slower than inside one") {
  const json simgrid = moe_run("");
  const json analytic = moe_run("--set simulation.engine=analytic");
  CHECK(analytic.at("step_time_s").get<double>() ==
        doctest::Approx(simgrid.at("step_time_s").get<double>()).epsilon(0.02));
  CHECK(simgrid.at("memory").at("fits").get<bool>());
  // Pipeline stages inside a node and the replicas across the two (order tp-pp-dp): the expert-parallel group
  // spans both nodes, and its all-to-alls cross InfiniBand instead of NVLink.
  const json across = moe_run("--set parallelism.order=tp-pp-dp");
  CHECK(across.at("step_time_s").get<double>() > simgrid.at("step_time_s").get<double>() * 1.05);
  // An imbalanced router slows the step; the model FLOPs stay.
  const json skewed = moe_run("--set model.expert_imbalance=1.5");
  CHECK(skewed.at("step_time_s").get<double>() > simgrid.at("step_time_s").get<double>() * 1.1);
}

TEST_CASE("moe graph: the all-to-alls over ep and the MoE kernels (router, permutes, grouped expert GEMMs)") {
  const auto table = dtsim("graph " + src("tests/data/scenarios/moe-small.yaml"));
  REQUIRE_MESSAGE(table.status == 0, table.err);
  CHECK(table.out.find("all-to-all over ep") != std::string::npos);
  const fs::path dot = fresh_dir("moe", "dot") / "g.dot";
  fs::create_directories(dot.parent_path());
  const auto r = dtsim("graph " + src("tests/data/scenarios/moe-small.yaml") + " --kernels --dot " + dot.string());
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string text = slurp(dot);
  for (const char* op : {"router", "router-topk", "token-permute", "expert-up-gemm", "expert-down-gemm",
                         "token-unpermute", "all-to-all ep"})
    CHECK_MESSAGE(text.find(op) != std::string::npos, op);
}

TEST_CASE("moe run: small experts wait for the host, shown as other in the breakdown, host ops in graph and trace") {
  const std::string file = src("tests/data/scenarios/moe-small-experts.yaml");
  const auto r = dtsim("run " + file + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json row = json::parse(r.out);
  const json& b = row.at("breakdown_s");
  // The host's time a pass beyond its compute is the compute stream's wait: a fifth of the step and more.
  CHECK(b.at("other").get<double>() > 0.2 * row.at("step_time_s").get<double>());
  const auto shown = dtsim("run " + file);   // the table names it
  REQUIRE_MESSAGE(shown.status == 0, shown.err);
  CHECK(shown.out.find("the GPU waiting for its host to issue MoE layer passes") != std::string::npos);
  const auto table = dtsim("graph " + file);
  REQUIRE_MESSAGE(table.status == 0, table.err);
  CHECK(table.out.find("8 host (") != std::string::npos);   // 2 MoE layers x 2 micro-batches x 2 passes
  // One stage: no pipeline bubble; the communication-free step's idle time is the host's.
  const auto graph = dtsim("graph " + file + " --format json");
  REQUIRE_MESSAGE(graph.status == 0, graph.err);
  const json g = json::parse(graph.out);
  CHECK(g.at("bubble_fraction").get<double>() == doctest::Approx(0.0).scale(1e-9));
  CHECK(g.at("host_wait_fraction").get<double>() > 0.2);
  CHECK(g.at("classes").at(0).at("host_ops").get<int>() == 8);
  const fs::path trace = fresh_dir("moe", "host-trace") / "t.json";
  fs::create_directories(trace.parent_path());
  const auto t = dtsim("run " + file + " --trace " + trace.string());
  REQUIRE_MESSAGE(t.status == 0, t.err);
  const std::string text = slurp(trace);
  CHECK(text.find("host issues forward L0 mb0") != std::string::npos);
  CHECK(text.find("\"name\":\"host\"") != std::string::npos);   // its track
}

TEST_CASE("moe: the resolved scenario carries the experts and the expert grid, and loads back to the same step") {
  const fs::path dir = fresh_dir("moe", "out");
  const auto one = dtsim("run " + src("tests/data/scenarios/moe-small.yaml") + " --out " + dir.string());
  REQUIRE_MESSAGE(one.status == 0, one.err);
  const std::string resolved = slurp(dir / "scenario.resolved.yaml");
  for (const char* key : {"experts: 8", "experts_per_token: 2", "expert_ffn_hidden: 14336", "ep: 8"})
    CHECK_MESSAGE(resolved.find(key) != std::string::npos, key);
  CHECK(resolved.find("etp:") == std::string::npos);   // unset: it follows tp wherever the scenario goes
  const auto again = dtsim("run " + (dir / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE(again.status == 0);
  CHECK(json::parse(again.out).at("step_time_s") == json::parse(slurp(dir / "result.json")).at("step_time_s"));
  fs::remove_all(dir);
}

TEST_CASE("moe: a dense override of an MoE preset stays dense in the resolved scenario") {
  const fs::path dir = fresh_dir("moe", "dense");
  const auto one = dtsim("run " + src("tests/data/scenarios/moe-small.yaml") +
                         " --set model.experts=0 --set parallelism.ep=1 --out " + dir.string());
  REQUIRE_MESSAGE(one.status == 0, one.err);
  const std::string resolved = slurp(dir / "scenario.resolved.yaml");
  CHECK(resolved.find("experts: 0") != std::string::npos);
  const auto again = dtsim("graph " + (dir / "scenario.resolved.yaml").string());
  REQUIRE(again.status == 0);
  CHECK(again.out.find("all-to-all") == std::string::npos);
  CHECK(json::parse(slurp(dir / "result.json")).at("step_time_s") ==
        json::parse(dtsim("run " + (dir / "scenario.resolved.yaml").string() + " --format json").out).at("step_time_s"));
  fs::remove_all(dir);
}

TEST_CASE("plan refuses what it does not search: context parallelism and layer-list models") {
  const auto cp = dtsim("plan " + src("scenarios/models/llama3-8b-128k-cp.yaml"));
  CHECK(cp.status == 2);
  CHECK(cp.err.find("parallelism.cp: is not among the degrees plan searches") != std::string::npos);
  const auto layers = dtsim("plan " + src("scenarios/models/resnet50-dgx-a100.yaml"));
  CHECK(layers.status == 2);
  CHECK(layers.err.find("model.kind: trains data-parallel only") != std::string::npos);
}

TEST_CASE("moe: an ep that does not divide the experts is refused with exit 2 and one line") {
  const auto e = dtsim("memory " + src("tests/data/scenarios/moe-ep-not-dividing.yaml"));
  CHECK(e.status == 2);
  CHECK(e.err.starts_with("dtsim: error: "));
  CHECK(e.err.ends_with("moe-ep-not-dividing.yaml:6: parallelism.ep: does not divide model.experts 8: ep '3' "
                        "(allowed: a divisor of experts)\n"));
  CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
}

TEST_CASE("moe with zero 3: DeepSpeed's ZeRO-3 refused with exit 2 and one line, FSDP with experts runs") {
  const std::string file = src("tests/data/scenarios/moe-zero3-deepspeed.yaml");
  const auto e = dtsim("memory " + file);
  CHECK(e.status == 2);
  CHECK(e.err.ends_with("moe-zero3-deepspeed.yaml:7: parallelism.zero: (ZeRO-3) with a mixture of experts is modelled "
                        "only as PyTorch FSDP shards it (parallelism.fsdp: full): zero '3' (allowed: 0, 1 or 2, or "
                        "parallelism.fsdp: full)\n"));
  CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  const auto hybrid = dtsim("memory " + file + " --set parallelism.fsdp=hybrid");
  CHECK(hybrid.status == 2);
  CHECK(hybrid.err.find("parallelism.fsdp: is not modelled with a mixture of experts, so not 'hybrid'") != std::string::npos);
  const auto fsdp = dtsim("run " + file + " --set parallelism.fsdp=full");
  CHECK(fsdp.status == 0);
  CHECK(fsdp.out.find("fits") != std::string::npos);
  const auto graph = dtsim("graph " + file + " --set parallelism.fsdp=full");
  CHECK(graph.out.find("all-gather over edp") != std::string::npos);
  CHECK(graph.out.find("reduce-scatter over edp") != std::string::npos);
}

TEST_CASE("fsdp under pipeline parallelism: auto chooses the micro-batch there too") {
  // The plan search kept no candidate with ZeRO-3 under pp, so auto chose nothing beside FSDP's; it searches them.
  const fs::path file = written(fresh_dir("fsdp", "pp-auto"), "s.yaml",
                                "name: tt\ncluster: {preset: dgx-h100, nodes: 4}\nmodel: {preset: llama3-8b}\n"
                                "training: {framework: torchtitan, global_batch: 64, recompute: full}\n"
                                "parallelism: {fsdp: full, tp: 2, pp: 2}\n");
  const auto r = dtsim("run " + file.string() + " --format json");
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  const auto row = nlohmann::json::parse(r.out);
  REQUIRE(row["auto_chosen"].contains("training.micro_batch"));
  CHECK(row["auto_chosen"]["training.micro_batch"].get<int>() >= 1);
}

TEST_CASE("recompute op: torchtitan's per-op checkpointing on an MoE model is refused with exit 2 and one line") {
  const auto e = dtsim("memory " + src("tests/data/scenarios/recompute-op-moe.yaml"));
  CHECK(e.status == 2);
  CHECK(e.err.starts_with("dtsim: error: "));
  CHECK(e.err.ends_with("recompute-op-moe.yaml:7: training.recompute: is torchtitan's per-op checkpointing of a Llama "
                        "block's matmuls, and the model has experts, so not 'op' (allowed: none, selective or full on "
                        "this model)\n"));
  CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
}

TEST_CASE("cp run: a 16K-token sequence that does not fit on one GPU fits split over four, and loads back alike") {
  const fs::path dir = fresh_dir("cp", "run");
  fs::create_directories(dir);
  std::ofstream(dir / "cp.yaml") << "name: cp\ncluster: {preset: dgx-h100}\nmodel: {preset: llama3-8b, seq_length: 16384}\n"
                                    "training: {global_batch: 8, recompute: none}\nparallelism: {cp: 4}\n";
  const auto one = dtsim("run " + (dir / "cp.yaml").string() + " --set parallelism.cp=1 --format json");
  REQUIRE_MESSAGE(one.status == 0, one.err);
  CHECK_FALSE(json::parse(one.out).at("memory").at("fits").get<bool>());
  const auto four = dtsim("run " + (dir / "cp.yaml").string() + " --format json --out " + (dir / "out").string());
  REQUIRE_MESSAGE(four.status == 0, four.err);
  CHECK(json::parse(four.out).at("memory").at("fits").get<bool>());
  const std::string resolved = slurp(dir / "out" / "scenario.resolved.yaml");
  CHECK(resolved.find("cp: 4") != std::string::npos);
  CHECK(resolved.find("cp_comm: p2p") != std::string::npos);
  const auto again = dtsim("run " + (dir / "out" / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE(again.status == 0);
  CHECK(json::parse(again.out).at("step_time_s") == json::parse(four.out).at("step_time_s"));
  const auto graph = dtsim("graph " + (dir / "cp.yaml").string());
  CHECK(graph.out.find("all-gather over cp") != std::string::npos);
  CHECK(graph.out.find("dp 2 cp 4") != std::string::npos);
  // A cp that does not divide the sequence into 2 x cp chunks: exit 2, one line.
  const auto bad = dtsim("memory " + (dir / "cp.yaml").string() + " --set model.seq_length=16380");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("parallelism.cp: does not divide model.seq_length 16380 into 8 equal chunks") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  fs::remove_all(dir);
}

TEST_CASE("fsdp run: prefetches the next layer whatever the memory, and hybrid all-reduces shards across nodes") {
  const auto scenario = src("scenarios/models/llama3-8b-fsdp-32xh100.yaml");
  const fs::path dir = fresh_dir("fsdp", "run");
  const auto full = dtsim("run " + scenario + " --format json --out " + dir.string());
  REQUIRE_MESSAGE(full.status == 0, full.err);
  const std::string resolved = slurp(dir / "scenario.resolved.yaml");
  CHECK(resolved.find("fsdp: full") != std::string::npos);
  CHECK(resolved.find("zero: 3") != std::string::npos);
  CHECK(resolved.find("zero3_prefetch: layer") != std::string::npos);
  const auto again = dtsim("run " + (dir / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE(again.status == 0);
  CHECK(json::parse(again.out).at("step_time_s") == json::parse(full.out).at("step_time_s"));
  const auto graph = dtsim("graph " + scenario + " --set parallelism.fsdp=hybrid");
  CHECK(graph.out.find("all-reduce over replica") != std::string::npos);
  CHECK(graph.out.find("all-gather over shard") != std::string::npos);
  // Over one 100 GbE NIC a node, keeping the gathers inside the node pays.
  const std::string slow = " --set cluster.inter_link=eth-100g --set cluster.nics_per_node=1 --format json";
  const auto f = dtsim("run " + scenario + slow);
  const auto h = dtsim("run " + scenario + slow + " --set parallelism.fsdp=hybrid");
  REQUIRE(f.status == 0);
  REQUIRE(h.status == 0);
  CHECK(json::parse(h.out).at("step_time_s").get<double>() < json::parse(f.out).at("step_time_s").get<double>());
  fs::remove_all(dir);
}
