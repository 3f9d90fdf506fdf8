#include "results/report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <stdexcept>

#include "results/cost.hpp"
#include "results/report_support.hpp"
#include "results/roofline_chart.hpp"
#include "results/run_report.hpp"
#include "results/serving_report.hpp"
#include "results/sweep_charts.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using namespace report_support;


bool simulated(const json& row) { return !row.contains("error") && row.contains("step_time_s"); }

// One line per simulated row: what the bar charts read. Each line starts with the row's position, so a name
// starting with '#' is not read as a comment.
std::string rows_data(const std::vector<const json*>& ok, const std::map<const json*, std::string>& labels) {
  std::string out = "# row\tname\tgpus\tstep_time_s\ttokens_per_s\tmfu_pct\thfu_pct\tscaling_pct\tcompute_s\t"
                    "exposed_comm_s\tpipeline_bubble_s\tother_s\n";
  for (std::size_t i = 0; i < ok.size(); ++i) {
    const json* r = ok[i];
    const json& b = r->at("breakdown_s");
    const auto label = labels.find(r);
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i + 1,
                       label != labels.end() ? label->second : name_of(*r), cell(number(*r, "gpus")),
                       cell(number(*r, "step_time_s")), cell(number(*r, "tokens_per_s")),
                       cell(100 * number(*r, "mfu")), cell(100 * number(*r, "hfu")),
                       cell(100 * number(*r, "scaling_efficiency")), cell(number(b, "compute")),
                       cell(number(b, "exposed_comm")), cell(number(b, "pipeline_bubble")), cell(number(b, "other")));
  }
  return out;
}

std::string bars_common(std::size_t rows) {
  // Long names slant; many rows get a wider gap between ticks through a smaller font.
  return fmt::format("set style fill solid 0.85 border -1\nset boxwidth 0.8\nset xtics rotate by -30 scale 0 font "
                     "\",{}\"\nset yrange [0:*]\nset key outside right top vertical Left reverse\nset bmargin 9\n",
                     rows > 24 ? 7 : 9);
}

std::string step_time_script(std::size_t rows) {
  return header("step_time", "Step time per configuration") + bars_common(rows) +
         "set style data histograms\nset style histogram clustered gap 1\nset ylabel \"step time (s)\"\n"
         "plot \"rows.dat\" using 4:xtic(2) title \"step time\" lc rgb \"#4e79a7\"\n" + footer();
}

std::string efficiency_script(std::size_t rows) {
  return header("efficiency", "MFU, HFU and scaling efficiency per configuration") + bars_common(rows) +
         "set style data histograms\nset style histogram clustered gap 1\nset ylabel \"%\"\nset yrange [0:100]\n"
         "plot \"rows.dat\" using 6:xtic(2) title \"MFU\" lc rgb \"#4e79a7\", "
         "\"\" using 7 title \"HFU\" lc rgb \"#a0cbe8\", \"\" using 8 title \"scaling efficiency\" lc rgb \"#f28e2b\"\n" +
         footer();
}

std::string breakdown_script(std::size_t rows) {
  return header("breakdown", "Where the critical GPU's step goes") + bars_common(rows) +
         "set style data histograms\nset style histogram rowstacked\nset ylabel \"seconds per step\"\n"
         "plot \"rows.dat\" using 9:xtic(2) title \"compute\" lc rgb \"#4e79a7\", "
         "\"\" using 10 title \"exposed communication\" lc rgb \"#e15759\", "
         "\"\" using 11 title \"pipeline bubble\" lc rgb \"#f28e2b\", \"\" using 12 title \"other\" lc rgb \"#bab0ac\"\n" +
         footer();
}

