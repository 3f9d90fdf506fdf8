// `dtsim plan` on serving scenarios: the split of the GPUs into tp x pp x dp replicas, ranked by latency or cost
// (`--emit`, the launch it writes: serving_plan_emit_cli_test.cpp).
#include <map>
#include <string>
#include <vector>

#include "cli/serving_plan_support.hpp"

using namespace serving_plan_support;
using nlohmann::json;

TEST_CASE("plan on a serving scenario: every split of the GPUs the scenario leaves open, ranked, the batch kept whole") {
  const fs::path dir = fresh_dir("plan", "serving-search");
  // Llama-2-70B in bf16 on 8 H100: tp 1 cannot hold it; the 256 sequences (32 a replica at the default dp 8) stay
  // 256 in every split.
  const fs::path s = written(dir, "s.yaml",
                           "name: l70\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                           "model: {preset: llama2-70b}\n"
                           "inference: {batch: 32, prompt_tokens: 1024, output_tokens: 256}\n"
                           "simulation: {engine: analytic}\n");
  const auto r = dtsim("plan " + s.string() + " --top 20 --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json j = json::parse(r.out);
  CHECK(j["serving"] == true);
  CHECK(j["candidates"] == 10);   // (tp, pp) with tp x pp dividing 8: 1x1 ... 8x1
  const json& plans = j["plans"];
  REQUIRE(plans.size() == 9);      // all but tp 1 pp 1 (70B of bf16 weights on one 80 GB GPU)
  CHECK(j["pruned"].at("does not fit in memory") == 1);
  double last = 0;
  for (const json& p : plans) {
    const int tp = p["parallelism"]["tp"], pp = p["parallelism"]["pp"], dp = p["parallelism"]["dp"];
    CHECK(tp * pp * dp == 8);
    CHECK(p["inference"]["batch"].get<int>() * dp == 256);
    CHECK(p["objective_value"].get<double>() == doctest::Approx(p["request_time_s"].get<double>()));
    CHECK(p["objective_value"].get<double>() >= last);   // best first
    last = p["objective_value"];
    CHECK(p["fits"] == true);
  }
  // The ranking is run's own figures: the best plan run by hand gives the same request time.
  const json& best = plans[0];
  const auto by_hand = dtsim(fmt::format("run {} --format json --set parallelism.tp={} --set parallelism.pp={} "
                                         "--set parallelism.dp={} --set inference.batch={}",
                                         s.string(), best["parallelism"]["tp"].get<int>(), best["parallelism"]["pp"].get<int>(),
                                         best["parallelism"]["dp"].get<int>(), best["inference"]["batch"].get<int>()));
  REQUIRE_MESSAGE(by_hand.status == 0, by_hand.err);
  const json hand = json::parse(by_hand.out);
  CHECK(hand["request_time_s"].get<double>() == doctest::Approx(best["request_time_s"].get<double>()));
  // Energy and cost too: the candidate is the scenario as given (the GPU's idle power kept through its YAML).
  CHECK(hand["energy"]["per_token_J"].get<double>() == doctest::Approx(best["energy"]["per_token_J"].get<double>()));
  CHECK(hand["cost"]["usd_per_million_tokens"].get<double>() ==
        doctest::Approx(best["cost"]["usd_per_million_tokens"].get<double>()));
  // --objective energy ranks by the facility's joules a token, and agrees with run on every row.
  const json e = json::parse(dtsim("plan " + s.string() + " --top 20 --objective energy --format json").out);
  last = 0;
  for (const json& p : e["plans"]) {
    CHECK(p["objective_value"].get<double>() == doctest::Approx(p["energy"]["per_token_J"].get<double>()));
    CHECK(p["objective_value"].get<double>() >= last);
    last = p["objective_value"];
  }
  // On SimGrid (the scenario's engine when not given), --confirm 1 runs the best again there.
  const fs::path sg = written(dir, "sg.yaml", kServedBatch70b);
  const json confirmed = json::parse(dtsim("plan " + sg.string() + " --confirm 1 --format json").out);
  CHECK(confirmed["plans"][0]["confirmed"] == true);
  CHECK(confirmed["plans"][0]["engine"] == "simgrid");
  // A degree the scenario gives is kept: tp 8 leaves one split.
  const fs::path given = written(dir, "given.yaml", std::string(kServedBatch70b) + "simulation: {engine: analytic}\n");
  const json one = json::parse(dtsim("plan " + given.string() + " --format json").out);
  CHECK(one["candidates"] == 1);
  CHECK(one["plans"][0]["parallelism"]["tp"] == 8);
  // The table names the search and its columns; CSV has a row a plan.
  const auto text = dtsim("plan " + s.string() + " --top 3");
  CHECK(text.out.find("l70: 10 splits of 8 GPUs into tp x pp x dp, 9 served, 1 dropped (most: does not fit in memory (1))") !=
        std::string::npos);
  const auto csv = dtsim("plan " + s.string() + " --top 3 --format csv");
  CHECK(csv.out.starts_with("name,rank,tp,pp,dp,batch,"));
  CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 4);
  fs::remove_all(dir);
}

