// `dtsim run` on an inference scenario: DESIGN.md's serving fields, their arithmetic, the topology deciding the
// decode step, the batch that fits, prefill-only serving, and bad serving input.
#include <fmt/format.h>
#include <cmath>
#include <set>
#include <nlohmann/json.hpp>

#include "cli/serving_support.hpp"
#include "cli/trace_format.hpp"

using namespace serving_support;


TEST_CASE("serving run: DESIGN.md's fields, tokens per second from TTFT and TPOT, and each phase's regime") {
  const fs::path f = scenario("fields", kLlama70b);
  const json r = serving_run_json(f);
  for (const char* key : {"ttft_s", "tpot_s", "tokens_per_s", "tokens_per_s_per_gpu", "max_batch_that_fits", "memory",
                          "phases", "gpus", "request_time_s", "decode_tokens_per_s"})
    CHECK_MESSAGE(r.contains(key), key);
  const double ttft = r["ttft_s"], tpot = r["tpot_s"];
  CHECK(ttft > 0);
  CHECK(tpot > 0);
  CHECK(ttft > 10 * tpot);   // 32 x 1,024 prompt tokens against one token per sequence
  CHECK(r["request_time_s"].get<double>() == doctest::Approx(ttft + 255 * tpot));
  CHECK(r["tokens_per_s"].get<double>() == doctest::Approx(32.0 * 256 / (ttft + 255 * tpot)));
  CHECK(r["tokens_per_s_per_gpu"].get<double>() == doctest::Approx(r["tokens_per_s"].get<double>() / 8));
  CHECK(r["decode_tokens_per_s"].get<double>() == doctest::Approx(32 / tpot));
  CHECK(r["phases"]["prefill"]["regime"] == "compute-bound");
  CHECK(r["phases"]["decode"]["regime"] == "memory-bound");
  CHECK(r["phases"]["decode"]["context_tokens"] == 1024 + 128);
  // The decode step reads every GPU's eighth of 138 GB of bf16 weights at 3.35 TB/s, at least.
  CHECK(tpot > 69e9 * 2 / 8 / 3.35e12);
  // Its communication (160 small all-reduces) is a visible share, and the compute the rest.
  const json& b = r["phases"]["decode"]["breakdown_s"];
  CHECK(b["exposed_comm"].get<double>() > 0.05 * tpot);
  CHECK(b["compute"].get<double>() + b["exposed_comm"].get<double>() == doctest::Approx(tpot));
  CHECK(r["memory"]["fits"] == true);
  const std::string table = dtsim("run " + f.string()).out;
  CHECK(table.find("ttft_ms") != std::string::npos);
  CHECK(table.find("memory-bound") != std::string::npos);
  fs::remove_all(f.parent_path());
}

TEST_CASE("serving run: the largest batch that fits is the memory plan's edge, and int4 weights raise it") {
  const fs::path f = scenario("max-batch", kLlama70b);
  const int most = serving_run_json(f)["max_batch_that_fits"];
  CHECK(most > 32);
  auto fits = [&](int batch) {
    const Result r = dtsim(fmt::format("memory {} --format json --set inference.batch={}", f.string(), batch));
    REQUIRE(r.status == 0);
    return json::parse(r.out)["fits"].get<bool>();
  };
  CHECK(fits(most));
  CHECK_FALSE(fits(most + 1));
  CHECK(serving_run_json(f, "--set inference.weights=int4")["max_batch_that_fits"].get<int>() > most);
  fs::remove_all(f.parent_path());
}

