// `dtsim validate` end to end: per row the published figure, dtsim's (the same as `run` gives) and the error
// dtsim / published - 1; per table the mean and the largest absolute error; a scenario without published
// figures is an input error.
#include <cmath>

#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

TEST_CASE("validate: each published figure beside run's, with the error, and the table's mean and max") {
  const std::string file = src("tests/data/scenarios/validation-small.yaml");
  const auto v = dtsim("validate " + file + " --format json");
  REQUIRE_MESSAGE(v.status == 0, v.err);
  const auto r = dtsim("run " + file + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json report = json::parse(v.out);
  const json runs = json::parse(r.out);
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

TEST_CASE("validate: a scenario without published figures is an input error, status 2") {
  const auto r = dtsim("validate " + src("tests/data/scenarios/small-tp4.yaml"));
  CHECK(r.status == 2);
  CHECK(r.err.find("reference") != std::string::npos);
  CHECK(r.err.find("small-tp4.yaml") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}
