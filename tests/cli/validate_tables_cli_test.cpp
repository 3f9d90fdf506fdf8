// `validate` on the published tables, each held at the errors recorded in docs/validation.md when it was added or
// last moved: the serving tables, the mixtures of experts, the rows dtsim misses, torchtitan's and Megatron-Bridge's
// runs. The command's own behaviour and the training tables' bounds are in validate_cli_test.cpp.
#include <cmath>
#include <map>
#include <string>

#include "cli/cli_support.hpp"
#include "cli/validate_support.hpp"

using namespace cli_support;
using nlohmann::json;
using namespace validate_support;

TEST_CASE("validate: TensorRT-LLM's static-batch serving throughput, 20 rows, 20 % each and 10 % mean") {
  check_figures("scenarios/validation/serving-trtllm-static.yaml", "Serving: TensorRT-LLM v0.9.0 static batches", 20, 0.20, 0.10);
}
TEST_CASE("validate: TensorRT-LLM's first-token latency, 8 rows, 20 % each and 12 % mean") {
  check_figures("scenarios/validation/serving-trtllm-first-token.yaml", "Serving: TensorRT-LLM v0.9.0 first-token", 8, 0.20, 0.12);
}
TEST_CASE("validate: vLLM's batch-8 request latency, 6 rows, 12 % each and 10 % mean") {
  check_figures("scenarios/validation/serving-vllm-latency.yaml", "Serving: vLLM nightly", 6, 0.12, 0.10);
}
// Serving a mixture of experts (issue 47): Mixtral-8x7B in the same vLLM builds, at the errors measured when the
// table was added (+0.8, +3.3, -7.8 %; docs/validation.md, "Serving a mixture of experts").
TEST_CASE("validate: vLLM's batch-8 request latency of Mixtral-8x7B, 3 rows, 10 % each and 5 % mean") {
  check_figures("scenarios/validation/serving-vllm-moe.yaml", "Serving: vLLM nightly, Mixtral", 3, 0.10, 0.05);
}
// 15 % each since auto weighs ring LL against NVLS (2026-12-07): the 70B TP 4 row at 8 requests/s leans fast by
// 13.5 % on TPOT (it was -6.6 %; docs/validation.md, "Serving: small all-reduces and prefix caching").
TEST_CASE("validate: TensorRT-LLM's online serving below saturation, 12 figures, 15 % each and 10 % mean") {
  check_figures("scenarios/validation/serving-trtllm-online.yaml", "Serving: TensorRT-LLM online", 15, 0.15, 0.10, {"online-70b-tp4-qps32"});
}
// Past saturation (32 requests/s where the 70B TP 4 server serves 16) the answer is the scheduler's: under
// TensorRT-LLM's own defaults (inference.framework: trtllm, 2,048 sequences) TPOT +4.5 % and throughput -8.1 %, the
// mean TTFT (a queue's) +40.9 % as docs/validation.md records it; under vLLM's 256 sequences they were -29.7, -15.8
// and +379 %.
TEST_CASE("validate: TensorRT-LLM's online serving past saturation, under TensorRT-LLM's scheduler defaults") {
  const json report = validate_json(src("scenarios/validation/serving-trtllm-online.yaml"));
  int seen = 0;
  for (const json& row : report.at("tables").at(0).at("rows")) {
    if (row.at("name") != "online-70b-tp4-qps32") continue;
    CAPTURE(row.dump());
    ++seen;
    const double error = row.at("error").get<double>();
    if (row.at("figure") == "mean_ttft_ms")
      CHECK(std::abs(error - 0.409) <= 0.05);
    else
      CHECK(std::abs(error) <= 0.10);
  }
  CHECK(seen == 3);
}

// Issue 22's MoE table: the rows dtsim meets, 5 % each and 3 % mean (the Qwen3-30B-A3B row is the one the host
// model is fitted on, workloads/host_model.hpp); the two it misses (docs/validation.md) are run but not held.
TEST_CASE("validate: Megatron-Core's MoE runs on H100, 5 of 7 rows, 5 % each and 3 % mean"
          * doctest::test_suite("figures")) {
  check_figures("scenarios/validation/moe-h100.yaml", "Mixtures of experts", 7, 0.05, 0.03, {"qwen3-235b-nemo-256", "deepseek-v3-1024"});
}

