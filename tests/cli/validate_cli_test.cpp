// `dtsim validate` end to end: per row the published figure, dtsim's (the same as `run` gives) and the error
// dtsim / published - 1; per table the mean and the largest absolute error; a scenario without published
// figures is an input error.
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli_support.hpp"
#include "cli/validate_support.hpp"

using namespace cli_support;
using nlohmann::json;
using namespace validate_support;

TEST_CASE("validate: each published figure beside run's, with the error, and the table's mean and max") {
  const std::string file = src("tests/data/scenarios/validation-small.yaml");
  const auto [report, runs] = validate_and_run(file);
  REQUIRE(report.at("tables").size() == 1);
  const json& table = report.at("tables").at(0);
  CHECK(table.at("source") == "made-up figures for the tests");
  // two points: hw_tflops_per_gpu on both, step_time_s on the first only (null on the second)
  REQUIRE(table.at("rows").size() == 3);
  double sum = 0, worst = 0;
  for (const json& row : table.at("rows")) {
    CAPTURE(row.dump());
    const std::string name = row.at("name");
    const std::string figure = row.at("figure");
    const json& run = name == "slow-links" ? runs.at(0) : runs.at(1);
    REQUIRE(run.at("name") == name);
    const double published = run.at("reference").at(figure).get<double>();
    const double simulated = run.at(figure).get<double>();
    CHECK(row.at("published").get<double>() == published);
    CHECK(row.at("dtsim").get<double>() == doctest::Approx(simulated).epsilon(1e-12));
    CHECK(row.at("error").get<double>() == doctest::Approx(simulated / published - 1).epsilon(1e-12));
    sum += std::abs(simulated / published - 1);
    worst = std::max(worst, std::abs(simulated / published - 1));
  }
  CHECK(table.at("mean_abs_error").get<double>() == doctest::Approx(sum / 3).epsilon(1e-12));
  CHECK(table.at("max_abs_error").get<double>() == doctest::Approx(worst).epsilon(1e-12));
  const auto text = dtsim("validate " + file);
  REQUIRE(text.status == 0);
  CHECK(text.out.find("mean absolute error") != std::string::npos);
  CHECK(text.out.find("slow-links") != std::string::npos);
}

