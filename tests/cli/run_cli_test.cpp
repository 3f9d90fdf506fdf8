// `dtsim run` and `dtsim collective` end to end: the default scenario's golden table, physics invariants a
// re-blessed golden file cannot hide, the JSON/CSV/--out outputs, the Perfetto trace's structure.
#include <cstdlib>

#include <fmt/format.h>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

double field(const json& row, const char* key) { return row.at(key).get<double>(); }

json run_json(const std::string& args) {
  const auto r = dtsim("run " + args + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

}  // namespace

// Re-bless with DTSIM_BLESS=1 after a deliberate change, and say why in the commit.
TEST_CASE("golden: the default scenario's table") {
  const auto r = dtsim("run");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto golden = src("tests/data/golden/default_run.txt");
  if (std::getenv("DTSIM_BLESS")) {
    std::ofstream(golden) << r.out;
    return;
  }
  CHECK(r.out == slurp(golden));
}

TEST_CASE("the default scenario: six configurations, DESIGN.md's fields, 175B does not fit, sane physics") {
  const auto rows = run_json("");
  REQUIRE(rows.is_array());
  REQUIRE(rows.size() == 6);
  for (const auto& r : rows) {
    for (const char* key : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "hw_tflops_per_gpu", "mfu", "hfu",
                            "scaling_efficiency"})
      CHECK(field(r, key) > 0);
    CHECK(r.at("gpus") == 8);
    CHECK(field(r, "tokens_per_s_per_gpu") == doctest::Approx(field(r, "tokens_per_s") / 8).epsilon(1e-12));
    CHECK(field(r, "hfu") > field(r, "mfu"));   // full recompute
    CHECK(field(r, "scaling_efficiency") <= 1.0);
    const auto& b = r.at("breakdown_s");
    const double parts = field(b, "compute") + field(b, "exposed_comm") + field(b, "pipeline_bubble") + field(b, "other") +
                         field(b, "interference");
    CHECK(parts == doctest::Approx(field(r, "step_time_s")).epsilon(1e-6));
    CHECK_FALSE(r.at("memory").at("fits").get<bool>());
    CHECK(field(r.at("memory"), "margin_bytes") < 0);
    CHECK(r.at("scenario").at("model").at("layers") == 96);
    CHECK(r.at("point").at("index").get<int>() >= 0);
    CHECK(r.at("network_model").get<std::string>().find("max-min with equal sharing penalties") != std::string::npos);
  }
  // Same per-GPU link budget: the switch is at least as fast as the ring, which beats the star's single hub.
  const double nvswitch = field(rows[0], "step_time_s"), ring = field(rows[2], "step_time_s"),
               star = field(rows[3], "step_time_s"), pcie = field(rows[4], "step_time_s"),
               ethernet = field(rows[5], "step_time_s");
  CHECK(nvswitch <= ring);
  CHECK(ring < star);
  CHECK(nvswitch < pcie);
  CHECK(pcie < ethernet);
  CHECK(field(rows[0], "scaling_efficiency") > field(rows[4], "scaling_efficiency"));
}

TEST_CASE("step time falls as link bandwidth rises") {
  const auto rows = run_json(src("tests/data/scenarios/small-tp4.yaml"));
  REQUIRE(rows.size() == 3);
  CHECK(field(rows[0], "step_time_s") > field(rows[1], "step_time_s"));
  CHECK(field(rows[1], "step_time_s") > field(rows[2], "step_time_s"));
  // Compute does not depend on the links; exposed communication does.
  CHECK(field(rows[0].at("breakdown_s"), "compute") == doctest::Approx(field(rows[2].at("breakdown_s"), "compute")));
  CHECK(field(rows[0].at("breakdown_s"), "exposed_comm") > field(rows[2].at("breakdown_s"), "exposed_comm"));
}

TEST_CASE("the analytic engine agrees with SimGrid where nothing contends") {
  const auto scenario = src("tests/data/scenarios/small-tp4.yaml");
  const auto simgrid = run_json(scenario + " --set simulation.collective_algo=ring");
  const auto analytic = run_json(scenario + " --set simulation.collective_algo=ring --set simulation.engine=analytic");
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(field(analytic[i], "step_time_s") == doctest::Approx(field(simgrid[i], "step_time_s")).epsilon(1e-6));
}

