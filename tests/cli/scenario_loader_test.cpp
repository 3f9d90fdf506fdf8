// The scenario loader: strict parsing into plain structs, defaults, overrides, and the resolved YAML.
#include <doctest/doctest.h>

#include "sim/cli/scenario.hpp"
#include "topology/error.hpp"

using namespace dtsim;
using namespace dtsim::cli;

namespace {
Scenario load_one(const std::string& text, const std::vector<Override>& o = {}) {
  auto all = load_scenarios(text, "test.yaml", o);
  REQUIRE(all.size() == 1);
  return all.front();
}
}  // namespace

TEST_CASE("a minimal cluster gets the documented defaults") {
  Scenario s = load_one("cluster: {gpu: a100-sxm4-80gb}");
  CHECK(s.name == "test");
  CHECK(s.cluster.nodes == 1);
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.cluster.intra == topology::IntraKind::NvSwitch);
  CHECK(s.cluster.intra_link.name == "nvlink3");
  CHECK(s.cluster.effective_links_per_gpu() == 12);
  CHECK(s.cluster.inter == topology::InterKind::None);
  CHECK(s.cluster.nic_link.name == "pcie4");
  CHECK(to_gigabytes_per_second(s.cluster.gpu_budget()) == doctest::Approx(300));
}

TEST_CASE("a PCIe card on a pcie layout uses its slot generation") {
  Scenario s = load_one("cluster: {gpu: h100-pcie-80gb, intra: pcie}");
  CHECK(s.cluster.intra_link.name == "pcie5");
  CHECK(to_gigabytes_per_second(s.cluster.gpu_budget()) == doctest::Approx(63));
}

TEST_CASE("inline hardware: a GPU from a base entry, a link in Gb/s") {
  Scenario s = load_one(R"(
cluster:
  gpu: {base: a100-sxm4-80gb, name: a100-slow-hbm, memory_bandwidth_GBps: 1000, peak_TFLOPS: {bf16: 200}}
  nodes: 2
  inter: switch
  inter_link: {name: my-nic, family: ethernet, bandwidth_Gbps: 800, latency_us: 1.5, efficiency: 0.9}
)");
  CHECK(s.cluster.gpu.name == "a100-slow-hbm");
  CHECK(to_gigabytes_per_second(s.cluster.gpu.memory_bandwidth) == doctest::Approx(1000));
  CHECK(to_teraflops(*s.cluster.gpu.peak_for(topology::Precision::Bf16)) == doctest::Approx(200));
  CHECK(to_teraflops(*s.cluster.gpu.peak_for(topology::Precision::Tf32)) == doctest::Approx(156));   // from the base
  CHECK(s.cluster.inter_link.bandwidth.value() == doctest::Approx(100e9));   // 800 Gb/s = 100 GB/s
  CHECK(s.cluster.inter_link.family == topology::LinkFamily::Ethernet);
}

TEST_CASE("overrides replace keys and are located as --set") {
  Scenario s = load_one("cluster: {gpu: a100-sxm4-80gb}", {{"cluster.intra", "ring"}, {"name", "renamed"}});
  CHECK(s.cluster.intra == topology::IntraKind::Ring);
  CHECK(s.name == "renamed");
  CHECK(locate(s, "cluster.intra") == "--set");
  CHECK(locate(s, "cluster.gpu") == "test.yaml:1");
  CHECK_THROWS_WITH_AS(load_one("cluster: {gpu: a100-sxm4-80gb}", {{"cluster.nodes", "-1"}}),
                       "--set: cluster.nodes: out of range '-1' (allowed: an integer in [1, 1000000])", InputError);
}

TEST_CASE("several documents are several scenarios, named after the file when unnamed") {
  auto all = load_scenarios("cluster: {gpu: t4}\n---\ncluster: {gpu: v100-sxm2-32gb}\n", "dir/pair.yaml");
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "pair");
  CHECK(all[1].name == "pair-1");
}

TEST_CASE("the resolved scenario loads back to the same scenario") {
  Scenario s = load_one(R"(
name: rt
cluster: {gpu: h100-sxm5-80gb, nodes: 4, gpus_per_node: 8, inter: fat-tree, inter_link: ib-ndr,
          oversubscription: 2, fabric: {leaf_ports: 16}, ecmp: true})");
  const std::string yaml = to_yaml(s);
  Scenario back = load_one(yaml);
  CHECK(to_yaml(back) == yaml);
  CHECK(back.cluster.gpu.name == "h100-sxm5-80gb");
  CHECK(back.cluster.gpu.memory == s.cluster.gpu.memory);
  CHECK(back.cluster.gpu_budget() == s.cluster.gpu_budget());
  CHECK(back.cluster.inter_link.bandwidth == s.cluster.inter_link.bandwidth);
  CHECK(back.cluster.oversubscription == 2.0);
  CHECK(back.cluster.fabric.spines == 16);
  CHECK(back.cluster.ecmp);
}

TEST_CASE("strictness: unknown keys, wrong types, missing sections") {
  CHECK_THROWS_WITH_AS(load_one("cluster: {gpu: t4, ecmp: maybe}"), doctest::Contains("cluster.ecmp: not a boolean 'maybe'"), InputError);
  CHECK_THROWS_WITH_AS(load_one("name: x"), doctest::Contains("cluster: missing required section"), InputError);
  CHECK_THROWS_WITH_AS(load_one("cluster: {gpu: [t4]}"), doctest::Contains("cluster.gpu: expected a single value"), InputError);
  CHECK_THROWS_WITH_AS(load_one("cluster: {gpu: t4, pcie: {sockets: 3}}"), doctest::Contains("cluster.pcie.sockets: out of range '3'"), InputError);
  CHECK_THROWS_WITH_AS(load_one("cluster: {gpu: t4, fabric: {leaves: 3}}"), doctest::Contains("cluster.fabric.leaves: unknown key"), InputError);
  CHECK_THROWS_WITH_AS(load_one("cluster: {gpu: t4, oversubscription: 0}"), doctest::Contains("test.yaml:1: cluster.oversubscription: out of range"), InputError);
  CHECK_THROWS_AS(load_scenarios("", "empty.yaml"), InputError);
}