TEST_CASE("serving run: the fabric decides the decode step, and int4 weights speed up decode more than prefill") {
  const fs::path f = scenario("fabric", kLlama70b);
  const json nvswitch = serving_run_json(f);
  // The same 8 GPUs behind PCIe: every TP all-reduce crosses the host.
  const json pcie = serving_run_json(f, "--set cluster.intra=pcie");
  CHECK(pcie["tpot_s"].get<double>() > 1.2 * nvswitch["tpot_s"].get<double>());
  const json int4 = serving_run_json(f, "--set inference.weights=int4");
  const double decode_gain = nvswitch["tpot_s"].get<double>() / int4["tpot_s"].get<double>();
  const double prefill_gain = nvswitch["ttft_s"].get<double>() / int4["ttft_s"].get<double>();
  CHECK(decode_gain > 1.2);   // less than 4x: the all-reduces and the kernel launches stay
  CHECK(prefill_gain < 1.1);
  CHECK(int4["compute_precision"] == "bf16");
  fs::remove_all(f.parent_path());
}

TEST_CASE("serving run: output_tokens 0 is prefill only, and serving input errors are one line with status 2") {
  const fs::path f = scenario("prefill-only", R"(name: bert
cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 1, intra: nvswitch}
model: {preset: bert-large}
inference: {batch: 64, prompt_tokens: 384, output_tokens: 0}
)");
  const json r = serving_run_json(f);
  CHECK(r["tpot_s"].is_null());
  CHECK_FALSE(r["phases"].contains("decode"));
  CHECK(r["tokens_per_s"].get<double>() == doctest::Approx(64.0 * 384 / r["ttft_s"].get<double>()));
  // Its trace holds the prefill alone.
  const fs::path trace = f.parent_path() / "trace.json";
  REQUIRE(dtsim("run " + f.string() + " --trace " + trace.string()).status == 0);
  const json events = json::parse(slurp(trace));   // kept: a range-for over a temporary's member dangles
  for (const auto& e : events.at("traceEvents"))
    if (e.value("ph", "") == "X") CHECK(e.at("name").get<std::string>().starts_with("prefill "));
  fs::remove_all(f.parent_path());
}

TEST_CASE("serving trace: the prefill's slices, then one decode step's after them on the same GPUs") {
  const fs::path f = scenario("trace", kLlama70b);
  const fs::path dir = f.parent_path() / "out";
  const json r = serving_run_json(f, "--out " + dir.string() + " --trace-ranks all");   // --out writes the trace beside the results
  const json trace = json::parse(slurp(dir / "trace.json"));
  for (const auto& problem : trace_format::errors(trace)) FAIL_CHECK(problem);
  double prefill_end = 0, decode_start = 1e300, decode_end = 0;
  std::set<int> prefill_gpus, decode_gpus;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const std::string name = e.at("name");
    const double start = e.at("ts").get<double>(), end = start + e.at("dur").get<double>();
    if (name.starts_with("prefill ")) {
      prefill_end = std::max(prefill_end, end);
      prefill_gpus.insert(e.at("pid").get<int>());
    } else {
      REQUIRE(name.starts_with("decode "));
      decode_start = std::min(decode_start, start);
      decode_end = std::max(decode_end, end);
      decode_gpus.insert(e.at("pid").get<int>());
    }
  }
  CHECK(prefill_gpus.size() == 8);
  CHECK(decode_gpus == prefill_gpus);
  CHECK(prefill_end == doctest::Approx(1e6 * r["ttft_s"].get<double>()));   // microseconds
  CHECK(decode_start >= prefill_end * (1 - 1e-9));
  CHECK(decode_end - prefill_end == doctest::Approx(1e6 * r["tpot_s"].get<double>()));
  fs::remove_all(f.parent_path());
}

TEST_CASE("serving sweep: a batch axis gives one row per batch, throughput and TPOT rising with it") {
  const fs::path f = scenario("sweep", kLlama70b + "sweep:\n  inference.batch: [1, 8, 64]\n");
  const fs::path out = f.parent_path() / "out";
  const Result r = dtsim("sweep " + f.string() + " --out " + out.string());
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  const auto rows = json_lines(slurp(out / "results.jsonl"));
  REQUIRE(rows.size() == 3);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i]["tokens_per_s"].get<double>() > 2 * rows[i - 1]["tokens_per_s"].get<double>());
    CHECK(rows[i]["tpot_s"].get<double>() > rows[i - 1]["tpot_s"].get<double>());
    CHECK_FALSE(rows[i].contains("strong_scaling_efficiency"));
  }
  // A static batch sweep is a table in the report, and no chart (there is no stream to draw).
  const Result report = dtsim("report " + out.string());
  CAPTURE(report.err);
  CHECK(report.status == 0);
  const std::string md = slurp(out / "report.md");
  CHECK(md.find("| llama70b[batch=64] | 8 |") != std::string::npos);
  CHECK(md.find("No chart: no row serves a request stream") != std::string::npos);
  fs::remove_all(f.parent_path());
}


