// `dtsim report` end to end: gnuplot draws every chart the summary links, the data behind each chart are the
// rows' figures, the roofline sits on the GPU's ridge point, and bad directories are one-line errors.
#include <cstdlib>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

fs::path fresh_report(const std::string& tag) { return fresh_dir("report", tag); }

// The images report.md links, in order.
std::vector<std::string> linked_images(const std::string& markdown) {
  std::vector<std::string> out;
  const std::regex image(R"(!\[[^\]]*\]\(([^)]+)\))");
  for (auto it = std::sregex_iterator(markdown.begin(), markdown.end(), image); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// A PNG gnuplot drew: the signature and more than a blank canvas.
bool is_png(const fs::path& p) {
  const std::string bytes = slurp(p);
  return bytes.size() > 4000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

// Data lines (not comments, not blank) of a gnuplot data file.
std::vector<std::vector<std::string>> data_lines(const fs::path& p) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(slurp(p));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::istringstream fields(line);
    std::string c;
    while (std::getline(fields, c, '\t')) cells.push_back(c);
    out.push_back(cells);
  }
  return out;
}

std::vector<json> jsonl(const fs::path& p) { return json_lines(slurp(p)); }

// Every line of report.md's first table has the header's number of cells.
void check_table(const fs::path& dir) {
  std::istringstream in(slurp(dir / "report.md"));
  std::string line;
  long cells = -1;
  while (std::getline(in, line)) {
    if (!line.starts_with("| ")) {
      if (cells >= 0) break;   // the end of the first table
      continue;
    }
    std::string unescaped = line;
    for (auto at = unescaped.find("\\|"); at != std::string::npos; at = unescaped.find("\\|")) unescaped.erase(at, 2);
    const long n = std::count(unescaped.begin(), unescaped.end(), '|');
    if (cells < 0) cells = n;
    CHECK_MESSAGE(n == cells, line);
  }
  CHECK(cells > 5);
}

void check_charts(const fs::path& dir, std::size_t want) {
  const auto images = linked_images(slurp(dir / "report.md"));
  CHECK(images.size() == want);
  for (const auto& image : images) {
    CAPTURE(image);
    CHECK(is_png(dir / image));
    CHECK(fs::exists((dir / image).replace_extension(".gp")));   // the script that drew it, kept beside it
    // The same chart for a paper: SVG and PDF beside the PNG.
    CHECK(slurp((dir / image).replace_extension(".svg")).find("<svg") != std::string::npos);
    CHECK(slurp((dir / image).replace_extension(".pdf")).starts_with("%PDF"));
  }
}

}  // namespace

TEST_CASE("report: a scaling sweep gets every chart with the rows' figures behind it") {
  const fs::path dir = fresh_report("scaling");
  const Result r = dtsim("sweep " + src("tests/data/scenarios/sweep-scaling.yaml") + " --out " + dir.string());
  REQUIRE(r.status == 0);
  CHECK(r.err.find("report in " + dir.string() + "/report.md (6 charts)") != std::string::npos);
  // step time, throughput and MFU against the swept axis, breakdown, scaling, one roofline (one GPU type)
  check_charts(dir, 6);
  check_table(dir);
  const auto rows = jsonl(dir / "results.jsonl");
  REQUIRE(rows.size() == 3);
  const auto bars = data_lines(dir / "plots/rows.dat");
  REQUIRE(bars.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(bars[i][0] == std::to_string(i + 1));
    // A bar's label: the values that vary, not the whole point name.
    CHECK(bars[i][1] == "gpus_per_node=" + rows[i]["point"]["values"]["cluster.gpus_per_node"].dump());
    CHECK(std::stod(bars[i][3]) == doctest::Approx(rows[i]["step_time_s"].get<double>()).epsilon(1e-8));
    CHECK(std::stod(bars[i][7]) == doctest::Approx(100 * rows[i]["scaling_efficiency"].get<double>()).epsilon(1e-8));
  }
  // The scaling curve runs by GPU count (2, 4, 8), whatever the sweep order (8, 2, 4).
  const auto curve = data_lines(dir / "plots/scaling.dat");
  REQUIRE(curve.size() == 3);
  CHECK(curve[0][0] == "2");
  CHECK(curve[1][0] == "4");
  CHECK(curve[2][0] == "8");
  CHECK(std::stod(curve[0][3]) == doctest::Approx(100));   // strong scaling against the smallest: itself
  const std::string md = slurp(dir / "report.md");
  for (const auto& row : rows) CHECK(md.find("| " + row["name"].get<std::string>() + " |") != std::string::npos);
  // Redrawn from the files alone: `dtsim report DIR` gives the same summary.
  const std::string before = md;
  const Result again = dtsim("report " + dir.string());
  CHECK(again.status == 0);
  CHECK(slurp(dir / "report.md") == before);
  fs::remove_all(dir);
}