TEST_CASE("--out writes the result, its CSV, the resolved scenario and the trace") {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_out_" + std::to_string(::getpid()));
  const auto one = dtsim("run " + src("scenarios/models/gpt-22b-tp8.yaml") + " --out " + dir.string());
  REQUIRE_MESSAGE(one.status == 0, one.err);
  for (const char* f : {"result.json", "result.csv", "scenario.resolved.yaml", "trace.json"})
    CHECK(fs::exists(dir / f));
  const auto result = json::parse(slurp(dir / "result.json"));
  CHECK(result.is_object());
  const std::string csv = slurp(dir / "result.csv");
  CHECK(csv.starts_with("name,gpus,layout,tp,pp,dp,step_time_s,"));   // the plan beside each row
  CHECK(csv.find("breakdown_s.compute") != std::string::npos);
  CHECK(csv.find("memory.parts_bytes.params") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 2);
  const auto again = dtsim("run " + (dir / "scenario.resolved.yaml").string() + " --format json");
  REQUIRE(again.status == 0);
  CHECK(json::parse(again.out).at("step_time_s") == result.at("step_time_s"));
  fs::remove_all(dir);
}

TEST_CASE("the Perfetto trace: a process per GPU with compute and communication tracks, link counters") {
  const fs::path file = fs::temp_directory_path() / ("dtsim_trace_" + std::to_string(::getpid()) + ".json");
  const auto r = dtsim("run " + src("scenarios/models/gpt-22b-tp8.yaml") + " --trace " + file.string() +
                       " --trace-ranks all --trace-links");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto trace = json::parse(slurp(file));
  fs::remove(file);
  const auto& events = trace.at("traceEvents");
  std::set<int> gpus, compute_pids, comm_pids;
  int counters = 0;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name" && e.at("pid").get<int>() < 1'000'000) gpus.insert(e.at("pid").get<int>());
    if (ph == "X") {
      CHECK(e.at("ts").get<double>() >= 0);
      CHECK(e.at("dur").get<double>() >= 0);
      (e.at("tid") == 0 ? compute_pids : comm_pids).insert(e.at("pid").get<int>());   // compute: thread 0
    }
    if (ph == "C") {
      ++counters;
      CHECK(e.at("args").at("utilisation").get<double>() >= 0);
      CHECK(e.at("args").at("utilisation").get<double>() <= 1.0 + 1e-9);
    }
  }
  CHECK(gpus.size() == 8);
  CHECK(compute_pids.size() == 8);
  CHECK(comm_pids.size() == 8);
  CHECK(counters > 0);
}

