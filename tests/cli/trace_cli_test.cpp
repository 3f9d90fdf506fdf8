// `dtsim run --trace`: traces that a strict reader of the Trace Event Format accepts, small by default (one rank per
// pipeline stage, no link counters), with flows from each pipeline send to its receive.
#include <cstdlib>

#include "cli/cli_support.hpp"
#include "cli/trace_format.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

struct Traced {
  json trace;
  std::uintmax_t bytes = 0;
};

Traced traced_run(const std::string& scenario, const std::string& flags, const std::string& tag) {
  const fs::path file = fs::temp_directory_path() / fmt::format("dtsim_trace_{}_{}.json", tag, ::getpid());
  const auto r = dtsim("run " + src(scenario) + " --trace " + file.string() + " " + flags);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  Traced t{json::parse(slurp(file)), fs::file_size(file)};
  fs::remove(file);
  const auto problems = trace_format::errors(t.trace);
  for (const auto& p : problems) FAIL_CHECK(p);
  return t;
}

std::set<int> gpu_processes(const json& trace) {
  std::set<int> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name" && e.at("pid").get<int>() < 1'000'000) out.insert(e.at("pid").get<int>());
  return out;
}

int count(const json& trace, const std::string& ph) {
  return static_cast<int>(std::ranges::count_if(trace.at("traceEvents"), [&](const json& e) { return e.at("ph") == ph; }));
}

}  // namespace

TEST_CASE("trace: the 64-GPU GPT-3 step's default trace is one rank per pipeline stage, under 20 MB, with a flow per send") {
  // Without interleaving (vpp 1): one send per micro-batch and boundary; auto would interleave this pipeline.
  const auto t = traced_run("scenarios/models/gpt3-175b-64xa100.yaml", "--set parallelism.vpp=1", "64");
  MESSAGE("default trace of the 64-GPU step: " << t.bytes << " bytes");
  CHECK(t.bytes <= 20'000'000);
  CHECK(gpu_processes(t.trace) == std::set<int>{0, 8, 16, 24, 32, 40, 48, 56});   // tp 8 x pp 8, order tp-dp-pp
  CHECK(count(t.trace, "C") == 0);                                                 // no link counters unless asked
  // 32 micro-batches cross each of the 7 stage boundaries forward and backward: 448 sends, each with its arrow.
  CHECK(count(t.trace, "s") == 448);
  CHECK(count(t.trace, "f") == 448);
  // The receive slices sit on the receiver's receive track, one lane: they show data arriving, not waiting posted.
  std::set<int> receive_tids;
  for (const auto& e : t.trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("name").get<std::string>().starts_with("recv")) receive_tids.insert(e.at("tid").get<int>());
  CHECK(receive_tids == std::set<int>{300});
}

TEST_CASE("trace: --trace-ranks all or a list, --trace-links adds a utilisation counter per link direction") {
  const std::string scenario = "scenarios/models/gpt-22b-tp8.yaml";
  CHECK(gpu_processes(traced_run(scenario, "", "one").trace) == std::set<int>{0});
  const auto all = traced_run(scenario, "--trace-ranks all --trace-links", "all");
  CHECK(gpu_processes(all.trace).size() == 8);
  int counters = 0;
  for (const auto& e : all.trace.at("traceEvents"))
    if (e.at("ph") == "C") {
      ++counters;
      CHECK(e.at("args").at("utilisation").get<double>() <= 1.0 + 1e-3);
    }
  CHECK(counters > 0);
  CHECK(gpu_processes(traced_run(scenario, "--trace-ranks 0,3-4", "list").trace) == std::set<int>{0, 3, 4});
  // A pipeline: ranks 0 and 1 of a pp 2 run, their sends and receives joined by flows.
  const auto pp = traced_run("scenarios/models/gpt3-175b-64xa100.yaml",
                             "--set cluster.nodes=2 --set parallelism.pp=2 --set parallelism.vpp=1 --set model.layers=8 --trace-ranks 0,8",
                             "pp");
  CHECK(count(pp.trace, "s") == 64);   // 32 micro-batches, forward and backward
}

TEST_CASE("trace: bad --trace-ranks gets one line and exit 2, before the simulation") {
  const std::string run = "run " + src("scenarios/models/gpt-22b-tp8.yaml") + " --trace /tmp/dtsim_never.json --trace-ranks ";
  for (const auto& [ranks, expect] : std::vector<std::pair<std::string, std::string>>{
           {"x", "--trace-ranks: is not a rank list 'x' (allowed: stages, all, or ranks and ranges such as 0,8,16-23)"},
           {"5-2", "--trace-ranks: has a range that runs backwards (5-2): '5-2'"},
           {"0,8", "--trace-ranks: is not a rank of the cluster: '8' (allowed: ranks 0 to 7)"}}) {
    CAPTURE(ranks);
    const auto e = dtsim(run + ranks);
    CHECK(e.status == 2);
    CHECK(e.err.find("dtsim: error: " + expect) == 0);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
  CHECK(!fs::exists("/tmp/dtsim_never.json"));
  // Trace options without a trace to shape, and link counters from an engine that plays no transfers.
  const std::string scenario = src("scenarios/models/gpt-22b-tp8.yaml");
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"run " + scenario + " --trace-links", "--trace-links: shapes a trace, and none is written without"},
           {"run " + scenario + " --trace-ranks all", "--trace-ranks: shapes a trace, and none is written without 'all'"},
           {"run " + scenario + " --set simulation.engine=analytic --trace /tmp/dtsim_never.json --trace-links",
            "--trace-links: counts the transfers the SimGrid engine plays"}}) {
    CAPTURE(args);
    const auto e = dtsim(args);
    CHECK(e.status == 2);
    CHECK(e.err.find(expect) != std::string::npos);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
  CHECK(!fs::exists("/tmp/dtsim_never.json"));
}

TEST_CASE("trace: a --trace path ending in .gz is the same trace gzip-compressed, about a tenth of its size") {
  const fs::path dir = fresh_dir("trace", "gz");
  fs::create_directories(dir);
  const std::string run = "run " + src("scenarios/models/gpt-22b-tp8.yaml") + " --trace-ranks all --trace ";
  REQUIRE(dtsim(run + (dir / "t.json").string()).status == 0);
  REQUIRE(dtsim(run + (dir / "t.json.gz").string()).status == 0);
  const std::string plain = slurp(dir / "t.json"), packed = slurp(dir / "t.json.gz");
  REQUIRE(packed.size() > 2);
  CHECK(static_cast<unsigned char>(packed[0]) == 0x1f);   // gzip's magic number
  CHECK(static_cast<unsigned char>(packed[1]) == 0x8b);
  CHECK(packed.size() * 5 < plain.size());
  const std::string unpack = "gzip -dc " + (dir / "t.json.gz").string() + " > " + (dir / "unpacked.json").string();
  REQUIRE(std::system(unpack.c_str()) == 0);
  CHECK(slurp(dir / "unpacked.json") == plain);
  fs::remove_all(dir);
}
