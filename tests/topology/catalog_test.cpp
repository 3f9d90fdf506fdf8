// The hardware catalog: every entry valid, the DESIGN.md names present, key figures exact, errors informative.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "results/catalog_report.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::literals;
using namespace dtsim::topology;

template <class Spec>
std::set<std::string> names_of(std::span<const Spec> specs) {
  std::set<std::string> names;
  for (const auto& spec : specs) names.insert(spec.name);
  return names;
}

bool is_lower_case_name(const std::string& name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return std::islower(static_cast<unsigned char>(c)) != 0 || std::isdigit(static_cast<unsigned char>(c)) != 0 ||
           c == '-';
  });
}

// One direction, line rate, over all of a GPU's links of its own class.
BytesPerSecond link_budget(const GpuSpec& gpu) { return find_link(gpu.gpu_link).bandwidth * gpu.gpu_link_count; }

LinkSpec good_link() {
  return {.name = "my-link", .family = LinkFamily::Custom, .bandwidth = 10_GBps, .latency = 1_us,
          .efficiency = 0.9, .source = "test"};
}

std::string error_key(auto&& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.key();
  }
  return "no error";
}

}  // namespace

TEST_CASE("every catalog entry passes validation and names links that exist") {
  for (const auto& gpu : gpu_catalog()) {
    CAPTURE(gpu.name);
    CHECK_NOTHROW(validate(gpu, "cluster.gpu"));
    CHECK_NOTHROW(find_link(gpu.gpu_link));
    CHECK(find_link(gpu.host_link).family == LinkFamily::Pcie);
    if (!gpu.cpu_link.empty()) CHECK_NOTHROW(find_link(gpu.cpu_link));
    CHECK_FALSE(gpu.source.empty());
    CHECK(gpu.memory_reserve == 1.5 * 1_GiB);
  }
  for (const auto& link : link_catalog()) {
    CAPTURE(link.name);
    CHECK_NOTHROW(validate(link, "cluster.intra_link"));
    CHECK_FALSE(link.source.empty());
  }
}

// DESIGN.md's set, and those issue 17 names (GPUs and link classes "to add, with these names"), plus nvlink5 for
// the B200 and the socket links of the PCIe servers' CPUs (NCCL's inter-CPU figures); round 3's GPUs (DESIGN.md's
// "Round 3 interfaces"), PCIe Gen6 and Grace's NVLink-C2C.
TEST_CASE("catalog names are unique, lower case and exactly the DESIGN.md set") {
  const std::set<std::string> gpus = {"a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb",
                                      "h100-pcie-80gb", "h200-sxm-141gb", "mi300x",         "rtx4090",
                                      "t4",             "v100-sxm2-32gb", "a100-pcie-40gb", "l40s",
                                      "l4",             "v100-pcie-32gb", "h100-nvl-94gb",  "b200-sxm-180gb",
                                      "gb200",          "gb300",          "b300-sxm",       "h200-nvl",
                                      "mi325x",         "mi355x"};
  const std::set<std::string> links = {"nvlink2",     "nvlink3",     "nvlink4",     "nvlink-bridge", "infinity-fabric",
                                       "pcie3",       "pcie4",       "pcie5",       "upi",           "eth-100g",
                                       "eth-200g",    "eth-400g",    "ib-hdr",      "ib-ndr",        "nvlink5",
                                       "ib-qdr",      "ib-fdr",      "ib-edr",      "opa-100",       "eth-10g",
                                       "eth-25g",     "eth-40g",     "eth-10g-tcp", "eth-25g-tcp",   "eth-40g-tcp",
                                       "eth-100g-tcp", "socket-skylake", "socket-sapphire-rapids",
                                       "socket-emerald-rapids", "socket-zen2", "socket-zen3", "socket-zen5",
                                       "pcie6",       "nvlink-c2c",  "ib-xdr"};
  CHECK(names_of(gpu_catalog()) == gpus);
  CHECK(names_of(link_catalog()) == links);
  CHECK(gpu_catalog().size() == gpus.size());
  CHECK(link_catalog().size() == links.size());
  for (const auto& name : names_of(gpu_catalog())) CHECK(is_lower_case_name(name));
  for (const auto& name : names_of(link_catalog())) CHECK(is_lower_case_name(name));
  for (const auto& cpu : cpu_catalog()) {
    CAPTURE(cpu.name);
    CHECK(is_lower_case_name(cpu.name));
    CHECK(find_link(cpu.socket_link).family == LinkFamily::CpuInterconnect);
    CHECK(find_link(cpu.pcie).family == LinkFamily::Pcie);
  }
  // Each PCIe generation's default CPU is the Xeon that brought it.
  CHECK(default_cpu("pcie3").name == "skylake");
  CHECK(default_cpu("pcie4").name == "icelake");
  CHECK(default_cpu("pcie5").name == "sapphire-rapids");
  // NCCL's figure (10 GB/s for Ice Lake) carried to what a ring gets: x 28/22, the Sapphire Rapids row of nccl.md.
  CHECK(to_gigabytes_per_second(find_link(find_cpu("icelake").socket_link).bandwidth) == doctest::Approx(10 * 28.0 / 22));
  CHECK(to_gigabytes_per_second(find_link(find_cpu("sapphire-rapids").socket_link).bandwidth) == doctest::Approx(28));
  CHECK_THROWS_WITH_AS(find_cpu("pentium"), doctest::Contains("unknown CPU"), InputError);
}