TEST_CASE("serving stream: a lone request's TTFT and TPOT are the static batch's, and load raises the tail") {
  // At 0.02 requests/s a request almost never meets another: its prefill and decode steps run alone.
  const json idle = serving_run_json(scenario("stream-idle", stream_of(0.02, 500)));
  CHECK(idle["p50_ttft_s"].get<double>() == doctest::Approx(idle["ttft_s"].get<double>()).epsilon(0.02));
  CHECK(idle["p50_tpot_s"].get<double>() == doctest::Approx(idle["tpot_s"].get<double>()).epsilon(0.05));
  CHECK(idle["stream"]["kv_blocks_from"] == "memory plan");
  CHECK(idle["stream"]["requests_truncated"] == 0);
  // Under load the batch grows: each token takes longer and the tail of TTFT moves out, while the server still
  // keeps up (requests served per second is the arrival rate).
  const json busy = serving_run_json(scenario("stream-busy", stream_of(20, 60)));
  CHECK(busy["p50_tpot_s"].get<double>() > 1.5 * idle["p50_tpot_s"].get<double>());
  CHECK(busy["p99_ttft_s"].get<double>() > busy["p50_ttft_s"].get<double>());
  CHECK(busy["stream"]["mean_tokens_per_iteration"].get<double>() > 10);
  const double requests = busy["stream"]["requests"].get<double>();
  CHECK(requests == doctest::Approx(20 * 60).epsilon(0.1));   // Poisson: 1,200 +- 35
  CHECK(busy["stream"]["throughput_requests_per_s"].get<double>() == doctest::Approx(requests / 60).epsilon(0.05));
  CHECK(busy["throughput_tokens_per_s"].get<double>() ==
        doctest::Approx(64 * requests / busy["stream"]["completion_s"].get<double>()));
}

TEST_CASE("serving stream: a seed fixes the stream, data-parallel replicas share it, a small cache queues requests") {
  const json a = serving_run_json(scenario("stream-seed", stream_of(5, 60)));
  const fs::path seeded = scenario("stream-seed", stream_of(5, 60));
  const json b = serving_run_json(seeded, "--out " + (seeded.parent_path() / "out").string());
  CHECK(a["p99_ttft_s"] == b["p99_ttft_s"]);
  // The resolved scenario (--out, no trace for serving) holds the stream and the scheduler: it runs the same.
  const json again = serving_run_json(seeded.parent_path() / "out" / "scenario.resolved.yaml");
  CHECK(again["p99_ttft_s"] == a["p99_ttft_s"]);
  CHECK(again["stream"] == a["stream"]);
  const json other = serving_run_json(scenario("stream-seed2", stream_of(5, 60) + "  # another seed\n"), "--set inference.requests.seed=4");
  CHECK(other["stream"]["requests"] != a["stream"]["requests"]);
  // Two replicas take every other request: the same requests, smaller batches, shorter steps.
  const json two = serving_run_json(scenario("stream-dp", stream_of(5, 60, "parallelism: {tp: 1, dp: 2}\n")));
  CHECK(two["stream"]["requests"] == a["stream"]["requests"]);
  CHECK(two["p50_tpot_s"].get<double>() < a["p50_tpot_s"].get<double>());
  // A cache of two requests' blocks (576 tokens = 36 blocks each) queues the rest.
  const json small = serving_run_json(scenario("stream-small", stream_of(5, 60, "  scheduler: {kv_blocks: 72}\n")));
  CHECK(small["stream"]["kv_blocks"] == 72);
  CHECK(small["stream"]["p99_queue_s"].get<double>() > 10 * a["stream"]["p99_queue_s"].get<double>());
}

