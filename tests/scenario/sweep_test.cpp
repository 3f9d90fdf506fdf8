// `sweep:` axes, `simulation` and `reference` sections in the scenario loader.
#include <doctest/doctest.h>

#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

using namespace dtsim;
using namespace dtsim::scenario;

namespace {

const char* kBase = "name: base\ncluster: {gpu: a100-sxm4-80gb}\nmodel: {preset: gpt3-175b}\n"
                    "training: {global_batch: 16}\nparallelism: {tp: 8}\n";

std::string sweep_error(const std::string& text, const std::vector<Override>& o = {}) {
  try {
    load_scenarios(text, "s.yaml", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cartesian axes: first axis outermost, every point named after its values") {
  const auto all = load_scenarios(std::string(kBase) + "sweep:\n  cluster.intra: [nvswitch, ring]\n"
                                                       "  training.micro_batch: [1, 2, 4]\n", "s.yaml");
  REQUIRE(all.size() == 6);
  CHECK(all[0].name == "base[intra=nvswitch,micro_batch=1]");
  CHECK(all[1].cluster.intra == topology::IntraKind::NvSwitch);
  CHECK(all[1].workload->training->micro_batch == 2);
  CHECK(all[3].cluster.intra == topology::IntraKind::Ring);
  CHECK(all[3].workload->training->micro_batch == 1);
  for (int i = 0; i < 6; ++i) CHECK(all[static_cast<std::size_t>(i)].point.index == i);
  CHECK(all[5].point.values == std::vector<std::pair<std::string, std::string>>{{"cluster.intra", "ring"},
                                                                               {"training.micro_batch", "4"}});
}

TEST_CASE("zipped axes advance together, a value may be a whole map, the point's name can be swept") {
  const auto all = load_scenarios(std::string(kBase) +
                                      "sweep:\n  zip:\n    name: [a, b]\n"
                                      "    cluster: [{gpu: a100-sxm4-80gb, intra: star}, {gpu: a100-pcie-80gb, intra: pcie}]\n"
                                      "    reference.scaling_efficiency: [0.9, null]\n",
                                  "s.yaml");
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "a");
  CHECK(all[0].cluster.intra == topology::IntraKind::Star);
  CHECK(all[0].reference.values.at("scaling_efficiency") == 0.9);
  CHECK(all[1].name == "b");
  CHECK(all[1].cluster.gpu.name == "a100-pcie-80gb");
  CHECK(all[1].reference.values.empty());   // null leaves the figure out
}

TEST_CASE("a document without sweep is one point with no index") {
  const auto all = load_scenarios(kBase, "s.yaml");
  REQUIRE(all.size() == 1);
  CHECK(all[0].point.index == -1);
  CHECK(all[0].simulation.engine == EngineKind::Simgrid);
  CHECK(all[0].simulation.collective_algo == sim::Algorithm::Auto);
}

TEST_CASE("simulation and reference sections are read strictly") {
  const auto s = load_scenarios(std::string(kBase) + "simulation: {engine: analytic, collective_algo: ring, granularity: kernel}\n"
                                                     "reference: {source: paper, step_time_s: 1.5}\n", "s.yaml")[0];
  CHECK(s.simulation.engine == EngineKind::Analytic);
  CHECK(s.simulation.collective_algo == sim::Algorithm::Ring);
  CHECK(s.simulation.granularity == workloads::Granularity::Kernel);
  CHECK(s.reference.source == "paper");
  CHECK(s.reference.values.at("step_time_s") == 1.5);
  CHECK(sweep_error(std::string(kBase) + "simulation: {engine: ns3}\n").find("simulation.engine") != std::string::npos);
  CHECK(sweep_error(std::string(kBase) + "simulation: {collective_algo: magic}\n").find("hierarchical") != std::string::npos);
  CHECK(sweep_error(std::string(kBase) + "reference: {speed: 3}\n").find("reference.speed") != std::string::npos);
}

TEST_CASE("sweep errors: empty axes, unequal zips, bad values at their line, --set on a swept key") {
  CHECK(sweep_error(std::string(kBase) + "sweep: {cluster.intra: []}\n").find("non-empty list") != std::string::npos);
  CHECK(sweep_error(std::string(kBase) + "sweep: {zip: {name: [a, b], cluster.nodes: [1]}}\n").find("same length") != std::string::npos);
  const auto bad = sweep_error(std::string(kBase) + "sweep:\n  cluster.intra: [nvswitch, torus]\n");
  CHECK(bad.find("s.yaml:") == 0);
  CHECK(bad.find("torus") != std::string::npos);
  const auto clash = sweep_error(std::string(kBase) + "sweep: {cluster.intra: [ring]}\n", {{"cluster.intra", "star"}});
  CHECK(clash.find("sweep") != std::string::npos);
  CHECK(clash.find("--set") != std::string::npos);
}

TEST_CASE("the resolved scenario of a point carries its simulation and reference and loads back") {
  const auto s = load_scenarios(std::string(kBase) + "reference: {source: article, scaling_efficiency: 0.92}\n", "s.yaml")[0];
  const auto again = load_scenarios(to_yaml(s), "resolved.yaml")[0];
  CHECK(again.reference.values == s.reference.values);
  CHECK(again.reference.source == "article");
  CHECK(to_yaml(again) == to_yaml(s));
}

TEST_CASE("the default scenario is the article's headline sweep: six configurations of GPT-3 175B at TP 8") {
  const auto all = load_scenarios(default_scenario_text(), "<default scenario>");
  REQUIRE(all.size() == 6);
  CHECK(all[0].name == "8xa100-nvswitch");
  CHECK(all[4].cluster.intra == topology::IntraKind::Pcie);
  CHECK(all[5].cluster.nodes == 8);
  for (const auto& s : all) {
    CHECK(s.workload->model.name == "gpt3-175b");
    CHECK(s.workload->plan.tp == 8);
    CHECK(s.workload->training->global_batch == 16);
    CHECK(s.workload->training->recompute == workloads::Recompute::Full);
  }
  CHECK(all[0].reference.values.at("scaling_efficiency") == 0.92);
  CHECK(all[5].reference.values.at("scaling_efficiency") == 0.45);
}
