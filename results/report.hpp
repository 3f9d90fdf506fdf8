// `dtsim report`: result rows (a sweep's results.jsonl, a run's result.json) turned into gnuplot scripts with
// their data, and a markdown summary that links the charts:
//   step_time      step time per configuration (a sweep: against its x axis, results/sweep_charts.hpp)
//   throughput     (a sweep) tokens/s per GPU against its x axis
//   mfu            (a sweep) MFU against its x axis
//   efficiency     (not a sweep) MFU, HFU and scaling efficiency per configuration
//   breakdown      where the critical GPU's step went (compute, exposed communication, pipeline bubble, other)
//   scaling        throughput and scaling efficiency against GPU count, one curve per setting of the other
//                  axes (only when the rows span two GPU counts or more)
//   roofline-N     the step's kernels against the GPU's roofline and ridge point, one chart per GPU type
//   time_cost      (from `dtsim compare`) each cluster's time against cost to train, the Pareto front joined
// This layer only writes text; the command runs gnuplot on the scripts (each writes `<stem>.png`, `.svg` and `.pdf`
// beside itself).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim::results {

struct ReportFile {
  std::string path;   // relative to the report directory: "report.md", "plots/step_time.gp", ...
  std::string text;
};

// How large the charts are drawn: a page's width (11 x 5.6 in at 10 pt) or one paper column's (3.3 x 2.4 in at
// 8 pt, PNG at 200 pixels an inch). Written to `plots/size.gp`, which every chart script loads.
enum class ChartSize { Page, Column };
std::string chart_size_gp(ChartSize size);

// `dtsim report --x KEY --series KEY --facet KEY --size page|column`: which swept axis goes along x, which leads the
// lines' labels, which splits the chart into panels (empty: the defaults, results/sweep_charts.hpp), and how large.
struct ChartChoice {
  std::string x, series, facet;
  ChartSize size = ChartSize::Page;
};

struct Report {
  std::vector<ReportFile> files;
  std::vector<std::string> scripts;   // the gnuplot scripts among `files`, in drawing order
};

// Why `row` cannot be drawn ("" when it can): an error row needs a string `error`; a result row needs a string
// `name`, numbers `gpus` (> 0), `step_time_s` (> 0), `tokens_per_s`, `mfu`, `hfu`, `scaling_efficiency`,
// `breakdown_s` with four numbers, and, where present, a well-formed `memory`, `roofline` and `reference`. The
// command turns the reason into a one-line error naming the file and line.
std::string row_problem(const nlohmann::json& row);

// `rows`: result objects (run_json, plus `roofline`, `point` and scaling columns where present) and sweep error
// rows ({"name", "point", "error"}), in the order to draw them. `title` heads the summary; `source` names the
// file the rows came from. Throws std::invalid_argument when no row is a simulated result.
Report build_report(const std::vector<nlohmann::json>& rows, const std::string& title, const std::string& source,
                    const ChartChoice& choice = {});

// `dtsim compare --out DIR`'s compare.json (a doc with `axes` and `clusters`, each with its best `plan`) as a
// chart of time against cost with the Pareto front drawn through the rows marked `pareto`, and a summary that
// tabulates every cluster, those on which nothing fits included. Throws std::invalid_argument when the doc is not
// one compare wrote or no cluster fits.
Report build_compare_report(const nlohmann::json& doc, const std::string& title);

}  // namespace dtsim::results