TEST_CASE("validate: the MoE rows dtsim misses stay at their recorded errors, within 5 points"
          * doctest::test_suite("figures")) {
  check_recorded("scenarios/validation/moe-h100.yaml", {{"qwen3-235b-nemo-256", 0.183}, {"deepseek-v3-1024", 0.323}});
}

// The seventh cross-fabric pair (issue 17: ZeRO-3 on 384 V100 over one or four NICs a node) and the same blog's
// 1K-token pair, which dtsim misses, held at their recorded errors: +13.4 % with DeepSpeed's fp16 gradient
// reduction (+46 % with fp32), and +62 % (docs/validation.md).
TEST_CASE("validate: the ZeRO-3 cross-fabric pairs dtsim misses stay at their recorded errors, within 5 points"
          * doctest::test_suite("figures")) {
  check_recorded("scenarios/validation/cross-fabric-zero3.yaml", {{"zero3-18b-4xedr / zero3-18b-1xedr", 0.134},
                                                                   {"zero3-18b-1k-4xedr / zero3-18b-1k-1xedr", 0.624}});
}

// Out of sample (issue 17): MLPerf v2.0 BERT from one node to several, which dtsim scales too well (the gradient
// all-reduce across nodes takes about twice what dtsim gives, docs/validation.md), held at the recorded errors.
TEST_CASE("validate: MLPerf BERT across nodes, the out-of-sample ratios stay at their recorded errors, within 5 points"
          * doctest::test_suite("figures")) {
  check_recorded("scenarios/validation/mlperf-bert-multinode.yaml",
                 {{"xe8545-40gb-2 / xe8545-40gb-1", 0.129}, {"xe8545-40gb-4 / xe8545-40gb-1", 0.298},
                  {"xe8545-40gb-8 / xe8545-40gb-1", 0.103}, {"xe8545-40gb-16 / xe8545-40gb-1", 0.099},
                  {"xe8545-40gb-32 / xe8545-40gb-1", 0.213}, {"xe8545-80gb-2 / xe8545-80gb-1", 0.162},
                  {"xe8545-80gb-4 / xe8545-80gb-1", 0.293}, {"dgxa100-8 / dgxa100-1", 0.013},
                  {"azure-ndv4-8 / azure-ndv4-1", 0.062}});
}

// Out of sample (issue 17): MLPerf BERT on PCIe servers of other vendors against SXM ones, bridges, and one GPU
// against four; held at the recorded errors (docs/validation.md says which rows miss and why).
TEST_CASE("validate: MLPerf BERT on other vendors' PCIe servers, the out-of-sample ratios stay at their recorded "
          "errors, within 5 points" * doctest::test_suite("figures")) {
  check_recorded("scenarios/validation/mlperf-bert-pcie-vs-sxm.yaml",
                 {{"h3c20-sxm-4 / h3c20-pcie-4", -0.061}, {"h3c20-sxm-8 / h3c20-pcie-8", 0.141},
                  {"asus31-hgx-8 / asus31-pcie-8", -0.071}, {"lenovo31-sxm-4 / lenovo31-pcie-8", -0.387},
                  {"asus21-sxm-4 / asus21-pcie-8-br", -0.051}, {"dell11-xe8545-4 / dell11-dss8440-8", -0.251},
                  {"fujitsu21-sxm-8 / fujitsu21-pcie-2", -0.155}, {"asus30-pcie-4-br / asus30-pcie-4", -0.060},
                  {"dell10-dss8440-8-br / dell10-dss8440-8", -0.083}, {"h3c20-pcie-4b / h3c20-pcie-1", 0.007}});
}