// Issue 17's transports: kernel TCP is not RoCE (its own family, one model: TCP framing, a host ceiling per NIC,
// a higher latency), Omni-Path is not InfiniBand but is routed by destination as InfiniBand is.
TEST_CASE("catalog: TCP links follow one model, framing or the host's ceiling, and Omni-Path and InfiniBand route by destination") {
  const double framing = 1448.0 / 1538.0;
  for (const auto& [name, gbps] : std::vector<std::pair<std::string, double>>{{"eth-10g-tcp", 10}, {"eth-25g-tcp", 25},
                                                                             {"eth-40g-tcp", 40}, {"eth-100g-tcp", 100}}) {
    CAPTURE(name);
    const LinkSpec& tcp = find_link(name);
    CHECK(tcp.family == LinkFamily::EthernetTcp);
    CHECK(to_gigabits_per_second(tcp.bandwidth) == doctest::Approx(gbps));
    CHECK(tcp.efficiency == doctest::Approx(std::min(framing, 5.0 / (gbps / 8))));
    CHECK(tcp.latency > find_link("eth-100g").latency);
  }
  // 100 Gb/s over TCP moves 5 GB/s (NCCL over sockets measured 4-6), RDMA over the same port 10.9.
  CHECK(to_gigabytes_per_second(find_link("eth-100g-tcp").bandwidth) * find_link("eth-100g-tcp").efficiency ==
        doctest::Approx(5.0));
  CHECK(find_link("eth-100g").efficiency > 2 * find_link("eth-100g-tcp").efficiency);
  CHECK(find_link("opa-100").family == LinkFamily::OmniPath);
  CHECK(destination_routed(LinkFamily::OmniPath));
  CHECK(destination_routed(LinkFamily::InfiniBand));
  CHECK_FALSE(destination_routed(LinkFamily::Ethernet));
  CHECK_FALSE(destination_routed(LinkFamily::EthernetTcp));
  for (const char* ib : {"ib-qdr", "ib-fdr", "ib-edr", "ib-hdr", "ib-ndr"}) CHECK(find_link(ib).efficiency == 0.94);
  CHECK(to_gigabits_per_second(find_link("ib-qdr").bandwidth) == doctest::Approx(32));   // 8b/10b of 40
}

TEST_CASE("name lists follow catalog order") {
  CHECK(gpu_names().starts_with("a100-sxm4-40gb, a100-sxm4-80gb, "));
  CHECK(gpu_names().ends_with(", b200-sxm-180gb, gb200, gb300, b300-sxm, h200-nvl, mi325x, mi355x"));
  CHECK(link_names().starts_with("nvlink2, nvlink3, "));
}