TEST_CASE("plan on serving scenarios: odd GPU counts, degrees that leave nothing, mixed files") {
  const fs::path dir = fresh_dir("plan", "serving-odd");
  // 3 GPUs: tp 1, pp 1 or 3, dp the rest; tp 3 does not divide Llama-3-8B's 32 heads.
  const fs::path three = written(dir, "three.yaml",
                                      "name: l8\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 3, intra: nvswitch}\n"
                                      "model: {preset: llama3-8b}\n"
                                      "inference: {batch: 4, prompt_tokens: 512, output_tokens: 64}\n"
                                      "simulation: {engine: analytic}\n");
  const auto r = dtsim("plan " + three.string() + " --top 5 --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json j = json::parse(r.out);
  CHECK(j["candidates"] == 3);
  CHECK(j["plans"].size() == 2);
  std::size_t heads = 0;
  for (const auto& [why, n] : j["pruned"].items())
    if (why.starts_with("parallelism.tp")) heads += n.get<std::size_t>();
  CHECK(heads == 1);
  // Degrees given whose product is not the GPU count leave nothing to search: one line, 2.
  const fs::path none = written(dir, "none.yaml", std::string(kServedBatch70b) + "simulation: {engine: analytic}\n");
  const auto nothing = dtsim("plan " + none.string() + " --set parallelism.tp=2 --set parallelism.pp=2 --set parallelism.dp=4");
  CHECK(nothing.status == 2);
  CHECK(std::count(nothing.err.begin(), nothing.err.end(), '\n') == 1);
  // Training and serving points in one file: one line, 2, before any search.
  const fs::path mixed = written(dir, "mixed.yaml",
                                      "name: t\ncluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                                      "model: {preset: gpt-1.7b}\ntraining: {global_batch: 32}\n---\n" +
                                          std::string(kServedBatch70b));
  const auto mix = dtsim("plan " + mixed.string() + " --format csv");
  CHECK(mix.status == 2);
  CHECK(mix.err.find("mixes serving and training points") != std::string::npos);
  CHECK(std::count(mix.err.begin(), mix.err.end(), '\n') == 1);
  fs::remove_all(dir);
}

TEST_CASE("plan on a request stream: ranked by the median end-to-end latency or the cost of the tokens served") {
  const fs::path dir = fresh_dir("plan", "serving-stream");
  const fs::path s = written(dir, "s.yaml",
                           "name: l8\ncluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                           "model: {preset: llama3-8b}\n"
                           "inference:\n  requests: {rate_per_s: 10, duration_s: 30, prompt_tokens: 512, output_tokens: 128}\n");
  const json j = json::parse(dtsim("plan " + s.string() + " --top 20 --format json").out);
  REQUIRE(j["plans"].size() == 10);
  double last = 0;
  for (const json& p : j["plans"]) {
    CHECK(p["objective_value"].get<double>() == doctest::Approx(p["p50_latency_s"].get<double>()));
    CHECK(p["objective_value"].get<double>() >= last);
    last = p["objective_value"];
  }
  // Cost a token is the stream's: the GPUs' hour over the tokens served, the same hour for every split of the 8.
  const json c = json::parse(dtsim("plan " + s.string() + " --top 20 --objective cost --format json").out);
  for (const json& p : c["plans"]) {
    const double hour = p["cost"]["usd_per_hour"];
    const double served = p["throughput_tokens_per_s"];
    CHECK(p["cost"]["usd_per_million_tokens"].get<double>() == doctest::Approx(hour / (served * 3600) * 1e6).epsilon(0.02));
  }
  // Energy is not modelled for a stream: the one-line error.
  const auto energy = dtsim("plan " + s.string() + " --objective energy");
  CHECK(energy.status == 2);
  CHECK(energy.err.find("--objective") != std::string::npos);
  CHECK(std::count(energy.err.begin(), energy.err.end(), '\n') == 1);
  fs::remove_all(dir);
}