TEST_CASE("collective: nccl-tests columns, busbw under the links' bound, the latency regime at small sizes") {
  const auto r = dtsim("collective --gpu a100-sxm4-80gb --gpus 8 --op allreduce --min 8 --max 1G --step-factor 32 --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto rows = json::parse(r.out);
  REQUIRE(rows.size() >= 5);
  for (const auto& row : rows) {
    CHECK(field(row, "busbw_GBps") <= 300.0);   // 12 NVLink3 x 25 GB/s per direction, line rate
    CHECK(field(row, "algbw_GBps") == doctest::Approx(field(row, "size_bytes") / field(row, "time_us") / 1e3));
  }
  CHECK(field(rows.front(), "time_us") > 5.0);                 // tens of microseconds: latency-bound
  CHECK(field(rows.back(), "busbw_GBps") > 50 * field(rows.front(), "busbw_GBps"));
  CHECK(rows.front().at("protocol").get<std::string>() == "ll");        // 8 bytes
  CHECK(rows.back().at("protocol").get<std::string>() == "simple");     // 1 GiB
  const auto table = dtsim("collective --gpu a100-sxm4-80gb --gpus 8 --min 1M --max 4M");
  CHECK(table.status == 0);
  CHECK(table.out.find("busbw") != std::string::npos);
  CHECK(table.out.find("# dtsim: ring/ll128 1048576 to 2097152 B; ring/simple 4194304 to 4194304 B") != std::string::npos);
}

TEST_CASE("collective: two DGX A100 nodes reach eight HDR NICs' bandwidth, one channel one NIC's (nccl.md)") {
  // nccl.md: about 24 GB/s per HDR NIC inter-node. NCCL's rings (one per GPU and NIC) add up to 8 x 24; a single
  // ring leaves each node through one NIC.
  const std::string cluster = "collective --gpu a100-sxm4-80gb --gpus 16 --nodes 2 --inter fat-tree --inter-link ib-hdr "
                              "--op allreduce --min 4G --max 4G --format json";
  const auto channels = dtsim(cluster);
  const auto single = dtsim(cluster + " --max-channels 1");
  REQUIRE_MESSAGE(channels.status == 0, channels.err);
  REQUIRE_MESSAGE(single.status == 0, single.err);
  const double all = field(json::parse(channels.out).at(0), "busbw_GBps");
  const double one = field(json::parse(single.out).at(0), "busbw_GBps");
  CHECK(all == doctest::Approx(8 * 24.0).epsilon(0.10));
  CHECK(one == doctest::Approx(24.0).epsilon(0.10));
}

TEST_CASE("collective: NCCL's channels cross InfiniBand leaves without colliding (D-mod-K), Ethernet hashes flows") {
  // 16 DGX A100 nodes span four 32-NIC leaves. InfiniBand routes by destination (D-mod-K), so the eight channels'
  // leaf crossings take different spines and the all-gather keeps most of its one-leaf bandwidth (4 nodes); a
  // hash of each flow, as Ethernet ECMP does, may put some of them on one spine (measured: 167 -> 54 GB/s).
  const auto busbw = [](const std::string& link, int nodes) {
    const auto r = dtsim(fmt::format("collective --gpu a100-sxm4-80gb --gpus {} --nodes {} --inter fat-tree "
                                     "--inter-link {} --op allgather --min 1G --max 1G --ecmp --format json",
                                     8 * nodes, nodes, link));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return field(json::parse(r.out).at(0), "busbw_GBps");
  };
  const double ib_leaf = busbw("ib-hdr", 4), ib_tree = busbw("ib-hdr", 16);
  const double eth_leaf = busbw("eth-200g", 4), eth_tree = busbw("eth-200g", 16);
  MESSAGE("ib-hdr: ", ib_leaf, " -> ", ib_tree, " GB/s; eth-200g: ", eth_leaf, " -> ", eth_tree, " GB/s");
  CHECK(ib_tree > 0.8 * ib_leaf);
  CHECK(eth_tree <= 1.05 * eth_leaf);   // a hash can only lose to one leaf; how much is the hash's business
}

TEST_CASE("collective and run refuse bad input with exit 2 and one line") {
  for (const std::string& args : std::vector<std::string>{"collective --gpu a100-sxm4-80gb --min 8X", "collective --gpu a100-sxm4-80gb --op reduce",
                                 "collective --gpu a100-sxm4-80gb --gpus 6 --algo halving-doubling",
                                 "collective --gpu a100-sxm4-80gb --algo nvls", "collective --gpu nope",
                                 "collective --gpu a100-sxm4-80gb --gpus 8 --nodes 3",
                                 "collective --gpu a100-sxm4-80gb --max-channels -1",
                                 "run " + src("scenarios/topologies/ring-8xa100.yaml"),
                                 "run " + src("scenarios/models/gpt-22b-tp8.yaml") + " --out /proc/dtsim-cannot-write",
                                 "run --trace /tmp/dtsim-one-point-only.json"}) {
    CAPTURE(args);
    const auto e = dtsim(args);
    CHECK(e.status == 2);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
}

TEST_CASE("run: a batch of more micro-batches than the engine holds is refused at once, naming the limit") {
  const fs::path dir = fresh_dir("run", "batch");
  fs::create_directories(dir);
  std::ofstream(dir / "b.yaml") << "cluster: {gpu: a100-sxm4-80gb}\nmodel: {preset: gpt-1.7b}\n"
                                   "training: {global_batch: 1000000000}\n";
  const auto e = dtsim("run " + (dir / "b.yaml").string());   // before: a billion micro-batches, then bad_alloc
  CHECK(e.status == 2);
  CHECK(e.err.find("training.global_batch: gives 125000000 micro-batches a data-parallel replica") != std::string::npos);
  CHECK(e.err.find("at most 100000 micro-batches a replica") != std::string::npos);
  CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
}

// Issue 20's collective defects: each was a row printed (0 bytes, inf and -nan, busbw above line rate), a silent
// cap, or an error naming a scenario key the user never wrote.
TEST_CASE("collective: sizes under a byte or past 2^50, one GPU, more than 200 rows and an --algo that cannot run are refused, naming the flag") {
  const std::string base = "collective --gpu a100-sxm4-80gb --gpus 8 ";
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {base + "--min 0.4 --max 1", "--min: is less than one byte"},
           {base + "--min 1e19 --max 1e19", "--min: is more than the engine times faithfully"},
           {base + "--min 8 --max 1e19", "--max: is more than the engine times faithfully"},
           {"collective --gpu a100-sxm4-80gb --gpus 1", "--gpus: is too few for a collective"},
           {base + "--min 1 --max 1G --step-factor 1.01", "--step-factor: gives 2090 sizes"},
           {base + "--intra ring --algo nvls --min 1M --max 1M", "--algo: this group's machines have no NVSwitch"}}) {
    CAPTURE(args);
    const auto e = dtsim(args);
    CHECK(e.status == 2);
    CHECK(e.out.empty());
    CHECK(e.err.find("dtsim: error: " + expect) == 0);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
  // The largest size times like a small one: the same bus bandwidth, under NVLink's line rate.
  const auto big = dtsim(base + "--min 1048576G --max 1048576G --format json");
  REQUIRE(big.status == 0);
  const auto rows = nlohmann::json::parse(big.out);
  const auto small = nlohmann::json::parse(dtsim(base + "--min 8G --max 8G --format json").out);
  CHECK(rows[0]["busbw_GBps"].get<double>() == doctest::Approx(small[0]["busbw_GBps"].get<double>()).epsilon(0.01));
}
