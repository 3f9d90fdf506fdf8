// The scenario loader: strict parsing into plain structs, defaults, overrides, and the resolved YAML; the cluster
// and simulation sections here, the job's (model, training, inference, parallelism) in workload_reader_test.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <filesystem>

#include "results/catalog_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"
#include "scenario/scenario_support.hpp"

using namespace dtsim;
using namespace dtsim::scenario;
using namespace dtsim::scenario::test;

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

TEST_CASE("cluster.inter_link: the NIC the GPU's reference system gives it, unless written") {
  const auto nic = [](const std::string& cluster) { return load_one("cluster: " + cluster).cluster.inter_link.name; };
  CHECK(nic("{gpu: a100-sxm4-80gb, nodes: 2, inter: fat-tree}") == "ib-hdr");   // DGX A100: ConnectX-6 HDR
  CHECK(nic("{gpu: h100-sxm5-80gb, nodes: 2, inter: fat-tree}") == "ib-ndr");   // DGX H100: ConnectX-7 NDR
  CHECK(nic("{gpu: v100-sxm2-32gb, nodes: 2, inter: fat-tree}") == "ib-edr");
  CHECK(nic("{gpu: gb300, nodes: 2, inter: fat-tree}") == "ib-xdr");
  CHECK(nic("{gpu: l40s, nodes: 2, inter: switch}") == topology::kDefaultInterLink);   // a PCIe card names none
  CHECK(nic("{gpu: h100-sxm5-80gb, nodes: 2, inter: fat-tree, inter_link: ib-hdr}") == "ib-hdr");   // written wins
  // A GPU of the scenario's own: its scale_out_link, its base's, or the default.
  CHECK(nic("{gpu: {base: h100-sxm5-80gb, name: mine}, nodes: 2, inter: switch}") == "ib-ndr");
  CHECK(nic("{gpu: {base: a100-sxm4-80gb, name: mine, scale_out_link: eth-400g}, nodes: 2, inter: switch}") ==
        "eth-400g");
  CHECK_THROWS_WITH_AS(nic("{gpu: {base: a100-sxm4-80gb, name: mine, scale_out_link: ib-nope}}"),
                       doctest::Contains("cluster.gpu.scale_out_link: unknown link 'ib-nope'"), InputError);
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
  CHECK(back.cluster.routing == topology::Routing::DModK);   // ecmp: true over InfiniBand is D-mod-K
  CHECK(yaml.find("routing: dmodk") != std::string::npos);
  CHECK(yaml.find("ecmp") == std::string::npos);
  // What the YAML does not show still comes back: a GPU's idle power (the energy of every waiting rank) and an
  // NVLink switch's NVLS port rate (NVL72's all-reduce); a plan's candidates are loaded from this text.
  Scenario rack = load_one("name: nvl72\ncluster: {preset: gb200-nvl72}\n");
  REQUIRE(rack.cluster.gpu.idle_power.value() > 0);
  REQUIRE(rack.cluster.intra_link.switch_port_rate.value() > 0);
  Scenario rack_back = load_one(to_yaml(rack));
  CHECK(rack_back.cluster.gpu.idle_power == rack.cluster.gpu.idle_power);
  CHECK(rack_back.cluster.intra_link.switch_port_rate.value() ==
        doctest::Approx(rack.cluster.intra_link.switch_port_rate.value()));
  CHECK(back.cluster.gpu.idle_power == s.cluster.gpu.idle_power);
}

