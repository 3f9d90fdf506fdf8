// `dtsim report`'s line charts of a sweep: one figure (step time, throughput per GPU, MFU) against one swept axis
// (`--x`), a line per value of the others (`--series` leads their label), a panel per value of a third
// (`--facet`), labels built from the values that vary, axis titles with units, points that do not fit marked.
// This layer writes gnuplot text; results/report.cpp links the charts into report.md.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "results/report.hpp"

namespace dtsim::results {

// The swept axes a sweep's rows vary (`point.values`, without `name` and `reference.*`), plus `gpus` when the GPU
// count varies, in key order.
std::vector<std::string> varying_axes(const std::vector<const nlohmann::json*>& ok);

// The axes whose every value gives one GPU count, and that give two counts or more (cluster.nodes, a whole
// `cluster` map): a scaling curve runs along them, so they do not split it.
std::set<std::string> gpu_count_axes(const std::vector<const nlohmann::json*>& ok);

struct SweepCharts {
  std::vector<ReportFile> files;      // plots/sweep.dat and a script per figure
  std::vector<std::string> scripts;   // the scripts among `files`
  std::vector<std::pair<std::string, std::string>> charts;   // (stem, alt text), to link
  std::string choice;                 // "x: ...; lines: ...; panels: ..." for the summary
  std::map<const nlohmann::json*, std::string> labels;   // a short label per row: its varying values
};

// Nothing when no axis varies (a single run). Throws std::invalid_argument naming the option when `choice` names
// an axis that does not vary; report_command turns it into the one-line error.
std::optional<SweepCharts> sweep_charts(const std::vector<const nlohmann::json*>& ok, const ChartChoice& choice);

}  // namespace dtsim::results
