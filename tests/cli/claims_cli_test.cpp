// `dtsim claims`: the committed docs/seed-claims.md is what the command generates; every claim of CLAIMS.md is
// there with a verdict computed from its figures; broken claim data is a one-line error with status 2.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

fs::path fresh_claims(const std::string& tag) {
  const fs::path dir = fresh_dir("claims", tag);
  fs::create_directories(dir);
  return dir;
}

const json& claim(const json& all, const std::string& id) {
  for (const auto& c : all)
    if (c["id"] == id) return c;
  FAIL("no claim " << id);
  static const json none;
  return none;
}

double figure(const json& c, const std::string& key) {
  for (const auto& f : c["figures"])
    if (f["key"] == key) return f["dtsim"].is_boolean() ? (f["dtsim"].get<bool>() ? 1 : 0) : f["dtsim"].get<double>();
  FAIL("no figure " << key);
  return 0;
}

// A claims directory holding only `yaml` as claims.yaml.
Result claims_with(const std::string& tag, const std::string& yaml, const std::string& extra = "") {
  const fs::path dir = fresh_claims(tag);
  std::ofstream(dir / "claims.yaml") << yaml;
  const Result r = dtsim("claims --dir " + dir.string() + " " + extra);
  fs::remove_all(dir);
  return r;
}

// Claim S2 with all five of its figures, the first one's article value `fp16_max`, and `why`.
std::string s2_claim(const std::string& fp16_max, const std::string& why, const std::string& scenarios = "[]") {
  return "claims:\n  - id: S2\n    claim: x\n    scenarios: " + scenarios + "\n    figures:\n" +
         "      - {key: fp16_max, what: max, article: " + fp16_max + "}\n" +
         "      - {key: fp16_min_normal, what: min, article: null}\n" +
         "      - {key: bf16_max, what: max, article: null}\n" +
         "      - {key: bf16_min_normal, what: min, article: null}\n" +
         "      - {key: bf16_fp32_exponent, what: exp, article: null}\n" + "    why: \"" + why + "\"\n";
}

// The claims command refused its input: exit 2, and the error says `says`.
void check_refused(const Result& r, const std::string& says) {
  CAPTURE(r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find(says) != std::string::npos);
}

}  // namespace