// A ratio row (one benchmark measured on two systems): dtsim's ratio is the row's figure over its baseline's,
// both as `run` gives them; the baseline, without a figure of its own, runs but is no row; `run` does not print a
// ratio beside an absolute figure.
TEST_CASE("validate: a ratio row's dtsim figure is its run figure over its baseline's") {
  const std::string file = src("tests/data/scenarios/validation-ratio.yaml");
  const auto [report, runs] = validate_and_run(file);
  REQUIRE(runs.size() == 2);
  const json& rows = report.at("tables").at(0).at("rows");
  REQUIRE(rows.size() == 1);
  CHECK(rows.at(0).at("name") == "fast-links / slow-links");
  CHECK(rows.at(0).at("figure") == "tokens_per_s ratio");
  CHECK(rows.at(0).at("published").get<double>() == 1.5);
  const double ratio = runs.at(1).at("tokens_per_s").get<double>() / runs.at(0).at("tokens_per_s").get<double>();
  CHECK(ratio > 1.0);   // faster links, more tokens: a real ratio, not 1 by construction
  CHECK(rows.at(0).at("dtsim").get<double>() == doctest::Approx(ratio).epsilon(1e-12));
  CHECK(rows.at(0).at("error").get<double>() == doctest::Approx(ratio / 1.5 - 1).epsilon(1e-12));
  CHECK(runs.at(1).at("reference").size() == 1);   // the source only: 1.5 is not an absolute figure
  // --only the ratio row still runs its baseline.
  const auto only = dtsim("validate " + file + " --only fast-links --format json");
  REQUIRE_MESSAGE(only.status == 0, only.err);
  CHECK(json::parse(only.out).at("tables").at(0).at("rows").at(0).at("dtsim").get<double>() ==
        doctest::Approx(ratio).epsilon(1e-12));
  const auto bad = dtsim("validate " + src("tests/data/scenarios/validation-ratio-bad-baseline.yaml"));
  CHECK(bad.status == 2);
  CHECK(bad.err.find("validation-ratio-bad-baseline.yaml: reference.baseline: names no other row of this file "
                     "'no-such-row' (allowed: fast-links, slow-links)") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}

// Rows that set keys their source does not state (reference.unstated) run twice: as written, then with those keys
// removed (from the document and its sweep axes) and left to dtsim's defaults, each row saying what auto chose.
// A --set applies to both runs.
TEST_CASE("validate: a table's rows also run from their stated columns only, auto choosing what they left out") {
  const std::string file = src("tests/data/scenarios/validation-unstated.yaml");
  const json tables = validate_json(file).at("tables");
  REQUIRE(tables.size() == 2);
  CHECK_FALSE(tables.at(0).at("stated_only").get<bool>());
  CHECK(tables.at(1).at("stated_only").get<bool>());
  CHECK(tables.at(1).at("unstated") == json{"training.micro_batch", "training.recompute"});
  for (const json& row : tables.at(0).at("rows")) CHECK(row.at("auto_chosen").empty());
  std::set<std::string> stated_names;
  for (const json& row : tables.at(1).at("rows")) {
    stated_names.insert(row.at("name").get<std::string>());
    CHECK(row.at("auto_chosen").contains("training.micro_batch"));
    CHECK(row.at("auto_chosen").at("training.recompute") == "none");   // a 4-layer model fits without
  }
  CHECK(stated_names == std::set<std::string>{"mb-1", "mb-2"});
  // The two stated-only rows are one job (their only difference, the micro-batch, was removed): one figure.
  CHECK(tables.at(1).at("rows").at(0).at("dtsim") == tables.at(1).at("rows").at(1).at("dtsim"));
  const auto set = dtsim("validate " + file + " --format json --set training.recompute=full --set simulation.engine=analytic");
  REQUIRE_MESSAGE(set.status == 0, set.err);
  const json with_set = json::parse(set.out);
  for (const json& row : with_set.at("tables").at(1).at("rows"))
    CHECK_FALSE(row.at("auto_chosen").contains("training.recompute"));
  const auto text = dtsim("validate " + file);
  REQUIRE(text.status == 0);
  CHECK(text.out.find(", stated columns only\n  left to dtsim's defaults: training.micro_batch, training.recompute\n") !=
        std::string::npos);
  CHECK(text.out.find("summary: mean / max absolute error, as written and from the stated columns only") != std::string::npos);
  // A key no row sets (misspelt) would leave the second run the first: the one-line error, exit 2.
  const fs::path dir = fresh_dir("validate", "unstated");
  fs::create_directories(dir);
  std::string bad = slurp(file);
  bad.replace(bad.find("training.recompute]"), 19, "training.recompte]");
  std::ofstream(dir / "bad.yaml") << bad;
  const auto typo = dtsim("validate " + (dir / "bad.yaml").string());
  CHECK(typo.status == 2);
  CHECK(typo.out.empty());
  CHECK(typo.err.find("bad.yaml:12: reference.unstated: is set by no row of this document, so there is nothing to "
                      "remove: 'training.recompte'") != std::string::npos);
  CHECK(std::count(typo.err.begin(), typo.err.end(), '\n') == 1);
  // A key the source states otherwise than the rows set it (reference.stated: the software it names) takes the
  // source's value in the second run, every row.
  std::string framework = slurp(file);
  framework.replace(framework.find("  unstated:"), 0, "  stated: {training.framework: torchtitan}\n");
  std::ofstream(dir / "framework.yaml") << framework;
  const auto named = dtsim("validate " + (dir / "framework.yaml").string() + " --format json");
  REQUIRE_MESSAGE(named.status == 0, named.err);
  const json named_tables = json::parse(named.out).at("tables");
  CHECK(named_tables.at(1).at("stated") == json{"training.framework torchtitan"});
  // Its second run is the first file's second run with the framework set; its first run is the first file's.
  const auto titan = dtsim("validate " + file + " --format json --set training.framework=torchtitan");
  REQUIRE_MESSAGE(titan.status == 0, titan.err);
  const json titan_tables = json::parse(titan.out).at("tables");
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(named_tables.at(1).at("rows").at(i).at("dtsim") == titan_tables.at(1).at("rows").at(i).at("dtsim"));
    CHECK(named_tables.at(0).at("rows").at(i).at("dtsim") == tables.at(0).at("rows").at(i).at("dtsim"));
  }
  CHECK(named_tables.at(0).at("rows").at(0).at("dtsim") != titan_tables.at(0).at("rows").at(0).at("dtsim"));
  fs::remove_all(dir);
}

