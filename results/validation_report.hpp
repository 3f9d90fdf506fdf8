// `dtsim validate`: published figures (each row's `reference`) against dtsim's, per row with the error
// (dtsim / published - 1), and per table (one scenario file) the mean and the largest absolute error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim::results {

struct ValidationTable {
  std::string name;                 // the scenario file
  // run_json objects, with their `reference`; a ratio row also has "ratio_to" (its baseline's run_json) and
  // "ratios" (figure -> published ratio of this row's figure to the baseline's)
  std::vector<nlohmann::json> rows;
};

// {"tables": [{"name", "source", "rows": [{"name", "figure", "published", "dtsim", "error"}],
//              "mean_abs_error", "max_abs_error"}]}; errors as fractions.
nlohmann::json validation_json(const std::vector<ValidationTable>& tables);
// The same as text: per table its rows, then its mean and max absolute error in percent.
std::string validation_text(const nlohmann::json& report);

}  // namespace dtsim::results