TEST_CASE("cluster.routing: the fabric's default unless named, and ecmp its old name") {
  const auto routing = [](const std::string& cluster) { return load_one("cluster: " + cluster).cluster.routing; };
  const std::string ib = "{gpu: h100-sxm5-80gb, nodes: 8, inter: fat-tree, inter_link: ib-ndr";
  const std::string eth = "{gpu: h100-sxm5-80gb, nodes: 8, inter: fat-tree, inter_link: eth-400g";
  CHECK(routing(ib + "}") == topology::Routing::DModK);
  CHECK(routing(eth + "}") == topology::Routing::Ecmp);
  // Omni-Path's fabric manager programs destination tables as InfiniBand's does; TCP over Ethernet hashes.
  CHECK(routing("{gpu: a100-pcie-80gb, nodes: 8, inter: fat-tree, inter_link: opa-100}") == topology::Routing::DModK);
  CHECK(routing("{gpu: a100-pcie-80gb, nodes: 8, inter: fat-tree, inter_link: eth-25g-tcp}") == topology::Routing::Ecmp);
  CHECK(routing(ib + ", ecmp: true}") == topology::Routing::DModK);
  CHECK(routing(eth + ", ecmp: true}") == topology::Routing::Ecmp);
  CHECK(routing(ib + ", ecmp: false}") == topology::Routing::Single);
  CHECK(routing(eth + ", routing: adaptive}") == topology::Routing::Adaptive);
  CHECK(routing(ib + ", routing: ecmp}") == topology::Routing::Ecmp);
  CHECK(routing("{gpu: h100-sxm5-80gb}") == topology::Routing::Single);   // one NVSwitch: one path per pair
  CHECK(routing("{preset: dgx-h100, nodes: 64}") == topology::Routing::DModK);
  CHECK(routing("{preset: dgx-h100, nodes: 64}") == routing("{preset: dgx-h100, nodes: 64, routing: dmodk}"));
  CHECK_THROWS_WITH_AS(load_one("cluster: " + ib + ", routing: hash}"),
                       "test.yaml:1: cluster.routing: unknown value 'hash' (allowed: single, ecmp, dmodk, adaptive)",
                       InputError);
  CHECK_THROWS_WITH_AS(load_one("cluster: " + ib + ", routing: [ecmp]}"),
                       doctest::Contains("cluster.routing: expected a single value"), InputError);
  CHECK_THROWS_WITH_AS(load_one("cluster: " + ib + ", routing: single, ecmp: true}"),
                       doctest::Contains("cluster.ecmp: is cluster.routing's old name and cannot be given beside it"), InputError);
  // The resolved scenario names what was used, and loads back to it.
  const Scenario s = load_one("cluster: " + eth + ", routing: adaptive}");
  CHECK(to_yaml(s).find("routing: adaptive") != std::string::npos);
  CHECK(load_one(to_yaml(s)).cluster.routing == topology::Routing::Adaptive);
}

TEST_CASE("cluster presets fill in the machine, the keys given beside them win, unknown names list the presets") {
  const Scenario h = load_one("cluster: {preset: dgx-h100, nodes: 8}");
  CHECK(h.cluster.gpu.name == "h100-sxm5-80gb");
  CHECK(h.cluster.gpus() == 64);
  CHECK(h.cluster.intra == topology::IntraKind::NvSwitch);
  CHECK(h.cluster.inter == topology::InterKind::FatTree);
  CHECK(h.cluster.inter_link.name == "ib-ndr");
  CHECK(h.cluster.nics_per_node == 8);
  CHECK(h.cluster.routing == topology::Routing::DModK);
  const Scenario a = load_one("cluster: {preset: dgx-a100, nodes: 2, inter_link: ib-ndr, ecmp: false}");
  CHECK(a.cluster.gpu.name == "a100-sxm4-80gb");
  CHECK(a.cluster.inter_link.name == "ib-ndr");
  CHECK(a.cluster.routing == topology::Routing::Single);
  const Scenario pcie = load_one("cluster: {preset: pcie-8xa100}");
  CHECK(pcie.cluster.intra == topology::IntraKind::Pcie);
  CHECK(pcie.cluster.pcie.gpus_per_switch == 2);
  const Scenario eth = load_one("cluster: {preset: ethernet-100g, nodes: 8}");
  CHECK(eth.cluster.inter_link.name == "eth-100g");
  CHECK(eth.cluster.gpus() == 8);
  // --set reaches the preset too, and the resolved scenario is the machine in full (no preset key), loading back.
  const Scenario set = load_one("cluster: {preset: dgx-a100}", {{"cluster.preset", "dgx-h100"}});
  CHECK(set.cluster.gpu.name == "h100-sxm5-80gb");
  const std::string yaml = to_yaml(h);
  CHECK(yaml.find("preset") == std::string::npos);
  CHECK(to_yaml(load_one(yaml)) == yaml);
  CHECK_THROWS_WITH_AS(load_one("cluster:\n  preset: dgx-z\n"),
                       "test.yaml:2: cluster.preset: unknown cluster preset 'dgx-z' "
                       "(allowed: dgx-a100, dgx-h100, pcie-8xa100, dgx-b200, gb200-nvl72, gb300-nvl72, ethernet-100g)",
                       InputError);
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

TEST_CASE("a topology-only scenario has no workload") {
  CHECK_FALSE(load_one("cluster: {gpu: t4}").workload.has_value());
}

TEST_CASE("simulation.memoize: on by default, read, overridden, written back, strict") {
  CHECK(load_one(kLlamaTp8).simulation.memoize);
  const Scenario off = load_one(std::string(kLlamaTp8) + "simulation: {memoize: false}\n");
  CHECK_FALSE(off.simulation.memoize);
  CHECK(to_yaml(off).find("memoize: false") != std::string::npos);
  CHECK_FALSE(load_one(to_yaml(off)).simulation.memoize);
  CHECK_FALSE(load_one(kLlamaTp8, {{"simulation.memoize", "false"}}).simulation.memoize);
  CHECK(error_of(std::string(kLlamaTp8) + "simulation: {memoize: sometimes}\n")
            .find("simulation.memoize: not a boolean 'sometimes'") != std::string::npos);
}

TEST_CASE("simulation.max_channels: 0 (one ring per GPU of a node) by default, read, written back, range-checked") {
  CHECK(load_one(kLlamaTp8).simulation.max_channels == 0);
  const Scenario one = load_one(std::string(kLlamaTp8) + "simulation: {max_channels: 1}\n");
  CHECK(one.simulation.max_channels == 1);
  CHECK(to_yaml(one).find("max_channels: 1") != std::string::npos);
  CHECK(load_one(to_yaml(one)).simulation.max_channels == 1);
  CHECK(load_one(kLlamaTp8, {{"simulation.max_channels", "4"}}).simulation.max_channels == 4);
  for (const char* bad : {"-1", "65", "two", "1.5"}) {
    CAPTURE(bad);
    CHECK(error_of(kLlamaTp8, {{"simulation.max_channels", bad}}).find("simulation.max_channels") != std::string::npos);
  }
}

TEST_CASE("every scenario shipped in scenarios/ loads, those under models/ bench/ validation/ pass the plan checks") {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(DTSIM_SOURCE_DIR) / "scenarios"))
    // Not scenarios: user topology graphs, and the claim list of `dtsim claims` (tested by claims_cli_test).
    if (e.path().extension() == ".yaml" && e.path().parent_path().filename() != "graphs" &&
        e.path().filename() != "claims.yaml")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int models = 0;
  for (const auto& f : files) {
    CAPTURE(f.string());
    std::vector<Scenario> all;
    REQUIRE_NOTHROW(all = load_scenario_file(f.string()));
    CHECK_FALSE(all.empty());
    const std::string dir = f.parent_path().filename().string();
    if (dir != "models" && dir != "bench" && dir != "validation") continue;
    std::set<std::string> baselines;   // rows other rows quote ratios to
    for (const auto& s : all)
      if (!s.reference.baseline.empty()) baselines.insert(s.reference.baseline);
    for (const auto& s : all) {
      REQUIRE(s.workload.has_value());
      CHECK_NOTHROW(workloads::check_plan(*s.workload, s.cluster.gpus()));
      if (dir != "validation") continue;
      CAPTURE(s.name);
      if (s.reference.values.empty()) CHECK(baselines.count(s.name) == 1);   // a baseline only
      else if (!s.reference.baseline.empty()) CHECK(s.reference.values.size() == 1);   // one published ratio
      else if (s.workload->inference && s.workload->inference->requests) {   // a served stream: what it publishes of
        std::size_t published = 0;                                        // its three figures, and nothing else
        for (const char* key : {"mean_ttft_ms", "mean_tpot_ms", "throughput_tokens_per_s"})
          published += s.reference.values.count(key);
        CHECK(published >= 1);
        CHECK(published == s.reference.values.size());
      } else {   // one published figure: TFLOP/s or tokens/s per GPU, the step time; serving: a latency
        int published = 0;
        for (const char* key : {"hw_tflops_per_gpu", "tflops_per_gpu", "tokens_per_s_per_gpu", "step_time_s", "ttft_ms",
                                "tpot_ms", "request_time_ms"})
          published += static_cast<int>(s.reference.values.count(key));
        CHECK(published == 1);
      }
    }
    ++models;
  }
  CHECK(files.size() >= 10);
  CHECK(models >= 4);
}

