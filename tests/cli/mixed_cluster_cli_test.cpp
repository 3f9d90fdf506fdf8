// `cluster.groups`: a cluster of two GPU kinds, each pipeline stage on its kind, the layers split between them so
// that the stages take as long as each other, and the resolved scenario, bill and errors that go with it.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

// Two 8-GPU servers of `first` then two of `second`, on one InfiniBand fat tree; `extra` YAML lines appended.
std::string mixed_yaml(const std::string& first, const std::string& second, const std::string& plan,
                       const std::string& extra = "") {
  return fmt::format(
      "name: mixed\n"
      "cluster:\n  inter: fat-tree\n  inter_link: ib-hdr\n  gpus_per_node: 8\n"
      "  groups:\n    - {{gpu: {}, nodes: 2}}\n    - {{gpu: {}, nodes: 2}}\n"
      "model: {{preset: gpt-7.5b}}\n"
      "training: {{global_batch: 64, micro_batch: 2, recompute: none, steps: 1000}}\n"
      "parallelism: {}\n{}\n",
      first, second, plan, extra);
}

json run_mixed(const std::string& yaml, const std::string& args = "") {
  const fs::path dir = fresh_dir("mixed", std::to_string(std::hash<std::string>{}(yaml + args)));
  const auto r = dtsim("run " + written(dir, "m.yaml", yaml).string() + " --format json " + args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

constexpr const char* kH100 = "h100-sxm5-80gb";
constexpr const char* kA100 = "a100-sxm4-80gb";
constexpr const char* kPipeline = "{tp: 8, pp: 2, dp: 2, vpp: 1}";

}  // namespace

TEST_CASE("mixed cluster: a pipeline across two GPU kinds, its layers split so that the stages take as long") {
  const json h100 = run_mixed(mixed_yaml(kH100, kH100, kPipeline));
  const json a100 = run_mixed(mixed_yaml(kA100, kA100, kPipeline));
  const json mixed = run_mixed(mixed_yaml(kH100, kA100, kPipeline));
  const double t = mixed.at("step_time_s").get<double>();
  CHECK(t > h100.at("step_time_s").get<double>());
  CHECK(t < a100.at("step_time_s").get<double>());
  // One kind: nothing to split. Two: more layers on the H100 stage, by about the kinds' speed ratio.
  CHECK(h100.at("auto_chosen").empty());
  REQUIRE(mixed.at("auto_chosen").contains("parallelism.layers_per_stage"));
  const json split = mixed.at("auto_chosen").at("parallelism.layers_per_stage");
  REQUIRE(split.size() == 2);
  CHECK(split[0].get<int>() + split[1].get<int>() == 36);
  CHECK(split[0].get<int>() > 2 * split[1].get<int>());
  // The even split waits on the A100 stage: balanced is faster by a quarter or more.
  const json even = run_mixed(mixed_yaml(kH100, kA100, "{tp: 8, pp: 2, dp: 2, vpp: 1, layers_per_stage: [18, 18]}"));
  CHECK(even.at("auto_chosen").empty());
  CHECK(t < 0.8 * even.at("step_time_s").get<double>());
  // Interleaved: each physical stage's virtual stages share its layers evenly.
  const json interleaved = run_mixed(mixed_yaml(kH100, kA100, "{tp: 8, pp: 2, dp: 2, vpp: 2}"));
  const json chunks = interleaved.at("auto_chosen").at("parallelism.layers_per_stage");
  REQUIRE(chunks.size() == 4);
  CHECK(std::abs(chunks[0].get<int>() - chunks[2].get<int>()) <= 1);
  CHECK(std::abs(chunks[1].get<int>() - chunks[3].get<int>()) <= 1);
  CHECK(chunks[0].get<int>() > chunks[1].get<int>());
  // The analytic engine agrees.
  const json analytic = run_mixed(mixed_yaml(kH100, kA100, kPipeline, "simulation: {engine: analytic}"));
  CHECK(analytic.at("step_time_s").get<double>() == doctest::Approx(t).epsilon(0.05));
  // MFU against the sum of both kinds' peaks: between the two kinds' own.
  CHECK(mixed.at("mfu").get<double>() > 0.2);
  CHECK(mixed.at("mfu").get<double>() < 0.6);
}

// The first gradient reduce-scatter's start on each of `ranks`, from a trace of the step.
std::vector<double> first_dp_reduction(const std::string& yaml, const std::string& ranks, const std::string& engine) {
  const fs::path dir = fresh_dir("mixed", "trace-" + engine);
  const fs::path trace = dir / "t.json";
  const auto r = dtsim("run " + written(dir, "m.yaml", yaml).string() + " --format json --set simulation.engine=" + engine +
                       " --trace " + trace.string() + " --trace-ranks " + ranks);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  std::map<int, double> first;
  const json events = json::parse(slurp(trace)).at("traceEvents");
  for (const json& e : events)
    if (e.value("ph", std::string()) == "X" && e.at("name").get<std::string>().starts_with("reduce-scatter dp") &&
        !first.contains(e.at("pid").get<int>()))
      first[e.at("pid").get<int>()] = e.at("ts").get<double>();
  std::vector<double> out;
  for (const auto& [rank, ts] : first) out.push_back(ts);
  return out;
}

TEST_CASE("mixed cluster: data-parallel replicas of each kind take shares of the batch in proportion to their speed") {
  const std::string dp = "{tp: 8, pp: 1, dp: 4}";
  const std::string even_dp = "{tp: 8, pp: 1, dp: 4, replica_micro_batches: [8, 8, 8, 8]}";
  const json h100 = run_mixed(mixed_yaml(kH100, kH100, dp));
  const json a100 = run_mixed(mixed_yaml(kA100, kA100, dp));
  CHECK(h100.at("auto_chosen").empty());   // one kind: nothing to share out
  // An even split waits for the A100 replicas.
  const json even = run_mixed(mixed_yaml(kH100, kA100, even_dp));
  CHECK(even.at("auto_chosen").empty());
  CHECK(even.at("step_time_s").get<double>() > h100.at("step_time_s").get<double>() * 1.3);
  CHECK(even.at("step_time_s").get<double>() == doctest::Approx(a100.at("step_time_s").get<double>()).epsilon(0.05));
  // Left out, the shares follow the kinds' speed: the H100 replicas take more than twice the A100 ones' 32 in all.
  const json mixed = run_mixed(mixed_yaml(kH100, kA100, dp));
  REQUIRE(mixed.at("auto_chosen").contains("parallelism.replica_micro_batches"));
  const json shares = mixed.at("auto_chosen").at("parallelism.replica_micro_batches");
  REQUIRE(shares.size() == 4);
  CHECK(shares[0] == shares[1]);
  CHECK(shares[2] == shares[3]);
  CHECK(shares[0].get<int>() + shares[1].get<int>() + shares[2].get<int>() + shares[3].get<int>() == 32);
  CHECK(shares[0].get<int>() >= 2 * shares[2].get<int>());
  const double t = mixed.at("step_time_s").get<double>();
  CHECK(t < 0.85 * even.at("step_time_s").get<double>());
  CHECK(t > h100.at("step_time_s").get<double>());
  // The step's model FLOPs do not depend on who computes them.
  CHECK(mixed.at("tflops_per_gpu").get<double>() * t ==
        doctest::Approx(even.at("tflops_per_gpu").get<double>() * even.at("step_time_s").get<double>()).epsilon(1e-9));
  // Every replica reduces its gradients together: the H100 replicas' first reduce-scatter waits for the A100
  // replicas' (rank 0 on an H100, rank 16 on an A100), on both engines, which agree on the step.
  for (const std::string engine : {"analytic", "simgrid"}) {
    const auto starts = first_dp_reduction(mixed_yaml(kH100, kA100, dp), "0,16", engine);
    REQUIRE(starts.size() == 2);
    CHECK(starts[0] == doctest::Approx(starts[1]).epsilon(1e-6));
  }
  const json analytic = run_mixed(mixed_yaml(kH100, kA100, dp, "simulation: {engine: analytic}"));
  const json simgrid = run_mixed(mixed_yaml(kH100, kA100, dp, "simulation: {engine: simgrid}"));
  CHECK(analytic.at("step_time_s").get<double>() == doctest::Approx(simgrid.at("step_time_s").get<double>()).epsilon(0.02));
  // The H100 replicas' wait is the gradients' reduction: a straggler on an H100 adds nothing it does not exceed.
  const json slowed = run_mixed(mixed_yaml(kH100, kA100, even_dp, "reliability: {stragglers: {ranks: {0: 1.2}}}"));
  CHECK(slowed.at("stragglers").at("slowdown").get<double>() == doctest::Approx(1.0).epsilon(0.02));
  CHECK(slowed.at("stragglers").at("slowest_factor").get<double>() == doctest::Approx(1.2));
  // Replicas that exchange tokens every micro-batch (experts across replicas) keep an even split.
  const std::string moe = mixed_yaml(kH100, kA100, "{tp: 1, pp: 1, dp: 32, ep: 8}", "simulation: {engine: analytic}");
  std::string experts = moe;
  experts.replace(experts.find("gpt-7.5b"), 8, "mixtral-8x7b");
  CHECK(run_mixed(experts).at("auto_chosen").empty());
}

TEST_CASE("mixed cluster: a pipeline per replica, each replica on one kind: shares of the batch, stages left even") {
  // Order tp-pp-dp puts each replica's four stages on one kind (replicas 0-1 on H100s, 2-3 on A100s): every stage
  // holds both kinds, so the layers stay even and the batch is shared out.
  const fs::path dir = fresh_dir("mixed", "pipelines");
  const fs::path file = written(dir, "m.yaml", mixed_yaml(kH100, kA100, "{tp: 2, pp: 4, dp: 4, vpp: 1, order: tp-pp-dp}"));
  const auto r = dtsim("run " + file.string() + " --format json --out " + (dir / "out").string());
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json run = json::parse(r.out);
  CHECK_FALSE(run.at("auto_chosen").contains("parallelism.layers_per_stage"));
  REQUIRE(run.at("auto_chosen").contains("parallelism.replica_micro_batches"));
  const json shares = run.at("auto_chosen").at("parallelism.replica_micro_batches");
  CHECK(shares[0].get<int>() > shares[3].get<int>());
  // The resolved scenario plays the same step; graph shows the same cohorts and even stages.
  const auto again = dtsim("run " + (dir / "out" / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE_MESSAGE(again.status == 0, again.err);
  CHECK(json::parse(again.out).at("step_time_s").get<double>() ==
        doctest::Approx(run.at("step_time_s").get<double>()).epsilon(1e-9));
  const auto graph = dtsim("graph " + file.string());
  REQUIRE_MESSAGE(graph.status == 0, graph.err);
  CHECK(graph.out.find("uneven micro-batches per replica") != std::string::npos);
  CHECK(graph.out.find(fmt::format("{} micro-batches each", shares[0].get<int>())) != std::string::npos);
  // Memory follows each replica's count: under GPipe every micro-batch is in flight, so the replicas given more
  // hold more than an even split's.
  const auto memory = [&](const std::string& list) {
    const auto m = dtsim("memory " + file.string() + " --format json --set parallelism.schedule=gpipe" +
                         " --set \"parallelism.replica_micro_batches=" + list + "\"");
    REQUIRE_MESSAGE(m.status == 0, m.err);
    return json::parse(m.out);
  };
  const json uneven = memory("[13, 13, 3, 3]"), even = memory("[8, 8, 8, 8]");
  CHECK(uneven.at("in_flight_micro_batches").get<int>() == 13);
  CHECK(uneven.at("per_gpu_bytes").get<double>() > even.at("per_gpu_bytes").get<double>());
}

TEST_CASE("mixed cluster: the resolved scenario runs the same, and the bill prices each kind") {
  const fs::path dir = fresh_dir("mixed", "resolved");
  const fs::path file = written(dir, "m.yaml", mixed_yaml(kH100, kA100, kPipeline));
  const auto first = dtsim("run " + file.string() + " --format json --out " + (dir / "out").string());
  REQUIRE_MESSAGE(first.status == 0, first.err);
  const std::string resolved = slurp(dir / "out" / "scenario.resolved.yaml");
  CHECK(resolved.find("groups:") != std::string::npos);
  CHECK(resolved.find("layers_per_stage") != std::string::npos);
  // The batch shares too (data-parallel replicas of each kind).
  const fs::path shared = written(dir, "dp.yaml", mixed_yaml(kH100, kA100, "{tp: 8, pp: 1, dp: 4}"));
  const auto dp = dtsim("run " + shared.string() + " --format json --out " + (dir / "dp").string());
  REQUIRE_MESSAGE(dp.status == 0, dp.err);
  CHECK(slurp(dir / "dp" / "scenario.resolved.yaml").find("replica_micro_batches: [") != std::string::npos);
  const auto dp_again = dtsim("run " + (dir / "dp" / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE_MESSAGE(dp_again.status == 0, dp_again.err);
  CHECK(json::parse(dp_again.out).at("step_time_s").get<double>() ==
        doctest::Approx(json::parse(dp.out).at("step_time_s").get<double>()).epsilon(1e-9));
  const auto again = dtsim("run " + (dir / "out" / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE_MESSAGE(again.status == 0, again.err);
  CHECK(json::parse(again.out).at("step_time_s").get<double>() ==
        doctest::Approx(json::parse(first.out).at("step_time_s").get<double>()).epsilon(1e-9));
  // memory and graph see the stages as run plays them: the H100 stage's 25 layers.
  const auto graph = dtsim("graph " + file.string());
  REQUIRE_MESSAGE(graph.status == 0, graph.err);
  const auto memory = dtsim("memory " + file.string() + " --format json");
  const auto even = dtsim("memory " + file.string() + " --format json --set \"parallelism.layers_per_stage=[18, 18]\"");
  REQUIRE_MESSAGE(memory.status == 0, memory.err);
  REQUIRE_MESSAGE(even.status == 0, even.err);
  CHECK(json::parse(memory.out).at("per_gpu_bytes").get<double>() > json::parse(even.out).at("per_gpu_bytes").get<double>());
  // Each stage's memory on its own kind: the H100 stage's 69 GB fits its 80 GB beside an A100 40 GB stage.
  const std::string small = mixed_yaml(kH100, "a100-sxm4-40gb", "{tp: 1, pp: 2, dp: 16, vpp: 1}");
  const auto per_stage = dtsim("memory " + written(dir, "small.yaml", small).string() + " --format json");
  const auto h100_only = dtsim("memory " + written(dir, "h100.yaml", mixed_yaml(kH100, kH100, "{tp: 1, pp: 2, dp: 16, vpp: 1}")).string() + " --format json");
  REQUIRE_MESSAGE(per_stage.status == 0, per_stage.err);
  REQUIRE_MESSAGE(h100_only.status == 0, h100_only.err);
  const json stage = json::parse(per_stage.out);
  CHECK(stage.at("fits").get<bool>());
  CHECK(stage.at("stage").get<int>() == 0);
  CHECK(stage.at("per_gpu_bytes").get<double>() > 45e9);
  CHECK(stage.at("capacity_bytes").get<double>() == json::parse(h100_only.out).at("capacity_bytes").get<double>());
  const auto topo = dtsim("topo " + file.string());
  REQUIRE(topo.status == 0);
  CHECK(topo.out.find("16 x h100-sxm5-80gb") != std::string::npos);
  CHECK(topo.out.find("16 x a100-sxm4-80gb") != std::string::npos);
  CHECK(topo.out.find("32 GPUs") != std::string::npos);
  // Each kind at its own price (the mean GPU's price is for totals only): as in a cluster of that kind alone.
  const auto gpu_price = [&](const std::string& yaml, const std::string& gpu) {
    const auto r = dtsim("topo " + written(dir, "t.yaml", yaml).string() + " --format json");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    json j = json::parse(r.out);
    if (j.is_array()) j = j.at(0);
    for (const json& item : j.at("bill_of_materials").at("items"))
      if (item.at("name") == gpu) return item.at("unit_usd").get<double>();
    FAIL("no " << gpu << " in the bill");
    return 0.0;
  };
  const std::string both = mixed_yaml(kH100, kA100, kPipeline);
  CHECK(gpu_price(both, kH100) == gpu_price(mixed_yaml(kH100, kH100, kPipeline), kH100));
  CHECK(gpu_price(both, kA100) == gpu_price(mixed_yaml(kA100, kA100, kPipeline), kA100));
  CHECK(gpu_price(both, kH100) > gpu_price(both, kA100));
}

TEST_CASE("mixed cluster: what groups cannot hold is a one-line error") {
  const fs::path dir = fresh_dir("mixed", "errors");
  const auto err = [&](const std::string& yaml, const std::string& command, const std::string& expected) {
    const auto r = dtsim(command + " " + written(dir, "e.yaml", yaml).string());
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find(expected) != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  const std::string good = mixed_yaml(kH100, kA100, kPipeline);
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string out = good;
    REQUIRE(out.find(from) != std::string::npos);
    return out.replace(out.find(from), from.size(), to);
  };
  err(replaced("  inter: fat-tree", "  gpu: h100-sxm5-80gb\n  inter: fat-tree"), "run",
      "cluster.gpu: is given per group with cluster.groups");
  err(replaced("    - {gpu: a100-sxm4-80gb, nodes: 2}\n", ""), "run", "cluster.groups: needs two groups or more");
  err(replaced("{gpu: h100-sxm5-80gb, nodes: 2}", "{gpu: h100-sxm5-80gb, nodes: 2, inter: switch}"), "run",
      "cluster.groups[0].inter");
  err(replaced("{gpu: a100-sxm4-80gb, nodes: 2}", "{gpu: a100-sxm4-80gb, nodes: 4, gpus_per_node: 4}"), "run",
      "cluster.groups[1].gpus_per_node: differs from the first group's");
  err(replaced("{gpu: a100-sxm4-80gb, nodes: 2}", "{gpu: a100-sxm4-80gb, nodes: 2, nics_per_node: 4}"), "run",
      "cluster.groups[1].nics_per_node: differs from the first group's");
  err(replaced("{gpu: a100-sxm4-80gb, nodes: 2}", "{gpu: a100-sxm4-80gb, nodes: 2, pcie: {sockets: 2}}"), "run",
      "cluster.groups[1]");
  // Uneven batch shares: dp entries summing to the batch's micro-batches, on a cluster of kinds, with replicas
  // that meet only in the gradients' reduction.
  const auto shares = [&](const std::string& list) {
    return mixed_yaml(kH100, kA100, "{tp: 8, pp: 1, dp: 4, replica_micro_batches: " + list + "}");
  };
  err(shares("[11, 11, 5]"), "run", "parallelism.replica_micro_batches: has the wrong number of entries: '3'");
  err(shares("[11, 11, 5, 4]"), "run", "parallelism.replica_micro_batches: sums to '31'");
  err(shares("[11, 11, 10, 0]"), "run", "parallelism.replica_micro_batches[3]: out of range '0'");
  // One fabric: its NIC written, or the same default for every group's GPU (an H100 ships NDR, an A100 HDR).
  std::string unwritten = mixed_yaml(kH100, kA100, "{tp: 8, pp: 1, dp: 4}");
  unwritten.erase(unwritten.find("  inter_link: ib-hdr\n"), std::string("  inter_link: ib-hdr\n").size());
  err(unwritten, "run", "cluster.inter_link: missing, and the groups' GPUs ship different NICs");
  for (const char* command : {"run", "memory", "graph", "plan"})
    err("name: one\ncluster: {gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 4, inter: fat-tree, inter_link: ib-hdr}\n"
        "model: {preset: gpt-7.5b}\ntraining: {global_batch: 64, micro_batch: 2}\n"
        "parallelism: {tp: 8, pp: 1, dp: 4, replica_micro_batches: [11, 11, 5, 5]}\n",
        command, "parallelism.replica_micro_batches: splits the batch unevenly between replicas");
  std::string experts = mixed_yaml(kH100, kA100, "{tp: 1, pp: 1, dp: 32, ep: 8, replica_micro_batches: [" +
                                                     std::string("3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, ") +
                                                     "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}",
                                   "simulation: {engine: analytic}");
  experts.replace(experts.find("gpt-7.5b"), 8, "mixtral-8x7b");
  experts.replace(experts.find("global_batch: 64"), 16, "global_batch: 128");
  err(experts, "run", "parallelism.replica_micro_batches: gives replicas different micro-batch counts");
}

TEST_CASE("mixed cluster: plan ranks plans as run plays them, stages on their kinds and layers balanced") {
  const fs::path dir = fresh_dir("mixed", "plan");
  const fs::path file = written(dir, "p.yaml", mixed_yaml(kH100, kA100, "{vpp: 1}"));
  const auto r = dtsim("plan " + file.string() + " --format json --top 3 --confirm 1");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json best = json::parse(r.out).at("plans").at(0);
  CHECK(best.at("confirmed").get<bool>());
  // The best plan written as a scenario runs to the step plan confirmed on SimGrid (its layers balanced again).
  const json& p = best.at("parallelism");
  const json& t = best.at("training");
  const json run = run_mixed(fmt::format(
      "name: mixed\ncluster:\n  inter: fat-tree\n  inter_link: ib-hdr\n  gpus_per_node: 8\n"
      "  groups:\n    - {{gpu: {}, nodes: 2}}\n    - {{gpu: {}, nodes: 2}}\n"
      "model: {{preset: gpt-7.5b}}\n"
      "training: {{global_batch: 64, micro_batch: {}, recompute: {}, sequence_parallel: {}, steps: 1000}}\n"
      "parallelism: {{tp: {}, pp: {}, dp: {}, vpp: 1, zero: {}, order: {}}}\n",
      kH100, kA100, t.at("micro_batch").get<int>(), t.at("recompute").get<std::string>(),
      t.at("sequence_parallel").get<bool>(), p.at("tp").get<int>(), p.at("pp").get<int>(), p.at("dp").get<int>(),
      p.at("zero").get<int>(), p.at("order").get<std::string>()));
  CHECK(run.at("step_time_s").get<double>() == doctest::Approx(best.at("step_time_s").get<double>()).epsilon(1e-6));
  // The row says how the candidate split its work between the kinds, as run splits it again: the same keys, the
  // same values.
  REQUIRE((p.contains("layers_per_stage") || p.contains("replica_micro_batches")));
  for (const char* key : {"layers_per_stage", "replica_micro_batches"}) {
    const std::string chosen = std::string("parallelism.") + key;
    CHECK(p.contains(key) == run.at("auto_chosen").contains(chosen));
    if (p.contains(key) && run.at("auto_chosen").contains(chosen)) CHECK(run.at("auto_chosen").at(chosen) == p.at(key));
  }
  // No launch is written for stages of uneven layers on two kinds.
  const auto emit = dtsim("plan " + file.string() + " --top 1 --confirm 0 --emit megatron");
  CHECK(emit.status == 2);
  CHECK_MESSAGE(emit.err.find("cluster.groups") != std::string::npos, emit.err);
}