TEST_CASE("serving stream: weights that leave no room for the KV cache are a one-line error, status 2") {
  const fs::path f = scenario("stream-no-cache", R"(name: no-cache
cluster: {gpu: l4, nodes: 1, gpus_per_node: 1}
model: {preset: llama2-7b}
inference:
  weights: fp32
  requests: {prompt_tokens: 512, output_tokens: 128, rate_per_s: 1, duration_s: 10}
)");
  const Result r = dtsim("run " + f.string());
  CHECK(r.status == 2);
  CHECK(r.err.find("inference.requests: the weights and an iteration's workspace (2048 tokens, 256 sequences) leave "
                   "no GPU memory for the KV cache") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  fs::remove_all(f.parent_path());
}

TEST_CASE("serving report: a sweep over the arrival rate draws latency against throughput, a curve per setting") {
  const fs::path f = scenario("stream-report", stream_of(2, 30) + "sweep:\n  inference.requests.rate_per_s: [8, 2, 4]\n"
                                                                   "  inference.weights: [bf16, fp8]\n");
  const fs::path out = f.parent_path() / "out";
  const Result r = dtsim("sweep " + f.string() + " --out " + out.string());
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  const Result report = dtsim("report " + out.string());
  CAPTURE(report.err);
  REQUIRE(report.status == 0);
  CHECK(fs::file_size(out / "plots" / "latency.png") > 10'000);
  // Two curves (gnuplot index blocks), weights apart, each in rising rate with throughput rising with it.
  const std::string data = slurp(out / "plots" / "latency.dat");
  CHECK(data.find("# inference.weights=bf16") != std::string::npos);
  CHECK(data.find("# inference.weights=fp8") != std::string::npos);
  std::vector<std::vector<double>> curve;
  std::istringstream lines(data);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cells(line);
    double rate = 0, throughput = 0;
    cells >> rate >> throughput;
    curve.push_back({rate, throughput});
  }
  REQUIRE(curve.size() == 6);
  for (std::size_t i : {1u, 2u, 4u, 5u}) {
    CHECK(curve[i][0] > curve[i - 1][0]);
    CHECK(curve[i][1] > curve[i - 1][1]);
  }
  CHECK(slurp(out / "report.md").find("![latency against throughput](plots/latency.png)") != std::string::npos);
  fs::remove_all(f.parent_path());
}

namespace {

// Llama-2-7B requests (512-token prompts, 128 outputs) at `rate`/s for 60 s on 2 nodes of 4 H100 joined by
// `inter_link`; `pools`: an inference.disaggregation body, or "" for colocated replicas.
std::string pools_of(double rate, const std::string& inter_link, const std::string& pools) {
  return fmt::format(R"(name: pools
cluster: {{gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 4, intra: nvswitch, inter: switch, inter_link: {}}}
model: {{preset: llama2-7b}}
parallelism: {{tp: 1}}
inference:
  requests: {{prompt_tokens: 512, output_tokens: 128, rate_per_s: {}, duration_s: 60, seed: 5}}
{})",
                     inter_link, rate, pools.empty() ? "" : "  disaggregation: " + pools + "\n");
}

}  // namespace

