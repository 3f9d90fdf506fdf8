// A report's roofline charts (results/report.cpp): one per GPU type and precision, every row of that kind on it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim::results {

// One chart: its gnuplot data and script (`plots/<stem>.dat`, `.gp`), what the summary says of it. Element-wise
// kernels (0 FLOPs) are not on the chart; their share of a layer's kernel time is given as a range over the rows.
struct RooflinePlot {
  std::string stem;
  std::string data;
  std::string script;
  double elementwise_low = 1, elementwise_high = 0;
  double ridge = 0;
  std::string label;
  std::size_t rows = 0;
};

// The charts of the simulated rows `ok` (those with a `roofline`), in order of first appearance.
std::vector<RooflinePlot> roofline_plots(const std::vector<const nlohmann::json*>& ok);

// The GPU's name from a row's resolved scenario ("" when it has none).
std::string gpu_of(const nlohmann::json& row);

}  // namespace dtsim::results