TEST_CASE("report: the roofline places the step's kernels against the GPU's ridge point") {
  const Result r = dtsim("run " + src("tests/data/scenarios/small-tp4.yaml") + " --format json");
  REQUIRE(r.status == 0);
  const json rows = json::parse(r.out);
  const json& rf = rows.at(0).at("roofline");
  // A100 80GB, bf16: 312 TFLOP/s over 2,039 GB/s.
  CHECK(rf["ridge_flop_per_byte"].get<double>() == doctest::Approx(312e12 / 2039e9));
  int gemms = 0;
  for (const auto& k : rf["kernels"]) {
    const double x = k["flop_per_byte"].get<double>();
    CHECK(x == doctest::Approx(k["bytes"].get<double>() > 0 ? k["flops"].get<double>() / k["bytes"].get<double>() : 0));
    CHECK(k["bound"] == (x >= rf["ridge_flop_per_byte"].get<double>() ? "compute" : "memory"));
    // No kernel beats its roof.
    CHECK(k["achieved_tflops"].get<double>() <=
          std::min(rf["peak_tflops"].get<double>(), x * rf["memory_bandwidth_GBps"].get<double>() / 1e3) * (1 + 1e-9));
    if (k["kernel"] == "qkv-gemm") ++gemms;
  }
  CHECK(gemms >= 2);   // forward and backward at least
}

TEST_CASE("report: two GPU types get two rooflines, one GPU count no scaling chart, a run directory its report") {
  const fs::path dir = fresh_report("default");
  REQUIRE(dtsim("sweep " + src("scenarios/default.yaml") + " --jobs 2 --out " + dir.string()).status == 0);
  check_charts(dir, 6);   // step time, throughput, MFU, breakdown, roofline of the SXM4 and of the PCIe card
  const std::string md = slurp(dir / "report.md");
  CHECK(md.find("No scaling chart: every simulated row has the same GPU count.") != std::string::npos);
  CHECK(md.find("(a100-pcie-80gb, bf16)") != std::string::npos);
  CHECK(md.find("| 8xa100-nvswitch | scaling_efficiency | 92.0 % |") != std::string::npos);   // the article's S15
  // One GPU count throughout: no strong or weak scaling, in the rows or the summary.
  for (const json& row : jsonl(dir / "results.jsonl")) {
    CHECK_FALSE(row.contains("strong_scaling_efficiency"));
    CHECK_FALSE(row.contains("weak_scaling_efficiency"));
  }
  CHECK(md.find("strong") == std::string::npos);
  // Every SXM4 row's kernels are on its roofline (four interconnects of one GPU), each in its own shape.
  const std::string sxm4 = slurp(dir / "plots" / "roofline-1.dat");
  for (const char* name : {"8xa100-nvswitch", "8xa100-full-mesh", "8xa100-ring", "8xa100-star"})
    CHECK_MESSAGE(sxm4.find(std::string("\t") + name + "\t") != std::string::npos, name);
  CHECK(md.find("Roofline of 4 rows (a100-sxm4-80gb, bf16): ridge point 153 FLOP/byte, each row's kernels in its own "
                "point shape") != std::string::npos);
  const fs::path run = fresh_report("run");
  REQUIRE(dtsim("run " + src("tests/data/scenarios/small-tp4.yaml") + " --out " + run.string()).status == 0);
  const Result r = dtsim("report " + run.string());
  CHECK(r.status == 0);
  check_charts(run, 5);   // three points on 4 GPUs each: the three line charts, breakdown, roofline; no scaling
  // --size column: the charts drawn one paper column wide (3.3 x 2.4 in; PNG at 200 pixels an inch).
  REQUIRE(dtsim("report " + run.string() + " --size column").status == 0);
  CHECK(slurp(run / "plots" / "size.gp").find("dtsim_w_in = 3.3") != std::string::npos);
  const std::string png = slurp(run / "plots" / "breakdown.png");
  REQUIRE(png.size() > 24);
  const auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned>(static_cast<unsigned char>(png[at])) << 24) |
           (static_cast<unsigned>(static_cast<unsigned char>(png[at + 1])) << 16) |
           (static_cast<unsigned>(static_cast<unsigned char>(png[at + 2])) << 8) |
           static_cast<unsigned>(static_cast<unsigned char>(png[at + 3]));
  };
  CHECK(be32(16) == 660);   // the IHDR's width and height
  CHECK(be32(20) == 480);
  CHECK(dtsim("report " + run.string() + " --size letter").status == 2);
  fs::remove_all(dir);
  fs::remove_all(run);
}