// The axes a curve of the scaling chart keeps fixed: every sweep value except those that set the GPU count or
// the plan over it (a whole `cluster` map that sets the GPU count among them), the global batch (weak scaling grows
// it) and references.
std::string setting_of(const json& row, const std::set<std::string>& gpu_axes) {
  if (!row.contains("point") || !row["point"].contains("values")) return "";
  std::string key;
  for (const auto& [k, v] : row["point"]["values"].items()) {
    if (k == "name" || k == "cluster.nodes" || k == "cluster.gpus_per_node" || k == "training.global_batch" ||
        k.starts_with("parallelism.") || k.starts_with("reference.") || gpu_axes.contains(k))
      continue;
    key += fmt::format("{}{}={}", key.empty() ? "" : ", ", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return key;
}

struct Curves {
  std::vector<std::string> titles;
  std::vector<std::vector<const json*>> points;   // by GPU count
};

// Curves with two GPU counts or more; when no setting has two, one curve through every row.
Curves scaling_curves(const std::vector<const json*>& ok) {
  const std::set<std::string> gpu_axes = gpu_count_axes(ok);
  std::map<std::string, std::vector<const json*>> by_setting;
  std::vector<std::string> order;
  for (const json* r : ok) {
    const std::string s = setting_of(*r, gpu_axes);
    if (!by_setting.contains(s)) order.push_back(s);
    by_setting[s].push_back(r);
  }
  const auto gpu_counts = [](const std::vector<const json*>& rs) {
    std::set<double> counts;
    for (const json* r : rs) counts.insert(number(*r, "gpus"));
    return counts.size();
  };
  Curves c;
  for (const auto& s : order)
    if (gpu_counts(by_setting[s]) >= 2) {
      c.titles.push_back(s.empty() ? "all rows" : s);
      c.points.push_back(by_setting[s]);
    }
  if (c.titles.empty() && gpu_counts(ok) >= 2) {
    c.titles.push_back("all rows");
    c.points.push_back(ok);
  }
  for (auto& p : c.points)
    std::stable_sort(p.begin(), p.end(), [](const json* a, const json* b) { return number(*a, "gpus") < number(*b, "gpus"); });
  return c;
}

std::string scaling_data(const Curves& c) {
  std::string out;
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    out += fmt::format("{}# curve {}: {}\n# gpus\ttokens_per_s\tscaling_pct\tstrong_pct\tweak_pct\tname\n",
                       i ? "\n\n" : "", i, plain(c.titles[i]));
    for (const json* r : c.points[i])
      out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", cell(number(*r, "gpus")), cell(number(*r, "tokens_per_s")),
                         cell(100 * number(*r, "scaling_efficiency")),
                         cell(100 * number(*r, "strong_scaling_efficiency")),
                         cell(100 * number(*r, "weak_scaling_efficiency")), name_of(*r));
  }
  return out;
}

std::string scaling_script(const Curves& c, bool strong, bool weak) {
  std::string out = header("scaling", "Scaling with GPU count");
  out += "unset title\nset multiplot layout 1,2 title \"Scaling with GPU count\"\nset logscale x 2\n"
         "set xlabel \"GPUs\"\nset key bottom right font \",8\"\n";
  std::string tput, eff;
  // One colour per curve in both panels; its strong and weak efficiencies dashed and dotted in the same colour.
  for (std::size_t i = 0; i < c.titles.size(); ++i) {
    const std::string& title = c.titles[i];
    const std::string sep = i ? ", " : "";
    const char* line_colour = colour(i);
    tput += fmt::format("{}\"scaling.dat\" index {} using 1:2 with linespoints lw 2 pt 7 lc rgb \"{}\" title {}", sep, i,
                        line_colour, gp_string(title));
    eff += fmt::format("{}\"scaling.dat\" index {} using 1:3 with linespoints lw 2 pt 7 lc rgb \"{}\" title {}",
                       sep, i, line_colour, gp_string("scaling efficiency: " + title));
    if (strong)
      eff += fmt::format(", \"scaling.dat\" index {} using 1:4 with linespoints dt 2 pt 6 lc rgb \"{}\" title {}", i,
                         line_colour, gp_string("strong: " + title));
    if (weak)
      eff += fmt::format(", \"scaling.dat\" index {} using 1:5 with linespoints dt 3 pt 4 lc rgb \"{}\" title {}", i,
                         line_colour, gp_string("weak: " + title));
  }
  out += "set title \"throughput\"\nset logscale y\nset ylabel \"tokens/s\"\nplot " + tput + "\n";
  out += "set title \"efficiency\"\nunset logscale y\nset ylabel \"%\"\nset yrange [0:*]\nplot " + eff + "\n";
  return out + "unset multiplot\n" + footer();
}

