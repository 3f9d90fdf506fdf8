// The program as a user runs it: exit status, one-line errors, JSON output, --set, --dot.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Result {
  int status;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Result dtsim(const std::string& args) {
  const fs::path err = fs::temp_directory_path() / ("dtsim_cli_test_" + std::to_string(::getpid()) + ".err");
  const std::string cmd = std::string(DTSIM_BINARY) + " " + args + " 2>" + err.string();
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  Result r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, out, slurp(err)};
  fs::remove(err);
  return r;
}

std::string src(const std::string& rel) { return std::string(DTSIM_SOURCE_DIR) + "/" + rel; }

std::vector<fs::path> files_in(const std::string& rel) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(src(rel)))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

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
  CHECK(table.out.find("62.4 GB/s (exact)") != std::string::npos);
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

TEST_CASE("run with no file compares the default cluster on six interconnects") {
  Result r = dtsim("run --format json");
  REQUIRE(r.status == 0);
  auto rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.is_array());
  CHECK(rows.size() == 6);
  CHECK(rows[0]["bisection_GBps"].get<double>() > rows[2]["bisection_GBps"].get<double>());   // nvswitch > ring
  CHECK(rows[2]["bisection_GBps"].get<double>() >= rows[3]["bisection_GBps"].get<double>());  // ring >= star
  Result table = dtsim("run");
  CHECK(table.status == 0);
  CHECK(table.out.find("8xa100-100gbe") != std::string::npos);
}

TEST_CASE("catalog lists GPUs and links, as a table and as JSON") {
  Result r = dtsim("catalog --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"].size() >= 10);
  CHECK(j["links"].size() >= 14);
  CHECK(dtsim("catalog").out.find("h200-sxm-141gb") != std::string::npos);
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