TEST_CASE("serving disaggregation: decode undisturbed by prefill, each cache sent over the fabric that joins the pools") {
  const std::string split = "{prefill: {gpus: 4, tp: 1}, decode: {gpus: 4, tp: 1}}";
  const json colocated = serving_run_json(scenario("pools-colocated", pools_of(40, "ib-ndr", "")));
  const json ib = serving_run_json(scenario("pools-ib", pools_of(40, "ib-ndr", split)));
  const json& d = ib["stream"]["disaggregation"];
  CHECK(d["prefill"]["replicas"] == 4);
  CHECK(d["decode"]["replicas"] == 4);
  // One request's cache: 512 tokens x 32 layers x 2 (K, V) x 4096 x 2 B.
  CHECK(d["mean_kv_bytes"].get<double>() == doctest::Approx(512.0 * 32 * 2 * 4096 * 2));
  CHECK(d["p50_kv_transfer_s"].get<double>() > 0);
  CHECK(ib["stream"]["requests"] == colocated["stream"]["requests"]);
  // A request alone (0.05/s) takes the same prefill and the same decode steps either way (one GPU per replica):
  // disaggregated, it is later by its cache's transfer alone.
  const json lone_colocated = serving_run_json(scenario("pools-lone-c", pools_of(0.05, "ib-ndr", "")));
  const json lone = serving_run_json(scenario("pools-lone-d", pools_of(0.05, "ib-ndr", split)));
  CHECK(lone["p50_ttft_s"].get<double>() == doctest::Approx(lone_colocated["p50_ttft_s"].get<double>()));
  CHECK(lone["stream"]["p50_latency_s"].get<double>() ==
        doctest::Approx(lone_colocated["stream"]["p50_latency_s"].get<double>() +
                        lone["stream"]["disaggregation"]["p50_kv_transfer_s"].get<double>()));
  // A 10 GbE fabric (the pools are the two nodes) makes each 268 MB transfer about 0.2 s, which shows in TPOT.
  const json eth = serving_run_json(scenario("pools-eth", pools_of(40, "eth-10g", split)));
  CHECK(eth["stream"]["disaggregation"]["p50_kv_transfer_s"].get<double>() >
        50 * d["p50_kv_transfer_s"].get<double>());
  CHECK(eth["p50_tpot_s"].get<double>() > ib["p50_tpot_s"].get<double>());
  CHECK(eth["p50_ttft_s"] == ib["p50_ttft_s"]);   // the first token comes from the prefill pool either way
}

TEST_CASE("serving disaggregation: pools larger than the cluster, or a tp that does not divide, are one-line errors") {
  for (const auto& [pools, expect] :
       {std::pair{"{prefill: {gpus: 6}, decode: {gpus: 4}}",
                  "inference.disaggregation: the pools need more GPUs than the cluster's 8: '6 + 4 GPUs'"},
        std::pair{"{prefill: {gpus: 4, tp: 3}, decode: {gpus: 4}}",
                  "inference.disaggregation.prefill.tp: does not divide the pool's 4 GPUs: '3'"},
        std::pair{"{prefill: {gpus: 4}}", "inference.disaggregation.decode: missing"}}) {
    CAPTURE(pools);
    const Result r = dtsim("run " + scenario("pools-bad", pools_of(1, "ib-ndr", pools)).string());
    CHECK(r.status == 2);
    CHECK(r.err.find(expect) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("serving report: streams of one-token outputs draw TTFT alone, and disaggregated they end at their prefill") {
  const std::string one_token = R"(name: one-token
cluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 4, intra: nvswitch, inter: switch, inter_link: ib-ndr}
model: {preset: llama2-7b}
parallelism: {tp: 1}
inference:
  requests: {prompt_tokens: 512, output_tokens: 1, rate_per_s: 4, duration_s: 20, seed: 5}
)";
  const fs::path f = scenario("one-token", one_token + "sweep:\n  inference.requests.rate_per_s: [2, 4]\n");
  const fs::path out = f.parent_path() / "out";
  REQUIRE(dtsim("sweep " + f.string() + " --out " + out.string()).status == 0);
  const Result report = dtsim("report " + out.string());
  CAPTURE(report.err);
  CHECK(report.status == 0);
  const std::string gp = slurp(out / "plots" / "latency.gp");
  CHECK(gp.find("time to first token") != std::string::npos);
  CHECK(gp.find("time per output token") == std::string::npos);   // no request has a second token
  const json d = serving_run_json(scenario("one-token-d", one_token + "  disaggregation: {prefill: {gpus: 4}, decode: {gpus: 4}}\n"));
  CHECK(d["stream"]["p50_latency_s"] == d["p50_ttft_s"]);   // nothing sent, nothing decoded
  fs::remove_all(f.parent_path());
}
