// `dtsim graph`: the step graph of a scenario through the program.
#include "cli/cli_support.hpp"

using namespace cli_support;

namespace {

// Megatron-LM's FLOPs per iteration without recompute (Narayanan et al., SC'21): 72 B s l h^2 (1 + s/6h + V/12lh).
double megatron_flops(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

}  // namespace

TEST_CASE("graph: JSON per rank class, and FLOPs that match Megatron's closed form") {
  const auto r = dtsim("graph " + src("scenarios/models/gpt-22b-tp8.yaml") +
                       " --set training.sequence_parallel=false --set training.recompute=none --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("ranks") == 8);
  REQUIRE(j.at("classes").size() == 1);
  const auto& c = j.at("classes")[0];
  CHECK(c.at("ranks") == 8);
  CHECK(c.at("sends") == 0);
  const int mb = j.at("micro_batches");
  const double B = mb * 4.0;   // the scenario's micro-batch is 4 (Korthikanti et al.'s 22B runs)
  CHECK(j.at("model_flops").get<double>() == doctest::Approx(megatron_flops(B, 2048, 48, 6144, 51200)).epsilon(1e-12));
  CHECK(j.at("hardware_flops") == j.at("model_flops"));
  bool tp_all_reduce = false;
  for (const auto& k : c.at("collectives"))
    if (k.at("kind") == "all-reduce" && k.at("group") == "tp") tp_all_reduce = k.at("count") == mb * 48 * 4;
  CHECK(tp_all_reduce);
  CHECK(j.at("compute_only_step_s").get<double>() > 0);
  CHECK(j.at("bubble_fraction").get<double>() == doctest::Approx(0.0));
}

TEST_CASE("graph: a pipeline shows its bubble, --dot writes the graph") {
  const fs::path dot = fs::temp_directory_path() / ("dtsim_graph_" + std::to_string(::getpid()) + ".dot");
  const auto r = dtsim("graph " + src("scenarios/models/custom-1.4b-4xa100-ring.yaml") +
                       " --set parallelism.pp=4 --set training.global_batch=16 --set training.micro_batch=4 --dot " +
                       dot.string());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("4 rank classes") != std::string::npos);
  CHECK(r.out.find("bubble") != std::string::npos);
  const std::string text = slurp(dot);
  CHECK(text.starts_with("digraph step {"));
  CHECK(text.find("style=dashed") != std::string::npos);   // send -> recv between stages
  fs::remove(dot);
}

TEST_CASE("graph refuses a serving scenario and a plan that breaks a rule: exit 2, one line") {
  auto r = dtsim("graph " + src("scenarios/claims/s07-llama-7b-128k-kv-cache.yaml"));
  CHECK(r.status == 2);
  CHECK(r.err.find("training") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  r = dtsim("graph " + src("scenarios/models/gpt-22b-tp8.yaml") + " --set parallelism.tp=3");
  CHECK(r.status == 2);
  CHECK(r.err.find("parallelism") != std::string::npos);
}