TEST_CASE("report: a sweep with invalid points lists them with their reasons in the table") {
  const fs::path dir = fresh_report("invalid");
  REQUIRE(dtsim("sweep " + src("tests/data/scenarios/sweep-invalid.yaml") + " --out " + dir.string()).status == 0);
  check_charts(dir, 4);
  check_table(dir);
  const std::string md = slurp(dir / "report.md");
  CHECK(md.find("From `results.jsonl`: 4 rows, 1 simulated.") != std::string::npos);
  CHECK(md.find("not simulated: ") != std::string::npos);
  CHECK(md.find("cannot be derived") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("report: --no-report, and what cannot be drawn, are said in one line") {
  const fs::path dir = fresh_report("bad");
  REQUIRE(dtsim("sweep " + src("tests/data/scenarios/sweep-scaling.yaml") + " --no-report --out " + dir.string()).status == 0);
  CHECK_FALSE(fs::exists(dir / "report.md"));
  // No gnuplot on PATH: status 2, naming the Debian package.
  const std::string cmd = "env PATH=/nonexistent " + std::string(DTSIM_BINARY) + " report " + dir.string() + " 2>/dev/null";
  CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 2);
  // gnuplot failing (a stand-in that complains on two lines): one line naming the script, no report.md linking
  // charts that were not drawn.
  {
    const fs::path fake = fresh_report("fake_gnuplot");
    fs::create_directories(fake);
    std::ofstream(fake / "gnuplot") << "#!/bin/sh\necho '  \"step_time.gp\" line 9: no valid points' >&2\necho more >&2\nexit 1\n";
    fs::permissions(fake / "gnuplot", fs::perms::owner_all);
    const std::string err = (fake / "err").string();
    const std::string run = "env PATH=" + fake.string() + ":/usr/bin:/bin " + std::string(DTSIM_BINARY) + " report " +
                            dir.string() + " 2>" + err;
    const int raw = std::system(run.c_str());
    CHECK(WEXITSTATUS(raw) == 3);
    const std::string said = slurp(err);
    CHECK(said.find("gnuplot failed on step_time.gp (\"step_time.gp\" line 9: no valid points;") != std::string::npos);
    CHECK(std::count(said.begin(), said.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(dir / "report.md"));
    fs::remove_all(fake);
  }
  // A torn line: its file and line, status 2.
  {
    std::ofstream(dir / "results.jsonl", std::ios::app) << "{\"name\": \"torn";
  }
  const Result torn = dtsim("report " + dir.string());
  CHECK(torn.status == 2);
  CHECK(torn.err.find("results.jsonl:4") != std::string::npos);
  CHECK(std::count(torn.err.begin(), torn.err.end(), '\n') == 1);
  // Only error rows: nothing to draw.
  {
    std::ofstream(dir / "results.jsonl") << R"({"name": "x", "point": {"index": 0}, "error": "does not load"})" << "\n";
  }
  const Result none = dtsim("report " + dir.string());
  CHECK(none.status == 2);
  CHECK(none.err.find("no simulated row") != std::string::npos);
  // Rows written by hand: each malformed one is named with its file and line, status 2, one line.
  const fs::path src_dir = fresh_report("source");
  REQUIRE(dtsim("sweep " + src("tests/data/scenarios/sweep-scaling.yaml") + " --no-report --out " + src_dir.string()).status == 0);
  const json base = jsonl(src_dir / "results.jsonl").at(0);
  const std::vector<std::pair<std::string, std::function<void(json&)>>> broken = {
      {"no `breakdown_s` object", [](json& r) { r.erase("breakdown_s"); }},
      {"no string `name`", [](json& r) { r["name"] = 5; }},
      {"`memory` needs a boolean `fits`", [](json& r) { r["memory"] = nullptr; }},
      {"`roofline` needs numbers", [](json& r) { r["roofline"].erase("kernels"); }},
      {"`reference.tokens_per_day` names no figure of the row", [](json& r) { r["reference"]["tokens_per_day"] = 3; }},
      {"`error` is not a string", [](json& r) { r = {{"name", "x"}, {"error", {{"why", 1}}}}; }},
      {"no number `mfu`", [](json& r) { r.erase("mfu"); }},
  };
  for (const auto& [expect, edit] : broken) {
    CAPTURE(expect);
    json row = base;
    edit(row);
    std::ofstream(dir / "results.jsonl") << base.dump() << "\n" << row.dump() << "\n";
    const Result bad = dtsim("report " + dir.string());
    CHECK(bad.status == 2);
    CHECK(bad.err.find(expect) != std::string::npos);
    CHECK(bad.err.find("results.jsonl:2") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  }
  // Names gnuplot would read as a comment or an escape are still drawn, one bar each.
  {
    json hash = base, slash = base;
    hash["name"] = "#1 baseline";
    slash["name"] = "back\\slash";
    std::ofstream(dir / "results.jsonl") << hash.dump() << "\n" << slash.dump() << "\n";
  }
  REQUIRE(dtsim("report " + dir.string()).status == 0);
  const auto bars = data_lines(dir / "plots/rows.dat");
  REQUIRE(bars.size() == 2);
  CHECK(bars[0][1] == "#1 baseline");
  CHECK(bars[1][1] == "back/slash");
  fs::remove_all(src_dir);
  // Not a results directory.
  const Result empty = dtsim("report " + fresh_report("empty").string());
  CHECK(empty.status == 2);
  CHECK(empty.err.find("neither compare.json, results.jsonl nor result.json") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("report: a sweep's line charts: x, a line per series, a panel per facet, infeasible points marked") {
  const fs::path dir = fresh_report("lines");
  REQUIRE(dtsim("sweep " + src("tests/data/scenarios/sweep-lines.yaml") + " --jobs 2 --no-report --out " + dir.string()).status == 0);
  // The defaults: x the first numeric axis, a line per value of every other axis.
  const Result plain_report = dtsim("report " + dir.string());
  REQUIRE_MESSAGE(plain_report.status == 0, plain_report.err);
  CHECK(slurp(dir / "report.md").find("Along the sweep: x: `parallelism.tp`; lines: `cluster.gpu`, `training.micro_batch`; "
                                      "panels: none.") != std::string::npos);
  const Result r = dtsim("report " + dir.string() + " --x parallelism.tp --series training.micro_batch --facet cluster.gpu");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_charts(dir, 6);
  const std::string md = slurp(dir / "report.md");
  CHECK(md.find("Along the sweep: x: `parallelism.tp`; lines: `training.micro_batch`; panels: `cluster.gpu`.") != std::string::npos);
  const std::string gp = slurp(dir / "plots/step_time.gp");
  CHECK(gp.find("set multiplot layout 1,2") != std::string::npos);             // two GPUs, two panels
  // Text from the sweep in single-quoted gnuplot strings (data, whatever it holds).
  CHECK(gp.find("set title 'gpu=a100-sxm4-40gb'") != std::string::npos);
  CHECK(gp.find("set xlabel 'tensor-parallel size (tp)'") != std::string::npos);
  CHECK(gp.find("set ylabel 'step time (s)'") != std::string::npos);
  CHECK(gp.find("title 'micro_batch'") != std::string::npos);                 // the key names the series
  CHECK(gp.find("title \"does not fit in memory\"") != std::string::npos);
  // sweep.dat: 2 panels x 3 micro-batches, the error rows (micro-batch 4 at tp 1) left out, 3 points where all ran.
  const auto points = data_lines(dir / "plots/sweep.dat");
  CHECK(points.size() == 16);
  int infeasible = 0;
  for (const auto& p : points) infeasible += p[4] == "0";
  CHECK(infeasible == 3);   // the 40 GB card: tp 1 at micro-batch 1 and 2, tp 2 at micro-batch 4
  const Result bad = dtsim("report " + dir.string() + " --x training.global_batch");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--x: is not an axis that varies in these rows: 'training.global_batch' (allowed: cluster.gpu, "
                     "parallelism.tp, training.micro_batch)") != std::string::npos);
  CHECK(dtsim("report " + dir.string() + " --x parallelism.tp --facet parallelism.tp").status == 2);
  // Panels by tp and no --x: x is the next numeric axis, not the one the panels take.
  REQUIRE(dtsim("report " + dir.string() + " --facet parallelism.tp").status == 0);
  CHECK(slurp(dir / "report.md").find("x: `training.micro_batch`; lines: `cluster.gpu`; panels: `parallelism.tp`") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("report: a sweep over whole clusters scales per series: one curve per fabric, not one through every row") {
  const fs::path dir = fresh_report("clusters");
  const std::string yaml = dir.string() + ".yaml";
  std::ofstream(yaml) << "name: clusters\ncluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch, inter: fat-tree}\n"
                         "model: {layers: 8, hidden: 4096, heads: 32, ffn_hidden: 16384, vocab: 51200, seq_length: 2048}\n"
                         "training: {global_batch: 64, micro_batch: 1}\nparallelism: {tp: 8}\nsimulation: {engine: analytic}\n"
                         "sweep:\n  cluster:\n"
                         "    - {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, nodes: 1}\n"
                         "    - {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, nodes: 4}\n"
                         "  cluster.inter_link: [ib-hdr, eth-100g]\n";
  REQUIRE(dtsim("sweep " + yaml + " --out " + dir.string()).status == 0);
  const std::string scaling = slurp(dir / "plots/scaling.dat");
  CHECK(scaling.find("# curve 0: cluster.inter_link=ib-hdr") != std::string::npos);
  CHECK(scaling.find("# curve 1: cluster.inter_link=eth-100g") != std::string::npos);
  CHECK(data_lines(dir / "plots/scaling.dat").size() == 4);
  CHECK(slurp(dir / "report.md").find("x: `gpus`") != std::string::npos);   // no numeric axis: along the GPU count
  fs::remove_all(dir);
  fs::remove(yaml);
}

// Names travel in shared scenario files: whatever a sweep's names hold, every writer keeps them data. Back-quotes
// and $( ) (shell and gnuplot command substitution), system("...") and @macros (gnuplot), quotes, newlines, '|'
// (Markdown), '..', a formula (spreadsheets) and long text go through a training and a serving sweep; gnuplot
// draws every chart from the scripts, and no command runs.
TEST_CASE("report: hostile names in a sweep run nothing, and every chart is still drawn") {
  const fs::path dir = fresh_report("hostile");
  fs::create_directories(dir);
  const std::string ran = (dir / "ran").string();   // a command that runs creates it
  const std::vector<std::string> names = {
      "a`touch " + ran + "`",
      "b$(touch " + ran + ")",
      "c system(\"touch " + ran + "\") 'single' \"double\"",
      "d @ext @name\nsecond line\tand a tab | pipe ../..",
      "=HYPERLINK(\"http://x\")",
      std::string(300, 'L') + "`touch " + ran + "`"};
  const auto sweep = [&](const std::string& tag, const std::string& body, const std::string& zip) {
    const fs::path f = dir / (tag + ".yaml");
    std::ofstream(f) << body << "sweep:\n  zip:\n    name: " << json(names).dump() << "\n" << zip;
    const fs::path out = dir / tag;
    const Result r = dtsim("sweep " + f.string() + " --out " + out.string());
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    const std::smatch m = [&] {
      std::smatch found;
      REQUIRE(std::regex_search(r.err, found, std::regex(R"(\((\d+) charts\))")));
      return found;
    }();
    check_charts(out, std::stoul(m[1]));
    return out;
  };
  const fs::path training = sweep("training", R"(name: hostile
cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}
model: {preset: gpt-1.7b}
training: {global_batch: 16, micro_batch: 1, recompute: none}
parallelism: {tp: 2}
simulation: {engine: analytic}
)", "    parallelism.tp: [1, 2, 4, 8, 2, 4]\n");
  check_table(training);
  const fs::path serving = sweep("serving", R"(name: hostile
cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 1, intra: nvswitch}
model: {preset: llama2-7b}
inference:
  requests: {prompt_tokens: 256, output_tokens: 32, rate_per_s: 1, duration_s: 10, seed: 3}
)", "    inference.requests.rate_per_s: [1, 2, 4, 1, 2, 4]\n");
  CHECK_FALSE(fs::exists(ran));
  // Spreadsheets read a cell that starts with '=' as a formula: the CSV writes it as text.
  for (const fs::path& out : {training, serving}) {
    const std::string csv = slurp(out / "results.csv");
    CHECK(csv.find("\n\"'=HYPERLINK(\"\"http://x\"\")\",") != std::string::npos);
    CHECK(csv.find("\n=") == std::string::npos);
  }
  fs::remove_all(dir);
}