// torchtitan's table (issue 22): the eight rows without context parallelism beyond 2, 10 % each and 6 % mean; the
// two at CP 4 and 8 (34 and 39 % fast, docs/validation.md) held at their recorded errors.
TEST_CASE("validate: torchtitan's FSDP runs on H100, 8 of 10 rows, 10 % each and 6 % mean"
          * doctest::test_suite("figures")) {
  check_figures("scenarios/validation/torchtitan-h100-fsdp.yaml", "torchtitan on H100", 10, 0.10, 0.06,
                {"llama3-8b-128k-cp4", "llama3-8b-256k-cp8"});
  check_recorded("scenarios/validation/torchtitan-h100-fsdp.yaml",
                 {{"llama3-8b-128k-cp4", 0.339}, {"llama3-8b-256k-cp8", 0.390}});
}

// Issue 45's table: Megatron-Bridge 25.11's Llama 3 runs on GB300 and GB200 NVL72 racks, DGX B200 and DGX H100,
// written from the published columns only, within issue 45's targets (max 15 %, mean 8 %; docs/validation.md:
// 13.3 % and 7.0 % since MXFP8's GEMM rate and Blackwell's transposeless casts); the ratio a buyer reads, the same 8B job on 8 GPUs of a GB200 rack
// and of a DGX B200 (published 1.029), within 7 %; and MXFP8 against FP8-CS on the same DGX B200 job (published
// 0.964), within 2 %.
TEST_CASE("validate: Megatron-Bridge's Blackwell and Hopper runs, 15 rows, 15 % each and 8 % mean, the rack-to-server and MXFP8 ratios"
          * doctest::test_suite("figures")) {
  check_figures("scenarios/validation/megatron-bridge-blackwell.yaml", "Megatron-Bridge 25.11", 15, 0.15, 0.08);
  const json report = validate_json(src("scenarios/validation/megatron-bridge-blackwell.yaml") +
                                    " --only gb200-8b,b200-8b,b200-8b-mxfp8");
  std::map<std::string, json> rows;
  for (const json& row : report.at("tables").at(0).at("rows")) rows[row.at("name").get<std::string>()] = row;
  const auto ratio = [&](const char* a, const char* b, const char* key) {
    return rows.at(a).at(key).get<double>() / rows.at(b).at(key).get<double>();
  };
  CHECK(ratio("gb200-8b", "b200-8b", "dtsim") == doctest::Approx(ratio("gb200-8b", "b200-8b", "published")).epsilon(0.07));
  CHECK(ratio("b200-8b-mxfp8", "b200-8b", "dtsim") ==
        doctest::Approx(ratio("b200-8b-mxfp8", "b200-8b", "published")).epsilon(0.02));
}

// NVFP4 training (docs/validation.md, "NVFP4"): Megatron-Bridge 26.04.01's Llama 3 rows, the NVFP4 ones within 20 %
// (27 % and 24 % before NVFP4's GEMMs took their measured rate), and NVFP4 over FP8 on the same GB300 405B plan
// (published 1.406: 1,440 against 1,024 tokens/s) within 10 % (dtsim 1.51; 1.95 at the fp4 peak).
TEST_CASE("validate: Megatron-Bridge 26.04's NVFP4 rows, and NVFP4 over FP8 on one plan" * doctest::test_suite("figures")) {
  const json report = validate_json(src("scenarios/validation/megatron-bridge-26.04.yaml"));
  std::map<std::string, json> rows;
  for (const json& row : report.at("tables").at(0).at("rows")) rows[row.at("name").get<std::string>()] = row;
  CHECK(rows.size() == 12);
  for (const char* name : {"gb300-70b-nvfp4", "gb200-70b-nvfp4", "gb300-405b-nvfp4"}) {
    CAPTURE(name);
    CHECK(std::abs(rows.at(name).at("error").get<double>()) <= 0.20);
  }
  const auto ratio = [&](const char* key) {
    return rows.at("gb300-405b-nvfp4").at(key).get<double>() / rows.at("gb300-405b-fp8").at(key).get<double>();
  };
  CHECK(ratio("dtsim") == doctest::Approx(ratio("published")).epsilon(0.10));
}
