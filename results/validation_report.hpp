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
  // Non-empty: the rows written from their source's stated columns only, these keys (the table's own rule)
  // removed and left at dtsim's defaults.
  std::vector<std::string> unstated;
  // ... and these set as the source states them ("training.framework nemo": the software it names).
  std::vector<std::string> stated;
};

// {"tables": [{"name", "source", "stated_only", "unstated", "stated", "rows": [{"name", "figure", "published", "dtsim",
//              "error", "auto_chosen"}], "mean_abs_error", "max_abs_error"}]}; errors as fractions.
nlohmann::json validation_json(const std::vector<ValidationTable>& tables);
// The same as text: per table its rows, then its mean and max absolute error in percent; a stated-only table says
// which keys it left to dtsim and what `auto` chose per row; last, a summary of every table's errors, as written
// and from its stated columns only, side by side.
std::string validation_text(const nlohmann::json& report);

}  // namespace dtsim::results