// One evaluation of every claim serves both checks: the page and the verdicts. Three minutes under the sanitizers,
// so it is a `figures` test (the Release tier's): the sanitizer tier evaluates claims through the tests below.
TEST_CASE("claims: the committed docs/seed-claims.md is what dtsim claims generates, and every claim has a verdict computed from its figures"
          * doctest::test_suite("figures")) {
  const fs::path dir = fresh_claims("all");
  const Result r = dtsim("claims --json " + (dir / "claims.json").string());
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out == slurp(src("docs/seed-claims.md")));   // regenerate: ./dtsim claims --out docs/seed-claims.md
  // docs/claims.md shows the page's summary table as the command prints it (its block is not run by the docs
  // test, which would evaluate every claim a second time): each of its rows is the page's.
  {
    const std::string page = slurp(src("docs/claims.md"));
    int rows = 0;
    for (std::size_t at = page.find("\n| [S"); at != std::string::npos; at = page.find("\n| [S", at + 1), ++rows) {
      const std::string row = page.substr(at + 1, page.find('\n', at + 1) - at);
      CHECK_MESSAGE(r.out.find(row) != std::string::npos, "docs/claims.md's summary row is not the command's: ", row);
    }
    CHECK(rows == 21);
  }
  const json all = json::parse(slurp(dir / "claims.json"));
  fs::remove_all(dir);
  std::set<std::string> ids;
  for (const auto& c : all) {
    CAPTURE(c["id"]);
    CHECK(ids.insert(c["id"].get<std::string>()).second);
    const std::string verdict = c["verdict"];
    int judged = 0, agree = 0;
    for (const auto& f : c["figures"]) {
      if (f["article"].is_null()) {
        CHECK_FALSE(f.contains("agrees"));
        continue;
      }
      ++judged;
      agree += f["agrees"].get<bool>() ? 1 : 0;
      if (f["article"].is_boolean()) CHECK(f["agrees"].get<bool>() == (f["article"] == f["dtsim"]));
    }
    if (verdict == "waiting" || verdict == "outside a simulator's reach") {
      CHECK(judged == 0);
      CHECK_FALSE(c["why"].get<std::string>().empty());
    } else {
      REQUIRE(judged > 0);
      const std::string want = agree == judged ? "holds" : agree == 0 ? "does not hold" : "partly holds";
      CHECK(verdict.starts_with(want));   // "holds for the fusion half" names the part a claim's figures cover
      CHECK((verdict == want) == (c["id"] != "S10" && c["id"] != "S20"));   // the two that name their part
    }
  }
  for (int i = 1; i <= 21; ++i) CHECK(ids.count(fmt::format("S{}", i)) == 1);
  for (const char* id : {"S8", "S9", "S11", "S20"})   // the serving claims, computed (S20: its three GPU setups)
    CHECK(claim(all, id)["verdict"].get<std::string>().starts_with("partly holds"));
  for (const char* id : {"A1", "A2"}) CHECK(claim(all, id)["verdict"] == "outside a simulator's reach");
  // Figures fixed by arithmetic and physics, whatever the calibration.
  CHECK(claim(all, "S2")["verdict"] == "holds");
  CHECK(figure(claim(all, "S2"), "fp16_max") == 65504);
  CHECK(claim(all, "S4")["verdict"] == "holds");
  CHECK(figure(claim(all, "S3"), "weights_saving_pct") == doctest::Approx(75));
  CHECK(figure(claim(all, "S7"), "kv_GB") == doctest::Approx(68.72).epsilon(0.001));   // 2^36 bytes
  CHECK(figure(claim(all, "S13"), "fits_1xmi300x") == 0);
  CHECK(figure(claim(all, "S14"), "fits_1x4090") == 0);
  CHECK(figure(claim(all, "S9"), "decode_intensity_b1") == doctest::Approx(1).epsilon(0.05));
  CHECK(figure(claim(all, "S9"), "ridge_h100") == doctest::Approx(989.0 / 3.35).epsilon(0.001));
  CHECK(figure(claim(all, "S18"), "per_gpu_TBps") == doctest::Approx(13.8 * 2 * 7 / 8).epsilon(0.01));
  CHECK(claim(all, "S17")["verdict"] == "holds");
  // S19 sized by the planner: ZeRO-3 over 4 A100 40GB for 7B, and whole 8-GPU machines for 70B and 175B, the
  // smallest on which some plan fits (the memory plan's arithmetic: tests/workloads/memory_plan_test.cpp).
  CHECK(figure(claim(all, "S19"), "gpus_7b") == 4);
  CHECK(figure(claim(all, "S19"), "gpus_13b") == 4);
  CHECK(figure(claim(all, "S19"), "gpus_70b") == 16);
  CHECK(figure(claim(all, "S19"), "gpus_175b") == 40);
  // What the simulator adds: the H100 is faster, by less than its peak ratio; the PCIe box is slower.
  const double speedup = figure(claim(all, "S12"), "speedup");
  CHECK(speedup > 1.5);
  CHECK(speedup < 989.0 / 312);
  CHECK(figure(claim(all, "S16"), "pcie_slowdown_pct") > 20);
  // Serving (issue 21): int8 halves the weights exactly and speeds a bandwidth-bound decode by less than 2x; a
  // decode step takes longer than its bytes at full bandwidth; batch 1 is memory-bound, batch 32 compute-bound.
  CHECK(figure(claim(all, "S11"), "weights_saving_pct") == doctest::Approx(50));
  CHECK(figure(claim(all, "S11"), "decode_speedup_pct") > 30);
  CHECK(figure(claim(all, "S11"), "decode_speedup_pct") < 100);
  CHECK(figure(claim(all, "S11"), "energy_saving_pct") > 0);
  CHECK(figure(claim(all, "S9"), "decode_step_8xh100_ms") > figure(claim(all, "S9"), "hbm_bound_8xh100_ms"));
  CHECK(figure(claim(all, "S8"), "memory_bound_b1") == 1);
  CHECK(figure(claim(all, "S8"), "compute_bound_b32") == 1);
  CHECK(figure(claim(all, "S8"), "util_b32_pct") > 5 * figure(claim(all, "S8"), "util_b1_pct"));
  CHECK(figure(claim(all, "S20"), "usd_per_hour_4xt4") == doctest::Approx(4 * 0.35));
}