std::string memory_cell(const json& row) {
  if (!row.contains("memory")) return "";
  const json& m = row["memory"];
  const double margin = number(m, "margin_bytes") / kGiB;
  return m.value("fits", false) ? fmt::format("fits ({:.1f} GiB spare)", margin)
                                : fmt::format("does not fit (short by {:.1f} GiB)", -margin);
}


// The plan a row ran: tp, pp and dp from its resolved scenario (empty cells when it has none).
std::string plan_cells(const json& row) {
  const json* p = row.contains("scenario") && row["scenario"].is_object() && row["scenario"].contains("parallelism")
                      ? &row["scenario"]["parallelism"] : nullptr;
  const auto degree = [&](const char* key) {
    return p != nullptr && p->is_object() && p->contains(key) && (*p)[key].is_number() ? cell(number(*p, key)) : "";
  };
  return fmt::format(" {} | {} | {} |", degree("tp"), degree("pp"), degree("dp"));
}

std::string summary(const std::vector<json>& rows, const std::vector<const json*>& ok, const std::string& title,
                    const std::string& source, bool scaling, const std::vector<RooflinePlot>& rooflines,
                    const SweepCharts* sweep) {
  const bool strong = std::any_of(ok.begin(), ok.end(), [](const json* r) { return r->contains("strong_scaling_efficiency"); });
  const bool weak = std::any_of(ok.begin(), ok.end(), [](const json* r) { return r->contains("weak_scaling_efficiency"); });
  std::string out = fmt::format("# {}\n\nFrom `{}`: {} rows, {} simulated.\n\n", title, source, rows.size(), ok.size());
  out += "| configuration | GPUs | tp | pp | dp | step (s) | tokens/s | MFU | scaling efficiency |";
  if (strong) out += " strong scaling |";
  if (weak) out += " weak scaling |";
  out += " exposed comm | bubble | memory |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|";
  if (strong) out += "---:|";
  if (weak) out += "---:|";
  out += "---:|---:|---|\n";
  for (const json& r : rows) {
    if (!simulated(r)) {
      out += fmt::format("| {} | | | | | | | | |{}{} | | not simulated: {} |\n", md_cell(name_of(r)), strong ? " |" : "",
                         weak ? " |" : "", md_cell(r.value("error", std::string("no result"))));
      continue;
    }
    const json& b = r.at("breakdown_s");
    const double step = number(r, "step_time_s");
    out += fmt::format("| {} | {} |{} {:.4g} | {:.4g} | {} | {} |", md_cell(name_of(r)), cell(number(r, "gpus")),
                       plan_cells(r), step, number(r, "tokens_per_s"), pct(number(r, "mfu")),
                       pct(number(r, "scaling_efficiency")));
    if (strong) out += fmt::format(" {} |", pct(number(r, "strong_scaling_efficiency")));
    if (weak) out += fmt::format(" {} |", pct(number(r, "weak_scaling_efficiency")));
    out += fmt::format(" {} | {} | {} |\n", pct(number(b, "exposed_comm") / step), pct(number(b, "pipeline_bubble") / step),
                       md_cell(memory_cell(r)));
  }
  std::string refs;
  for (const json* r : ok)
    if (r->contains("reference"))
      for (const auto& [key, value] : (*r)["reference"].items()) {
        if (key == "source" || !value.is_number()) continue;
        const double dtsim = reference_figure(*r, key);
        const double published = value.get<double>();
        const bool ratio = key.ends_with("efficiency") || key == "mfu" || key == "hfu";
        const auto show = [&](double v) { return ratio ? pct(v) : fmt::format("{:.4g}", v); };
        refs += fmt::format("| {} | {} | {} | {} | {:+.1f} % |\n", md_cell(name_of(*r)), key, show(published),
                            show(dtsim), published != 0 ? 100 * (dtsim - published) / published : 0.0);
      }
  if (!refs.empty())
    out += "\n## Published figures beside dtsim's\n\n| configuration | figure | published | dtsim | difference |\n"
           "|---|---|---:|---:|---:|\n" + refs;
  out += "\n## Charts\n\n";
  if (sweep) {
    out += fmt::format("Along the sweep: {}. A red cross marks a point that does not fit in memory.\n\n", sweep->choice);
    for (const auto& [stem, alt] : sweep->charts) out += fmt::format("![{}](plots/{}.png)\n\n", alt, stem);
  } else {
    out += "![step time per configuration](plots/step_time.png)\n\n";
    out += "![MFU, HFU and scaling efficiency](plots/efficiency.png)\n\n";
  }
  out += "![where the step goes](plots/breakdown.png)\n\n";
  if (scaling) out += "![scaling with GPU count](plots/scaling.png)\n\n";
  else out += "No scaling chart: every simulated row has the same GPU count.\n\n";
  for (std::size_t i = 0; i < rooflines.size(); ++i) {
    const auto& p = rooflines[i];
    const std::string share = p.elementwise_high - p.elementwise_low < 5e-4
                                  ? fmt::format("{:.1f} %", 100 * p.elementwise_high)
                                  : fmt::format("{:.1f} to {:.1f} %", 100 * p.elementwise_low, 100 * p.elementwise_high);
    out += fmt::format("![roofline {1}](plots/roofline-{1}.png)\n\nRoofline of {0}: ridge point {2:.0f} FLOP/byte{4}. "
                       "Element-wise kernels (norms, softmax, dropout, activation, residual) count no matrix FLOPs, "
                       "so they are not on the chart; they take {3} of a layer's kernel time.\n\n",
                       md_cell(p.label), i + 1, p.ridge, share,
                       p.rows > 1 ? ", each row's kernels in its own point shape" : "");
  }
  out += "Each chart is drawn by gnuplot from the `.gp` script and `.dat` data beside it in `plots/`, as PNG, SVG and "
         "PDF.\n";
  return out;
}

}  // namespace

