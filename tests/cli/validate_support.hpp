// The validate tests' helpers: `validate` (and `run`) as JSON, and the README's validation summary row of a table.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

#include "cli/cli_support.hpp"

namespace validate_support {

using namespace cli_support;
using nlohmann::json;

// `validate ARGS --format json`'s report.
inline json validate_json(const std::string& args) {
  const auto v = dtsim("validate " + args + " --format json");
  REQUIRE_MESSAGE(v.status == 0, v.err);
  return json::parse(v.out);
}

// `validate` and `run` on one scenario file, both as JSON: the report, and the runs it compares with.
inline std::pair<json, json> validate_and_run(const std::string& file) {
  json report = validate_json(file);
  const auto r = dtsim("run " + file + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return {report, json::parse(r.out)};
}

// The README's validation summary: the row of the table labelled `label`, and a fraction as the summary prints it
// (percent, one decimal below 100).
inline std::string readme_row(const std::string& label) {
  const std::string readme = slurp(src("README.md"));
  const auto at = readme.find("\n| " + label);
  REQUIRE_MESSAGE(at != std::string::npos, "README.md has no validation row for ", label);
  return readme.substr(at + 1, readme.find('\n', at + 1) - at - 1);
}
inline std::string pct(double x) { return 100 * x >= 100 ? fmt::format("{:.0f}", 100 * x) : fmt::format("{:.1f}", 100 * x); }

}  // namespace validate_support
