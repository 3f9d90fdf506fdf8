// The program as a user runs it: exit status, one-line errors, JSON output, --set, --dot.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "cli/cli_support.hpp"

using namespace cli_support;

TEST_CASE("every malformed scenario gives exit 2 and its one-line message") {
  const auto files = files_in("tests/data/scenarios/bad");
  REQUIRE(files.size() >= 20);
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    const std::string first = slurp(f).substr(0, slurp(f).find('\n'));
    REQUIRE(first.starts_with("# expect: "));
    const std::string expect = first.substr(10);
    Result r = dtsim("topo " + f.string());
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(expect) != std::string::npos);
    CHECK(r.err.starts_with("dtsim: error: "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("topo works on a scenario per builder, with DESIGN.md's JSON keys") {
  const auto files = files_in("scenarios/topologies");
  REQUIRE(files.size() >= 9);
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    Result r = dtsim("topo " + f.string() + " --format json");
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"gpus", "switches", "links", "diameter_hops", "injection_GBps_per_gpu", "bisection_GBps"})
      CHECK(j.contains(key));
    CHECK(j["gpus"].get<int>() >= 4);
    CHECK(j["bisection_GBps"].get<double>() > 0);
  }
  Result table = dtsim("topo " + src("scenarios/topologies/pcie-8xa100.yaml"));
  CHECK(table.status == 0);
  CHECK(table.out.find("12.7 GB/s (exact)") != std::string::npos);   // the Ice Lake sockets' link
}

TEST_CASE("--set overrides a key, and a bad override is an input error") {
  Result r = dtsim("topo " + src("scenarios/topologies/ring-8xa100.yaml") + " --set cluster.intra=nvswitch --format json");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["bisection_GBps"].get<double>() == doctest::Approx(1200));
  Result bad = dtsim("topo " + src("scenarios/topologies/ring-8xa100.yaml") + " --set cluster.intra=hypercube");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--set: cluster.intra: unknown value 'hypercube'") != std::string::npos);
  Result malformed = dtsim("topo " + src("scenarios/topologies/ring-8xa100.yaml") + " --set nokey");
  CHECK(malformed.status == 2);
}

TEST_CASE("--dot writes a graph that names every GPU") {
  const fs::path dot = fs::temp_directory_path() / ("dtsim_cli_test_" + std::to_string(::getpid()) + ".dot");
  Result r = dtsim("topo " + src("scenarios/topologies/star-4xa100.yaml") + " --dot " + dot.string());
  REQUIRE(r.status == 0);
  const std::string text = slurp(dot);
  fs::remove(dot);
  CHECK(text.starts_with("graph"));
  for (const char* n : {"gpu0", "gpu1", "gpu2", "gpu3", "hub"}) CHECK(text.find(n) != std::string::npos);
}

TEST_CASE("topo on the default scenario compares its six interconnects side by side") {
  Result r = dtsim("topo " + src("scenarios/default.yaml") + " --format json");
  REQUIRE(r.status == 0);
  auto rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.is_array());
  CHECK(rows.size() == 6);
  CHECK(rows[0]["bisection_GBps"].get<double>() > rows[2]["bisection_GBps"].get<double>());   // nvswitch > ring
  CHECK(rows[2]["bisection_GBps"].get<double>() >= rows[3]["bisection_GBps"].get<double>());  // ring >= star
  Result table = dtsim("topo " + src("scenarios/default.yaml"));
  CHECK(table.status == 0);
  CHECK(table.out.find("8xa100-100gbe") != std::string::npos);
  CHECK(table.out.find("bisection") != std::string::npos);
}

TEST_CASE("catalog lists GPUs and links, as a table and as JSON") {
  Result r = dtsim("catalog --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"].size() >= 10);
  CHECK(j["links"].size() >= 14);
  CHECK(dtsim("catalog").out.find("h200-sxm-141gb") != std::string::npos);
  // Each architecture's two fused-attention kernels: on Hopper FlashAttention-2 runs below cuDNN's, on Ampere they
  // are the one kernel.
  std::map<std::string, nlohmann::json> arch;
  for (const auto& a : j["compute"]["architectures"]) arch[a["name"].get<std::string>()] = a;
  CHECK(arch.at("hopper")["flash2_forward"].get<double>() < arch.at("hopper")["flash_forward"].get<double>());
  CHECK(arch.at("ampere")["flash2_forward"].get<double>() == arch.at("ampere")["flash_forward"].get<double>());
  CHECK(dtsim("catalog").out.find("fa2_fw") != std::string::npos);
}