std::string row_problem(const json& row) {
  if (!row.is_object()) return "not a JSON object";
  const auto number_at = [](const json& obj, const char* key) { return obj.contains(key) && obj[key].is_number(); };
  if (row.contains("error")) return row["error"].is_string() ? "" : "`error` is not a string";
  if (!row.contains("name") || !row["name"].is_string()) return "no string `name`";
  if (is_serving_row(row)) return serving_row_problem(row);
  for (const char* key : {"gpus", "step_time_s", "tokens_per_s", "mfu", "hfu", "scaling_efficiency"})
    if (!number_at(row, key)) return fmt::format("no number `{}`", key);
  if (!(row["gpus"].get<double>() > 0) || !(row["step_time_s"].get<double>() > 0))
    return "`gpus` and `step_time_s` must be positive";
  if (!row.contains("breakdown_s") || !row["breakdown_s"].is_object()) return "no `breakdown_s` object";
  for (const char* key : {"compute", "exposed_comm", "pipeline_bubble", "other"})
    if (!number_at(row["breakdown_s"], key)) return fmt::format("no number `breakdown_s.{}`", key);
  for (const char* key : {"strong_scaling_efficiency", "weak_scaling_efficiency"})
    if (row.contains(key) && !row[key].is_number()) return fmt::format("`{}` is not a number", key);
  if (row.contains("memory")) {
    const json& m = row["memory"];
    if (!m.is_object() || !m.contains("fits") || !m["fits"].is_boolean() || !number_at(m, "margin_bytes"))
      return "`memory` needs a boolean `fits` and a number `margin_bytes`";
  }
  if (row.contains("roofline")) {
    const json& rf = row["roofline"];
    if (!rf.is_object() || !number_at(rf, "peak_tflops") || !number_at(rf, "memory_bandwidth_GBps") ||
        !number_at(rf, "ridge_flop_per_byte") || !rf.contains("kernels") || !rf["kernels"].is_array())
      return "`roofline` needs numbers `peak_tflops`, `memory_bandwidth_GBps`, `ridge_flop_per_byte` and a `kernels` list";
    if (!(rf["peak_tflops"].get<double>() > 0) || !(rf["memory_bandwidth_GBps"].get<double>() > 0))
      return "`roofline` peak and bandwidth must be positive";
    for (const auto& k : rf["kernels"])
      if (!k.is_object() || !number_at(k, "flops") || !number_at(k, "flop_per_byte") || !number_at(k, "time_s") ||
          !number_at(k, "achieved_tflops") || !k.contains("kernel") || !k["kernel"].is_string() ||
          !k.contains("pass") || !k["pass"].is_string() || !k.contains("scope") || !k["scope"].is_string())
        return "a `roofline.kernels` entry without its numbers and names";
  }
  if (row.contains("reference")) {
    if (!row["reference"].is_object()) return "`reference` is not an object";
    for (const auto& [key, value] : row["reference"].items()) {
      if (key == "source") continue;
      if (!value.is_number()) return fmt::format("`reference.{}` is not a number", key);
      try {
        (void)reference_figure(row, key);
      } catch (const json::exception&) {
        return fmt::format("`reference.{}` names no figure of the row", key);
      }
    }
  }
  return "";
}