TEST_CASE("the catalog lists the model presets, as a table and as JSON") {
  const std::string table = results::catalog_table();
  CHECK(table.find("model presets") != std::string::npos);
  CHECK(table.find(" params_B  active_B layers hidden heads kv_heads") != std::string::npos);
  CHECK(table.find("llama2-70b                68.977    68.977     80   8192    64        8   28672   32000   4096 "
                   "swiglu     -\n") != std::string::npos);
  CHECK(table.find("mixtral-8x7b              46.703    12.880     32   4096    32        8   14336   32000  32768 "
                   "swiglu     8 x 14336, top-2\n") != std::string::npos);
  const auto json = results::catalog_json();
  REQUIRE(json.at("models").size() == workloads::model_presets().size());
  const auto& gpt3 = json.at("models").at(0);
  CHECK(gpt3.at("name") == "gpt3-175b");
  CHECK(gpt3.at("params_B").get<double>() == doctest::Approx(174.6).epsilon(1e-3));
  CHECK(gpt3.at("params").get<std::int64_t>() == 174'615'846'912);
  CHECK(gpt3.at("active_params_B") == gpt3.at("params_B"));
  for (const auto& m : json.at("models"))
    if (m.at("name") == "deepseek-v3") {
      CHECK(m.at("experts") == 256);
      CHECK(m.at("shared_experts") == 1);
      CHECK(m.at("active_params_B").get<double>() == doctest::Approx(37.5).epsilon(0.02));
    }
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_length", "activation",
                          "norm", "positions", "tied_embeddings", "bias", "source"})
    CHECK(gpt3.contains(key));
  CHECK(gpt3.at("activation") == "gelu");
}
