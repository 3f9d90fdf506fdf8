// `dtsim validate` as a library call: published measurements against dtsim, row by row and table by table.
#pragma once

#include <string>
#include <vector>

#include "results/validation_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim::drivers {

// A validation table: where it comes from (a file, or an embedded table's origin) and its YAML text.
struct ValidationSource {
  std::string name;
  std::string text;
};

// The tables of `files`, or with none the embedded ones (scenarios/validation's, compiled in).
std::vector<ValidationSource> validation_sources(const std::vector<std::string>& files);

// Each table's rows run with `overrides`, paired with their references (`only`: these rows, by name; InputError
// listing the names for one no row has); a table with `reference.unstated` keys runs again from its stated
// columns only, right after it.
std::vector<results::ValidationTable> validate(const std::vector<ValidationSource>& sources,
                                               const std::vector<scenario::Override>& overrides,
                                               const std::vector<std::string>& only);

}  // namespace dtsim::drivers