std::string chart_size_gp(ChartSize size) {
  // A page: 11 x 5.6 in at 10 pt, PNG at 100 pixels an inch; a paper column (3.3 in wide): 8 pt, PNG at 200.
  return size == ChartSize::Column ? "# --size column: one paper column\ndtsim_w_in = 3.3\ndtsim_h_in = 2.4\n"
                                     "dtsim_font_pt = 8\ndtsim_png_dpi = 200\n"
                                   : "# --size page\ndtsim_w_in = 11\ndtsim_h_in = 5.6\ndtsim_font_pt = 10\n"
                                     "dtsim_png_dpi = 100\n";
}

Report build_report(const std::vector<json>& rows, const std::string& title, const std::string& source,
                    const ChartChoice& choice) {
  std::vector<const json*> ok;
  for (const json& r : rows)
    if (simulated(r)) ok.push_back(&r);
  if (ok.empty()) throw std::invalid_argument("no simulated row (every row is an error row)");
  Report rep;
  const auto add = [&](std::string path, std::string text, bool script) {
    if (script) rep.scripts.push_back(path);
    rep.files.push_back({std::move(path), std::move(text)});
  };
  const auto sweep = sweep_charts(ok, choice);
  add("plots/rows.dat", rows_data(ok, sweep ? sweep->labels : std::map<const json*, std::string>{}), false);
  if (sweep) {   // a sweep: its figures against an axis, lines and panels; the breakdown stays a bar per row
    for (const auto& f : sweep->files)
      add(f.path, f.text, std::find(sweep->scripts.begin(), sweep->scripts.end(), f.path) != sweep->scripts.end());
  } else {
    add("plots/step_time.gp", step_time_script(ok.size()), true);
    add("plots/efficiency.gp", efficiency_script(ok.size()), true);
  }
  add("plots/breakdown.gp", breakdown_script(ok.size()), true);
  const Curves curves = scaling_curves(ok);
  if (!curves.titles.empty()) {
    const auto has = [&](const char* key) {
      return std::any_of(ok.begin(), ok.end(), [&](const json* r) { return r->contains(key); });
    };
    add("plots/scaling.dat", scaling_data(curves), false);
    add("plots/scaling.gp", scaling_script(curves, has("strong_scaling_efficiency"), has("weak_scaling_efficiency")), true);
  }
  // One roofline per GPU type and precision, every row of that kind on it.
  const std::vector<RooflinePlot> rooflines = roofline_plots(ok);
  for (const auto& r : rooflines) {
    add("plots/" + r.stem + ".dat", r.data, false);
    add("plots/" + r.stem + ".gp", r.script, true);
  }
  add("report.md", summary(rows, ok, title, source, !curves.titles.empty(), rooflines, sweep ? &*sweep : nullptr), false);
  return rep;
}

}  // namespace dtsim::results
