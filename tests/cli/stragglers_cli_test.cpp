// `reliability.stragglers`: slow GPUs and NICs played in the step, the step waiting for its slowest member, and
// which collective the others wait in.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

// H100 servers of up to 8 GPUs on InfiniBand, as many as the plan's `tp x pp x dp` needs; `extra` YAML appended.
json step(const std::string& plan, const std::string& extra, const std::string& args = "") {
  const fs::path dir = fresh_dir("stragglers", std::to_string(std::hash<std::string>{}(plan + extra + args)));
  int gpus = 1;
  for (const char* key : {"tp: ", "pp: ", "dp: "}) gpus *= std::stoi(plan.substr(plan.find(key) + 4));
  const fs::path file = written(dir, "s.yaml",
                                "name: strag\n" +
                                    fmt::format("cluster: {{gpu: h100-sxm5-80gb, nodes: {}, gpus_per_node: {}, "
                                                "intra: nvswitch, inter: fat-tree, inter_link: ib-ndr}}\n",
                                                std::max(1, gpus / 8), std::min(gpus, 8)) +
                                "model: {preset: gpt-7.5b}\n"
                                "training: {global_batch: 64, micro_batch: 2, precision: bf16, recompute: none}\n" +
                                    plan + "\n" + extra + "\n");
  const auto r = dtsim("run " + file.string() + " --format json " + args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

double wait(const json& row, const std::string& purpose) {
  const json& w = row.at("stragglers").at("waits_s");
  return w.contains(purpose) ? w.at(purpose).get<double>() : 0.0;
}

}  // namespace

TEST_CASE("stragglers: absent unless asked for, and a step with every GPU slowed is that much longer") {
  const json clean = step("parallelism: {tp: 1, pp: 1, dp: 1}", "simulation: {engine: analytic}");
  CHECK_FALSE(clean.contains("stragglers"));
  // One GPU, no communication: the step is its compute, 1.25 times as long.
  const json slow = step("parallelism: {tp: 1, pp: 1, dp: 1}", "reliability: {stragglers: {ranks: {0: 1.25}}}");
  const json& st = slow.at("stragglers");
  CHECK(st.at("slowdown").get<double>() == doctest::Approx(1.25).epsilon(1e-6));
  CHECK(st.at("clean_step_time_s").get<double>() == doctest::Approx(clean.at("step_time_s").get<double>()).epsilon(1e-6));
  CHECK(slow.at("step_time_s").get<double>() == doctest::Approx(st.at("step_time_s").get<double>()));
  CHECK(st.at("slowest_rank") == 0);
  CHECK(st.at("slowed_ranks") == 1);
}

TEST_CASE("stragglers: slow servers in every pass, or in the forward pass only as MegaScale saw them") {
  // Every server slow (share 1) on one GPU: all passes 1.2 times as long; the forward pass alone, less.
  const std::string one = "parallelism: {tp: 1, pp: 1, dp: 1}";
  const json all = step(one, "reliability: {stragglers: {slow_nodes: {share: 1, factor: 1.2, pass: all}}}");
  const json forward = step(one, "reliability: {stragglers: {slow_nodes: {share: 1, factor: 1.2, pass: forward}}}");
  CHECK(all.at("stragglers").at("slowdown").get<double>() == doctest::Approx(1.2).epsilon(1e-6));
  const double f = forward.at("stragglers").at("slowdown").get<double>();
  // Without recomputation the forward pass is about a third of the compute: between 1.05 and 1.1.
  CHECK(f > 1.05);
  CHECK(f < 1.1);
  CHECK(forward.at("stragglers").at("slowest_factor").get<double>() == doctest::Approx(1.2));
  // The analytic engine slows the same ops.
  const json analytic = step(one, "reliability: {stragglers: {slow_nodes: {share: 1, factor: 1.2, pass: forward}}}\n"
                                  "simulation: {engine: analytic}");
  CHECK(analytic.at("stragglers").at("slowdown").get<double>() == doctest::Approx(f).epsilon(1e-3));
}

TEST_CASE("stragglers: the others wait in exactly the collectives that join them to the slow rank") {
  // Data parallelism only: the other replicas wait in the gradients' reduction, and nowhere else.
  const json dp = step("parallelism: {tp: 1, pp: 1, dp: 8}", "reliability: {stragglers: {ranks: {3: 1.5}}}");
  CHECK(dp.at("stragglers").at("slowdown").get<double>() > 1.2);
  CHECK(dp.at("stragglers").at("waits_most") == "data-parallel-grads");
  CHECK(wait(dp, "data-parallel-grads") > 0.05 * dp.at("step_time_s").get<double>());
  CHECK(wait(dp, "pipeline") == doctest::Approx(0).scale(1e-6));
  CHECK(wait(dp, "tensor-parallel") == doctest::Approx(0).scale(1e-6));
  // Tensor parallelism only: the slow rank's TP peers wait in the layers' collectives; no gradient reduction.
  const json tp = step("parallelism: {tp: 8, pp: 1, dp: 1}", "reliability: {stragglers: {ranks: {3: 1.5}}}");
  CHECK(tp.at("stragglers").at("slowdown").get<double>() > 1.3);
  const std::string most = tp.at("stragglers").at("waits_most");
  CHECK((most == "tensor-parallel" || most == "sequence-parallel"));
  CHECK(wait(tp, "data-parallel-grads") == doctest::Approx(0).scale(1e-6));
  CHECK(wait(tp, "pipeline") == doctest::Approx(0).scale(1e-6));
  // A pipeline: the other stage waits for the slow one's activations and gradients.
  const json pp = step("parallelism: {tp: 1, pp: 2, dp: 1}", "reliability: {stragglers: {ranks: {0: 1.5}}}");
  CHECK(pp.at("stragglers").at("waits_most") == "pipeline");
  CHECK(wait(pp, "pipeline") > 0);
  CHECK(wait(pp, "data-parallel-grads") == doctest::Approx(0).scale(1e-6));
}

TEST_CASE("stragglers: one slow rank costs what its whole stage slowed costs (the analytic engine's reduction)") {
  // The analytic engine plays each stage at its slowest rank's speed; SimGrid plays every rank at its own. A
  // synchronous step waits for its slowest member, so the two agree.
  const std::string plan = "parallelism: {tp: 2, pp: 2, dp: 4}";
  const json one = step(plan, "reliability: {stragglers: {ranks: {5: 1.3}}}");
  // Server 0 holds ranks 0-7: stage 0 (TP varies fastest, then data parallelism, then the stage), rank 5's.
  const json whole = step(plan, "reliability: {stragglers: {nodes: {0: 1.3}}}");
  const json analytic = step(plan, "reliability: {stragglers: {ranks: {5: 1.3}}}\nsimulation: {engine: analytic}");
  CHECK(one.at("stragglers").at("played") == "every rank at its own speed");
  CHECK(analytic.at("stragglers").at("waits_s").is_null());
  const double exact = one.at("step_time_s").get<double>();
  CHECK(exact > one.at("stragglers").at("clean_step_time_s").get<double>() * 1.1);
  CHECK(analytic.at("stragglers").at("slowdown").get<double>() ==
        doctest::Approx(one.at("stragglers").at("slowdown").get<double>()).epsilon(0.03));
  CHECK(whole.at("step_time_s").get<double>() == doctest::Approx(exact).epsilon(0.03));
}

TEST_CASE("stragglers: a slow NIC slows the step that crosses it, and drawn stragglers are seeded") {
  const std::string plan = "parallelism: {tp: 8, pp: 1, dp: 2}";
  const json nic = step(plan, "reliability: {stragglers: {nics: {n1-nic0: 4}}}");
  CHECK(nic.at("stragglers").at("slowdown").get<double>() > 1.01);
  CHECK(nic.at("stragglers").at("slowed_ranks") == 0);
  const std::string drawn = "reliability: {seed: 7, stragglers: {spread: 0.05, slow_nodes: default}}";
  const json a = step(plan, drawn), b = step(plan, drawn);
  CHECK(a.at("stragglers") == b.at("stragglers"));
  CHECK(a.at("stragglers").at("slowdown").get<double>() > 1);
  // The expected slowest GPU grows with the cluster: the price of synchrony at scale.
  const json& scale = a.at("stragglers").at("expected_slowest");
  REQUIRE(scale.size() >= 4);
  for (std::size_t i = 1; i < scale.size(); ++i)
    CHECK(scale[i].at("slowest_factor").get<double>() > scale[i - 1].at("slowest_factor").get<double>());
  // MegaScale's 0.5 % of servers at 1.10 alone: the slowest of n servers is 1.10 with probability 1 - 0.995^n.
  const json slow_only = step(plan, "reliability: {stragglers: {slow_nodes: default}}");
  for (const json& row : slow_only.at("stragglers").at("expected_slowest")) {
    const double servers = row.at("gpus").get<double>() / 8;
    CHECK(row.at("slowest_factor").get<double>() ==
          doctest::Approx(1 + 0.10 * (1 - std::pow(0.995, servers))).epsilon(1e-3));
  }
}

TEST_CASE("stragglers: a rank, server or NIC the cluster lacks is a one-line error") {
  const fs::path dir = fresh_dir("stragglers", "errors");
  const std::string base =
      "name: strag\ncluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, "
      "inter_link: ib-ndr, nics_per_node: 8}\nmodel: {preset: gpt-7.5b}\n"
      "training: {global_batch: 64, micro_batch: 2}\nparallelism: {tp: 8, pp: 1, dp: 2}\n";
  const auto err = [&](const std::string& section, const std::string& expected) {
    const auto r = dtsim("run " + written(dir, "e.yaml", base + section + "\n").string());
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find(expected) != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  err("reliability: {stragglers: {ranks: {16: 1.2}}}", "reliability.stragglers.ranks: no such rank '16'");
  err("reliability: {stragglers: {nodes: {2: 1.2}}}", "a server from 0 to 1");
  err("reliability: {stragglers: {nics: {n9-nic0: 2}}}", "reliability.stragglers.nics: no such NIC 'n9-nic0'");
  err("reliability: {stragglers: {nics: {n0-gpu0: 2}}}", "n0-nic0 ... n1-nic7");
  err("reliability: {stragglers: {ranks: {0: 0.5}}}", "reliability.stragglers.ranks.0");
  err("reliability: {stragglers: {ranks: {x: 1.5}}}", "is not a rank");
  err("reliability: {stragglers: {slow_nodes: often}}", "reliability.stragglers.slow_nodes");
  err("reliability: {stragglers: {slow_nodes: {share: 0.1}}}", "reliability.stragglers.slow_nodes.factor");
}