TEST_CASE("an 80GB card has 80 GiB, the H200 what nvidia-smi shows") {
  CHECK(find_gpu("a100-sxm4-80gb").memory == 80_GiB);
  CHECK(find_gpu("a100-sxm4-80gb").memory.value() == 85'899'345'920.0);
  CHECK(find_gpu("h100-sxm5-80gb").memory == 80_GiB);
  CHECK(find_gpu("a100-sxm4-40gb").memory == 40_GiB);
  CHECK(find_gpu("h200-sxm-141gb").memory == 143'771_MiB);
  CHECK(find_gpu("mi300x").memory == 192_GiB);
}

TEST_CASE("network links: Gb/s and GB/s differ by 8") {
  CHECK(find_link("eth-100g").bandwidth.value() == 12.5e9);
  CHECK(to_gigabits_per_second(find_link("eth-100g").bandwidth) == 100.0);
  CHECK(find_link("eth-400g").bandwidth == 50_GBps);
  CHECK(find_link("ib-hdr").bandwidth == 25_GBps);
  CHECK(find_link("ib-ndr").bandwidth == 50_GBps);
  CHECK(find_link("ib-ndr").family == LinkFamily::InfiniBand);
  CHECK(find_link("eth-200g").family == LinkFamily::Ethernet);
}

TEST_CASE("per-link bandwidths and efficiencies") {
  CHECK(find_link("nvlink3").bandwidth == 25_GBps);
  CHECK(find_link("pcie3").bandwidth.value() == 15.75e9);
  CHECK(find_link("pcie4").bandwidth.value() == 31.5e9);
  CHECK(find_link("pcie5").bandwidth == 63_GBps);
  CHECK(find_link("upi").bandwidth.value() == 20.8e9);
  // One protocol efficiency per link family (NVLink's fitted on nccl.md's 8x A100 all-reduce row).
  CHECK(find_link("nvlink4").efficiency == doctest::Approx(0.767));
  for (const char* nvlink : {"nvlink2", "nvlink3", "nvlink-bridge"})
    CHECK(find_link(nvlink).efficiency == find_link("nvlink4").efficiency);
  CHECK(find_link("ib-ndr").efficiency == 0.94);
  CHECK(find_link("eth-100g").efficiency == 0.875);
  CHECK(find_link("upi").family == LinkFamily::CpuInterconnect);
}

TEST_CASE("a GPU's link budget: A100 300, H100 450, MI300X 448, V100 150 GB/s per direction") {
  CHECK(link_budget(find_gpu("a100-sxm4-80gb")) == 300_GBps);
  CHECK(find_gpu("a100-sxm4-80gb").gpu_link_count == 12);
  CHECK(link_budget(find_gpu("h100-sxm5-80gb")) == 450_GBps);
  CHECK(link_budget(find_gpu("h200-sxm-141gb")) == 450_GBps);
  CHECK(link_budget(find_gpu("mi300x")) == 448_GBps);
  CHECK(link_budget(find_gpu("v100-sxm2-32gb")) == 150_GBps);
  CHECK(find_gpu("a100-pcie-80gb").gpu_link == "pcie4");
  CHECK(find_gpu("t4").gpu_link == "pcie3");
  CHECK(find_gpu("h100-pcie-80gb").host_link == "pcie5");
}

TEST_CASE("dense peaks per precision, absent where the chip lacks it") {
  const auto& h100 = find_gpu("h100-sxm5-80gb");
  CHECK(h100.peak_for(Precision::Bf16) == 989_TFLOPS);
  CHECK(h100.peak_for(Precision::Fp8) == 1979_TFLOPS);
  CHECK(h100.peak_for(Precision::Fp32) == 67_TFLOPS);
  CHECK_FALSE(h100.peak_for(Precision::Int4).has_value());
  const auto& a100 = find_gpu("a100-sxm4-80gb");
  CHECK(a100.peak_for(Precision::Bf16) == 312_TFLOPS);
  CHECK(a100.peak_for(Precision::Tf32) == 156_TFLOPS);
  CHECK(a100.peak_for(Precision::Fp32) == 19.5_TFLOPS);
  CHECK_FALSE(a100.peak_for(Precision::Fp8).has_value());
  const auto& t4 = find_gpu("t4");
  CHECK_FALSE(t4.peak_for(Precision::Bf16).has_value());
  CHECK_FALSE(t4.peak_for(Precision::Tf32).has_value());
  CHECK(t4.peak_for(Precision::Fp16) == 65_TFLOPS);
  CHECK_FALSE(find_gpu("v100-sxm2-32gb").peak_for(Precision::Bf16).has_value());
  CHECK(find_gpu("v100-sxm2-32gb").peak_for(Precision::Fp16) == 125_TFLOPS);
}

TEST_CASE("memory bandwidth and power from the datasheets") {
  CHECK(find_gpu("a100-sxm4-80gb").memory_bandwidth == 2039_GBps);
  CHECK(find_gpu("h100-sxm5-80gb").memory_bandwidth == 3350_GBps);
  CHECK(find_gpu("h200-sxm-141gb").memory_bandwidth == 4800_GBps);
  CHECK(find_gpu("h100-sxm5-80gb").tdp == Watts(700));
  CHECK(find_gpu("t4").tdp == Watts(70));
}

TEST_CASE("an unknown name is an input error listing what is allowed") {
  try {
    (void)find_gpu("a101");
    FAIL("find_gpu accepted an unknown name");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("a101") != std::string::npos);
    CHECK(what.find("a100-sxm4-80gb") != std::string::npos);
    CHECK(e.key() == "cluster.gpu");
    CHECK(e.value() == "a101");
  }
  CHECK(error_key([] { (void)find_link("nvlink9", "cluster.inter_link"); }) == "cluster.inter_link");
  CHECK_THROWS_WITH_AS((void)find_link("ib-zdr"), doctest::Contains("ib-ndr"), InputError);
}

TEST_CASE("validate rejects bad links, naming the field") {
  CHECK_NOTHROW(validate(good_link(), "cluster.intra_link"));
  auto link = good_link();
  link.bandwidth = 0_GBps;
  CHECK(error_key([&] { validate(link, "cluster.intra_link"); }) == "cluster.intra_link.bandwidth_GBps");
  link = good_link();
  link.efficiency = 1.5;
  CHECK(error_key([&] { validate(link, "cluster.intra_link"); }) == "cluster.intra_link.efficiency");
  link.efficiency = 0.0;
  CHECK_THROWS_AS(validate(link, "cluster.intra_link"), InputError);
  link.efficiency = 1.0;
  CHECK_NOTHROW(validate(link, "cluster.intra_link"));
  link.latency = Seconds(-1e-6);
  CHECK(error_key([&] { validate(link, "cluster.intra_link"); }) == "cluster.intra_link.latency_us");
  link = good_link();
  link.name.clear();
  CHECK(error_key([&] { validate(link, "cluster.intra_link"); }) == "cluster.intra_link.name");
}

TEST_CASE("validate rejects bad GPUs, naming the field") {
  auto gpu = find_gpu("a100-sxm4-80gb");
  gpu.memory_bandwidth = 0_GBps;
  CHECK_THROWS_WITH_AS(validate(gpu, "cluster.gpu"), doctest::Contains("cluster.gpu.memory_bandwidth_GBps"),
                       InputError);
  gpu = find_gpu("a100-sxm4-80gb");
  gpu.peak = {};
  CHECK(error_key([&] { validate(gpu, "cluster.gpu"); }) == "cluster.gpu.peak_TFLOPS");
  gpu = find_gpu("a100-sxm4-80gb");
  gpu.peak[static_cast<std::size_t>(Precision::Bf16)] = 0_TFLOPS;
  CHECK(error_key([&] { validate(gpu, "cluster.gpu"); }) == "cluster.gpu.peak_TFLOPS.bf16");
  gpu = find_gpu("a100-sxm4-80gb");
  gpu.gpu_link_count = 0;
  CHECK(error_key([&] { validate(gpu, "cluster.gpu"); }) == "cluster.gpu.gpu_link_count");
  gpu = find_gpu("a100-sxm4-80gb");
  gpu.memory = Bytes(0);
  CHECK(error_key([&] { validate(gpu, "cluster.gpu"); }) == "cluster.gpu.memory_bytes");
}

TEST_CASE("precision and link family names round-trip") {
  for (const auto p : kAllPrecisions) CHECK(parse_precision(to_string(p)) == p);
  CHECK(to_string(Precision::Bf16) == "bf16");
  CHECK(to_string(Precision::Int4) == "int4");
  CHECK_FALSE(parse_precision("bfloat16").has_value());
  for (const auto f : {LinkFamily::NvLink, LinkFamily::InfinityFabric, LinkFamily::Pcie, LinkFamily::CpuInterconnect,
                       LinkFamily::Ethernet, LinkFamily::EthernetTcp, LinkFamily::InfiniBand, LinkFamily::OmniPath,
                       LinkFamily::Custom}) {
    CHECK(parse_link_family(to_string(f)) == f);
  }
  CHECK(to_string(LinkFamily::InfinityFabric) == "infinity-fabric");
  CHECK_FALSE(parse_link_family("NVLink").has_value());
}

TEST_CASE("catalog table lists every GPU and link") {
  const auto table = results::catalog_table();
  for (const auto& gpu : gpu_catalog()) CHECK(table.find(gpu.name) != std::string::npos);
  for (const auto& link : link_catalog()) CHECK(table.find(link.name) != std::string::npos);
  CHECK(table.find("nvlink3 x12") != std::string::npos);
  CHECK(table.find("model presets") != std::string::npos);   // details: tests/cli/scenario_loader_test.cpp
  CHECK(table.find("llama3-405b") != std::string::npos);
  CHECK(table.find("mlp-down-gemm") != std::string::npos);
}

TEST_CASE("catalog JSON carries every entry with units in the keys") {
  const auto json = results::catalog_json();
  REQUIRE(json.at("gpus").size() == gpu_catalog().size());
  REQUIRE(json.at("links").size() == link_catalog().size());
  CHECK(json.at("models").is_array());
  CHECK(json.at("models").size() >= 9);
  // The compute model's constants: the work of each kernel class, one row per architecture, each with its source.
  const auto& kernels = json.at("compute").at("kernels");
  CHECK(kernels.size() == 35);
  for (const auto& k : kernels) CHECK_FALSE(k.at("source").get<std::string>().empty());
  const auto& archs = json.at("compute").at("architectures");
  CHECK(archs.size() >= 3);
  for (const auto& a : archs) {
    CHECK(a.at("gemm").get<double>() > 0);
    CHECK(a.at("gemm").get<double>() <= 1);
    CHECK(a.at("gemm_half_k").get<double>() > 0);
    CHECK_FALSE(a.at("source").get<std::string>().empty());
  }
  CHECK(json.at("compute").at("launch_overhead_us").get<double>() > 0);
  const auto& a100 = json.at("gpus").at(1);
  CHECK(a100.at("architecture") == "ampere");
  CHECK(a100.at("name") == "a100-sxm4-80gb");
  CHECK(a100.at("memory_bytes") == 85'899'345'920LL);
  CHECK(a100.at("peak_TFLOPS").at("bf16") == 312.0);
  CHECK(a100.at("gpu_link") == "nvlink3");
  CHECK(a100.at("gpu_link_count") == 12);
  const auto& links = json.at("links");
  const auto ib_hdr = std::find_if(links.begin(), links.end(), [](const auto& l) { return l.at("name") == "ib-hdr"; });
  REQUIRE(ib_hdr != links.end());
  CHECK(ib_hdr->at("bandwidth_Gbps") == 200.0);
  CHECK(ib_hdr->at("bandwidth_GBps") == 25.0);
  CHECK(ib_hdr->at("family") == "infiniband");
  CHECK(json.dump().find("0000000001") == std::string::npos);
}