TEST_CASE("bad arguments exit 2 with one line") {
  for (const char* args : {"topo", "frobnicate", "catalog --format xml", "topo /no/such/file.yaml"}) {
    CAPTURE(args);
    Result r = dtsim(args);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("memory refuses a scenario without a model section: exit 2, one line") {
  for (const char* format : {"", " --format json"}) {
    Result r = dtsim("memory " + src("scenarios/topologies/ring-8xa100.yaml") + format);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.starts_with("dtsim: error: "));
    CHECK(r.err.find("ring-8xa100.yaml: model: missing section: the memory command needs a model section") !=
          std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(dtsim("memory").status == 2);   // the scenario file is required
}

namespace {

// The fit verdict of each document of a claim scenario, in order (the headers of the files say why).
struct ClaimFits {
  const char* file;
  std::vector<bool> fits;
};

const std::vector<ClaimFits> kMemoryClaims = {
    {"s01-70b-training-states.yaml", {false, false}},
    {"s03-quantisation-saving.yaml", {true, true, true, true}},
    {"s04-llama-70b-weights.yaml", {true, true, false, true}},
    {"s05-7b-training-a100.yaml", {false, false}},
    {"s06-memory-savings.yaml", {true, true, true, true, true}},
    {"s07-llama-7b-128k-kv-cache.yaml", {true, false, true}},
    {"s13-700b-int4-mi300x.yaml", {false, true}},
    {"s14-70b-int4-rtx4090.yaml", {false}},
    {"tests/data/s19-sizing-candidates.yaml", {false, false, true, false, true, false, true, true, false, false, false, true, true}},
    {"s09-gpt3-175b-decode.yaml", {false, false, true}},   // one H100 holds neither; eight do
    {"s18-70b-gradient-sync.yaml", {false}},
    {"s21-rules-of-thumb.yaml", {true, true, true}},
};

nlohmann::json memory_json(const std::string& claim, const std::string& extra = "") {
  const std::string file = claim.starts_with("tests/") ? src(claim) : src("scenarios/claims/" + claim);
  Result r = dtsim("memory " + file + " --format json" + extra);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  auto j = nlohmann::json::parse(r.out);
  return j.is_array() ? j : nlohmann::json::array({j});
}

double sum_parts(const nlohmann::json& m) {
  double total = 0;
  for (const auto& [name, bytes] : m["parts_bytes"].items()) total += bytes.get<double>();
  return total;
}

}  // namespace

TEST_CASE("memory on the claim scenarios: DESIGN.md's memory object and the expected verdicts") {
  for (const auto& claim : kMemoryClaims) {
    CAPTURE(claim.file);
    const auto plans = memory_json(claim.file);
    REQUIRE(plans.size() == claim.fits.size());
    for (std::size_t i = 0; i < plans.size(); ++i) {
      CAPTURE(i);
      const auto& m = plans[i];
      for (const char* key : {"per_gpu_bytes", "capacity_bytes", "margin_bytes", "fits", "parts_bytes", "stage",
                              "in_flight_micro_batches", "notes"})
        CHECK(m.contains(key));
      for (const char* part : {"params", "grads", "optimizer", "activations", "kv_cache", "buffers"})
        CHECK(m["parts_bytes"].contains(part));
      CHECK(m["fits"].get<bool>() == claim.fits[i]);
      CHECK((m["margin_bytes"].get<double>() >= 0) == claim.fits[i]);
      CHECK(m["per_gpu_bytes"].get<double>() == doctest::Approx(sum_parts(m)).epsilon(1e-12));
      CHECK(m["notes"].size() == 6);
    }
  }
}

TEST_CASE("memory: the claims' headline numbers through the command") {
  // S7: 2 x 32 layers x 4096 x 131072 tokens x 2 B = 2^36 B of bf16 KV cache; fp32 doubles it.
  const auto s7 = memory_json("s07-llama-7b-128k-kv-cache.yaml");
  CHECK(s7[0]["parts_bytes"]["kv_cache"].get<double>() == 68719476736.0);
  CHECK(s7[1]["parts_bytes"]["kv_cache"].get<double>() == 2 * 68719476736.0);
  // S1: 16 B/param of LLaMA-2-70B's 68,976,648,192 parameters with bf16 grads, 18 with fp32.
  const auto s1 = memory_json("s01-70b-training-states.yaml");
  const auto states = [](const nlohmann::json& m) {
    const auto& p = m["parts_bytes"];
    return p["params"].get<double>() + p["grads"].get<double>() + p["optimizer"].get<double>();
  };
  CHECK(states(s1[0]) == 16.0 * 68976648192.0);
  CHECK(states(s1[1]) == 18.0 * 68976648192.0);
  // S3: int8 weights are a quarter of fp32's.
  const auto s3 = memory_json("s03-quantisation-saving.yaml");
  CHECK(s3[2]["parts_bytes"]["params"].get<double>() * 4 == s3[0]["parts_bytes"]["params"].get<double>());
  // S19 with pipeline parallelism: stage 0 holds pp micro-batches (1F1B).
  const auto s19 = memory_json("tests/data/s19-sizing-candidates.yaml");
  CHECK(s19[4]["in_flight_micro_batches"].get<int>() == 4);
  CHECK(s19[6]["in_flight_micro_batches"].get<int>() == 8);
}

TEST_CASE("memory prints a table with the verdict and the shortfall") {
  Result r = dtsim("memory " + src("scenarios/claims/s04-llama-70b-weights.yaml"));
  REQUIRE(r.status == 0);
  for (const char* text : {"s04-llama2-70b-int4-1xrtx4090: memory per GPU on rtx4090", "params", "kv_cache",
                           "capacity", "22.50 GiB", "does not fit: short by 10.87 GiB", "verdict      fits"})
    CHECK(r.out.find(text) != std::string::npos);
  Result one = dtsim("memory " + src("scenarios/claims/s14-70b-int4-rtx4090.yaml") + " --format json");
  REQUIRE(one.status == 0);
  CHECK(nlohmann::json::parse(one.out).is_object());   // one document: one object
}

TEST_CASE("memory checks the plan against the cluster, naming the key and where it was given") {
  Result set = dtsim("memory " + src("scenarios/claims/s14-70b-int4-rtx4090.yaml") + " --set parallelism.dp=2");
  CHECK(set.status == 2);
  CHECK(set.err.find("--set: parallelism.dp:") != std::string::npos);
  CHECK(std::count(set.err.begin(), set.err.end(), '\n') == 1);

  const fs::path bad = fs::temp_directory_path() / ("dtsim_cli_test_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(bad) << "name: bad-tp\ncluster: {gpu: a100-sxm4-80gb, gpus_per_node: 3, intra: full-mesh}\n"
                        "model: {preset: llama2-7b}\ninference: {batch: 1}\nparallelism:\n  tp: 3\n";
  Result r = dtsim("memory " + bad.string());
  fs::remove(bad);
  CHECK(r.status == 2);
  CHECK(r.err.find(bad.string() + ":6: parallelism.tp: does not divide model.heads 32") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("a directory, a device or a FIFO as the scenario is refused at once: exit 2, one line") {
  const fs::path dir = fresh_dir("cli", "special");
  fs::create_directories(dir);
  const fs::path fifo = dir / "fifo.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {dir.string(), std::string("/dev/zero"), fifo.string()}) {
    CAPTURE(path);
    const Result r = dtsim("run " + path);   // before the fix, /dev/zero and the FIFO never returned
    CHECK(r.status == 2);
    CHECK(r.err.find("scenario: is ") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("writes: standard output that cannot be written is the one-line error and status 2, not a silent 0") {
  // /dev/full refuses every write: a result printed there is lost, and the script that asked must know.
  const std::string quick = " --set simulation.engine=analytic";   // the engine does not matter here, only the writing
  for (const std::string& command : std::vector<std::string>{"run --format json" + quick, "run" + quick, "catalog",
                                                             "validate --only 1.7b-32 --format json",
                                                             "run " + src("scenarios/default.yaml") + " --format csv" + quick}) {
    CAPTURE(command);
    const Result r = dtsim(command + " > /dev/full");
    CHECK(r.status == 2);
    CHECK(r.err.find("dtsim: error: standard output: cannot write (write failed: ") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const Result fine = dtsim("catalog > /dev/null");
  CHECK(fine.status == 0);
  CHECK(fine.err.empty());
}

TEST_CASE("writes: a failed write of a small file is an error naming errno, a file is replaced whole with no temporary left") {
  const std::string topo = "topo " + src("scenarios/topologies/ring-8xa100.yaml");
  const Result full = dtsim(topo + " --dot /dev/full");   // the DOT is a few hundred bytes: a buffered write
  CHECK(full.status == 2);
  CHECK(full.err.find("--dot: cannot write file (write failed: No space left on device) '/dev/full'") != std::string::npos);
  CHECK(std::count(full.err.begin(), full.err.end(), '\n') == 1);
  const Result nowhere = dtsim(topo + " --dot /nonexistent-dir/x.dot");
  CHECK(nowhere.status == 2);
  CHECK(nowhere.err.find("open failed: No such file or directory") != std::string::npos);
  const fs::path dir = fresh_dir("cli", "writes");
  fs::create_directories(dir);
  std::ofstream(dir / "g.dot") << "old";
  REQUIRE(dtsim(topo + " --dot " + (dir / "g.dot").string()).status == 0);
  CHECK(slurp(dir / "g.dot").starts_with("graph"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  const Result into_dir = dtsim(topo + " --dot " + dir.string());
  CHECK(into_dir.status == 2);
  CHECK(into_dir.err.find("is a directory") != std::string::npos);
  // A disk that fills while `run --out` writes: the one-line error names the file and errno, no temporary is left.
  const fs::path out = dir / "out";
  const Result filled = dtsim("run " + src("scenarios/default.yaml") + " --out " + out.string(), disk_full_after(4096));
  CHECK(filled.status == 2);
  CHECK(filled.err.find("cannot write file (write failed: File too large)") != std::string::npos);
  CHECK(std::count(filled.err.begin(), filled.err.end(), '\n') == 1);
  for (const auto& e : fs::directory_iterator(out)) CHECK(e.path().extension() != ".tmp");
}

TEST_CASE("errors that help: did you mean for commands, options, keys and catalog names, tp against heads named first") {
  const std::string scenario = src("scenarios/models/gpt-22b-tp8.yaml");
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"rn", "dtsim: error: command: unknown command 'rn' (allowed: run, sweep"},
           {"rn", "; did you mean 'run'?"},
           {"run --formt json", "not expected: --formt; did you mean '--format'?"},
           {"run " + scenario + " --set model.hiden=4", "model.hiden: unknown key 'hiden' (allowed: "},
           {"run " + scenario + " --set model.hiden=4", "; did you mean 'hidden'?"},
           {"run " + scenario + " --set cluster.gpu=h100-sxm-80gb", "; did you mean 'h100-sxm5-80gb'?"},
           {"run " + scenario + " --set cluster.intra=nvswich", "; did you mean 'nvswitch'?"},
           {"run " + scenario + " --set model.preset=llama3-7b", "; did you mean 'llama-7b', 'llama2-7b' or 'llama3-8b'?"},
           {"collective --gpu a100-sxm4-80gb --op allreduc", "; did you mean 'allreduce'?"},
           // tp 5 fits no GPU count either, but the model's 64 heads are what tp must divide.
           {"run " + scenario + " --set parallelism.tp=5", "parallelism.tp: does not divide model.heads 64: tp '5'"},
           {"run " + scenario + " --set parallelism.tp=16", "tp x pp = 16 x 1 = 16 is more than the cluster's 8 GPUs"}}) {
    CAPTURE(args);
    const auto e = dtsim(args);
    CHECK(e.status == 2);
    CHECK(e.err.find(expect) != std::string::npos);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
}