TEST_CASE("claims: --json writes what --format json prints, beside the markdown") {
  const fs::path dir = fresh_claims("json");
  const Result both = dtsim("claims --only S2,S7 --json " + (dir / "c.json").string());
  const Result json_only = dtsim("claims --only S2,S7 --format json");
  REQUIRE(both.status == 0);
  REQUIRE(json_only.status == 0);
  CHECK(both.out.starts_with("#"));   // markdown on stdout
  CHECK(slurp(dir / "c.json") == json_only.out);
  CHECK(json::parse(json_only.out).size() == 2);
  const Result bad = dtsim("claims --only S2 --json /dev/full");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--json") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("claims: broken claim data is a one-line error with status 2") {
  // A figure dtsim does not compute.
  const Result unknown = claims_with("unknown", R"(claims:
  - id: S2
    section: "2.2"
    claim: "FP16 max 65504"
    figures:
      - {key: fp16_maximum, what: "FP16 largest finite value", article: 65504}
    why: "bit layout"
)");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("fp16_maximum") != std::string::npos);
  CHECK(unknown.err.find("claims.yaml:6") != std::string::npos);
  CHECK(std::count(unknown.err.begin(), unknown.err.end(), '\n') == 1);
  // An unknown key, with its line.
  const Result key = claims_with("key", "claims:\n  - id: S2\n    claim: x\n    verdict: holds\n");
  CHECK(key.status == 2);
  CHECK(key.err.find("verdict") != std::string::npos);
  CHECK(key.err.find("claims.yaml:4") != std::string::npos);
  // An article figure of the wrong kind, and a {key} that names no figure.
  check_refused(claims_with("kind", s2_claim("true", "x")), "wrong kind");
  check_refused(claims_with("placeholder", s2_claim("65504", "dtsim says {fp32_max}")), "{fp32_max}");
  // A scenarios list that is not what dtsim reads (S2 reads none), a second claim with one id, a hex number.
  check_refused(claims_with("listed", s2_claim("65504", "x", "[s03-quantisation-saving.yaml]")),
                "not the files dtsim reads for this claim");
  check_refused(claims_with("twice", "claims:\n  - id: S8\n    claim: x\n    status: waiting\n    missing: y\n"
                                     "  - id: S8\n    claim: x\n    status: waiting\n    missing: y\n"),
                "a second claim with this id");
  check_refused(claims_with("hex", "claims:\n  - id: S2\n    claim: x\n    figures:\n"
                                   "      - {key: fp16_max, what: max, article: 0x10}\n    why: x\n"),
                "'0x10'");
  // Figures that are all dtsim's own give no verdict: refused.
  check_refused(claims_with("unjudged", "claims:\n  - id: S2\n    claim: x\n    figures:\n"
                                        "      - {key: fp16_max, what: max, article: null}\n    why: x\n"),
                "no figure with the article's value");
  // A claim waiting without saying for what; a claim id --only does not know.
  CHECK(claims_with("waiting", "claims:\n  - id: S8\n    claim: x\n    status: waiting\n").status == 2);
  check_refused(dtsim("claims --only S99"), "S99");
  // No claims file there.
  check_refused(dtsim("claims --dir /nonexistent"), "cannot read");
}