TEST_CASE("validate: a scenario without published figures is an input error, status 2") {
  const auto r = dtsim("validate " + src("tests/data/scenarios/small-tp4.yaml"));
  CHECK(r.status == 2);
  CHECK(r.err.find("reference") != std::string::npos);
  CHECK(r.err.find("small-tp4.yaml") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

// Issues 6, 16 and 17's targets on every row of the shipped tables (about 2 min): the Megatron-LM SC'21 tables on
// A100, the Megatron-LM README's weak scaling, NeMo 24.07's FP8 table and MLPerf v3.1's GPT-3 on H100, each row
// within 12 % of the published figure and each table's mean within 5 %; and the cross-fabric ratios, each pair
// within 5 %, as docs/validation.md records them. A change to the compute, network or schedule models that moves
// any row past its target fails here.
namespace {

// The same rows written from their source's stated columns only (issue 40): each table's mean and max error as
// recorded in docs/validation.md, held within half a point, so that a change that moves them must update the record.
struct Recorded {
  double mean = 0, max = 0;
};

void check_stated(const json& t, std::size_t rows, Recorded recorded) {
  CHECK(t.at("stated_only").get<bool>());
  CHECK_FALSE(t.at("unstated").empty());
  CHECK(t.at("rows").size() == rows);
  std::string table;
  for (const json& row : t.at("rows"))
    table += fmt::format("{:<18} {:>7.1f} {:>7.1f} {:+6.1f} %  {}\n", row.at("name").get<std::string>(),
                         row.at("published").get<double>(), row.at("dtsim").get<double>(),
                         100 * row.at("error").get<double>(), row.at("auto_chosen").dump());
  MESSAGE(table);
  CHECK(t.at("mean_abs_error").get<double>() <= recorded.mean + 0.005);
  CHECK(t.at("max_abs_error").get<double>() <= recorded.max + 0.005);
}

// A training table's row shows its mean / max absolute error as written and, when the table has one, from its
// stated columns only.
void check_readme(const std::string& label, const json& written, const json* stated) {
  const auto cell = [&](const json& t) {
    return fmt::format("{} / {} %", pct(t.at("mean_abs_error").get<double>()), pct(t.at("max_abs_error").get<double>()));
  };
  const std::string row = readme_row(label);
  CHECK_MESSAGE(row.find("| " + cell(written) + " |") != std::string::npos, "as written ", cell(written), ": ", row);
  if (stated) CHECK_MESSAGE(row.find("| " + cell(*stated)) != std::string::npos, "stated only ", cell(*stated), ": ", row);
}

// Every row of one shipped table within its target, and the row count. One test per table: each takes minutes
// under the sanitizers, and CTest runs them side by side. A table whose rows set keys its source does not state
// also runs without them (`stated`: its recorded errors).
// `misses`: rows past the bound, held within a point of the error docs/validation.md records for them.
void check_table(const std::string& file, const std::string& readme_label, std::size_t rows,
                 std::optional<Recorded> stated = std::nullopt, const std::map<std::string, double>& misses = {}) {
  const json report = validate_json(src(file));
  REQUIRE(report.at("tables").size() == (stated ? 2U : 1U));
  if (stated) check_stated(report.at("tables").at(1), rows, *stated);
  const json& t = report.at("tables").at(0);
  check_readme(readme_label, t, stated ? &report.at("tables").at(1) : nullptr);
  CHECK_FALSE(t.at("stated_only").get<bool>());
  const bool pair = file.ends_with("cross-fabric.yaml");
  std::string table;
  double sum = 0;
  std::size_t count = 0;
  for (const json& row : t.at("rows")) {
    const double error = row.at("error").get<double>();
    table += fmt::format("{:<18} {:>7.1f} {:>7.1f} {:+6.1f} %\n", row.at("name").get<std::string>(),
                         row.at("published").get<double>(), row.at("dtsim").get<double>(), 100 * error);
    CAPTURE(row.dump());
    const auto miss = misses.find(row.at("name").get<std::string>());
    if (miss != misses.end()) CHECK(std::abs(error - miss->second) <= 0.01);
    else CHECK(std::abs(error) <= (pair ? 0.05 : 0.12));
    sum += std::abs(error);
    ++count;
  }
  MESSAGE(table);
  CHECK(count == rows);
  REQUIRE(count > 0);
  CHECK(sum / static_cast<double>(count) <= 0.05);
  CHECK(t.at("mean_abs_error").get<double>() == doctest::Approx(sum / static_cast<double>(count)));
}

}  // namespace

TEST_CASE("validate: with no file it runs the fourteen shipped tables, in order") {
  std::vector<std::string> names;
  const json report = validate_json("--only 1.7b-32,ptdp-175b-384,1.7b-48,gpt3-5b-64,eos-512,h100-sxm-1gpu,"
                                    "h100-7b-128-128,ttft-h100-7b-128,vllm-h100-8b,vllm-h100-mixtral-tp2,online-8b-tp1-qps2,mixtral-8x7b-64,"
                                    "llama3-8b-fsdp-8,gb300-8b");
  for (const json& t : report.at("tables")) names.push_back(t.at("name").get<std::string>());
  // Each table whose rows set keys its source does not state is followed by its run from the stated columns only.
  CHECK(names == std::vector<std::string>{"scenarios/validation/megatron-sc21-table1.yaml",
                                          "scenarios/validation/megatron-sc21-table1.yaml",
                                          "scenarios/validation/megatron-sc21-table2.yaml",
                                          "scenarios/validation/megatron-sc21-table2.yaml",
                                          "scenarios/validation/megatron-core-h100-weak.yaml",
                                          "scenarios/validation/megatron-core-h100-weak.yaml",
                                          "scenarios/validation/nemo-h100-fp8.yaml",
                                          "scenarios/validation/nemo-h100-fp8.yaml",
                                          "scenarios/validation/mlperf-gpt3-h100.yaml",
                                          "scenarios/validation/cross-fabric.yaml",
                                          "scenarios/validation/serving-trtllm-static.yaml",
                                          "scenarios/validation/serving-trtllm-first-token.yaml",
                                          "scenarios/validation/serving-vllm-latency.yaml",
                                          "scenarios/validation/serving-vllm-moe.yaml",
                                          "scenarios/validation/serving-trtllm-online.yaml",
                                          "scenarios/validation/moe-h100.yaml",
                                          "scenarios/validation/torchtitan-h100-fsdp.yaml",
                                          "scenarios/validation/megatron-bridge-blackwell.yaml"});
  std::vector<bool> stated;
  for (const json& t : report.at("tables")) stated.push_back(t.at("stated_only").get<bool>());
  CHECK(stated == std::vector<bool>{false, true, false, true, false, true, false, true, false, false, false, false, false,
                                    false, false, false, false, false});
}

TEST_CASE("validate: every row of SC'21 table 1 stays within the target, 12 % each and 5 % mean"
          * doctest::test_suite("figures")) {
  check_table("scenarios/validation/megatron-sc21-table1.yaml", "Megatron-LM SC'21 table 1", 10, Recorded{0.048, 0.100});
}
TEST_CASE("validate: every row of SC'21 table 2 stays within the target, 12 % each and 5 % mean"
          * doctest::test_suite("figures")) {
  check_table("scenarios/validation/megatron-sc21-table2.yaml", "Megatron-LM SC'21 table 2", 12, Recorded{0.512, 1.893});
}
TEST_CASE("validate: every row of the Megatron-Core H100 table stays within the target, 12 % each and 5 % mean"
          * doctest::test_suite("figures")) {
  check_table("scenarios/validation/megatron-core-h100-weak.yaml", "Megatron-Core r0.8.0", 9, Recorded{0.056, 0.110});
}
TEST_CASE("validate: every row of the NeMo H100 FP8 table stays within the target, 12 % each and 5 % mean"
          * doctest::test_suite("figures")) {
  check_table("scenarios/validation/nemo-h100-fp8.yaml", "NeMo 24.07", 12, Recorded{0.047, 0.146});
}
TEST_CASE("validate: every row of the MLPerf GPT-3 H100 table stays within the target, 12 % each and 5 % mean"
          * doctest::test_suite("figures")) {
  check_table("scenarios/validation/mlperf-gpt3-h100.yaml", "MLPerf Training v3.1", 2);
}
// The Lambda 1 -> 8 H100 PCIe pair reduces fp16 gradients (DeepLearningExamples' BERT under apex AMP O2, as the
// megatron-2021 default now does): +5.2 %, recorded in docs/validation.md.
TEST_CASE("validate: every cross-fabric pair stays within 5 %, the one recorded miss at its error") {
  check_table("scenarios/validation/cross-fabric.yaml", "Across fabrics", 6, std::nullopt, {{"h100-pcie-8gpu / h100-pcie-1gpu", 0.052}});
}

TEST_CASE("validate: --only with a name no row has is an input error listing the rows, status 2") {
  const auto r = dtsim("validate --only 1.7b-32,no-such-row");
  CHECK(r.status == 2);
  CHECK(r.err.find("--only") != std::string::npos);
  CHECK(r.err.find("no-such-row") != std::string::npos);
  CHECK(r.err.find("ptdp-175b-384") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}
