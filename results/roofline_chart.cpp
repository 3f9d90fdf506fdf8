// The roofline charts of a report: kernels with matrix FLOPs placed on the GPU's roofline, one chart per GPU type and
// precision holding every row's kernels, a colour per kernel and a point shape per row.
#include "results/roofline_chart.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "results/report_support.hpp"

namespace dtsim::results {

using nlohmann::json;
using namespace report_support;

// The GPU's name from the resolved scenario (which writes the GPU out as a map with its name).
std::string gpu_of(const json& row) {
  if (!row.contains("scenario") || !row["scenario"].contains("cluster")) return "";
  const json& c = row["scenario"]["cluster"];
  if (!c.contains("gpu")) return "";
  if (c["gpu"].is_string()) return plain(c["gpu"].get<std::string>());
  return c["gpu"].is_object() && c["gpu"].contains("name") && c["gpu"]["name"].is_string()
             ? plain(c["gpu"]["name"].get<std::string>()) : "";
}

namespace {

inline constexpr int kRowShapes[] = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10, 12, 14};

RooflinePlot roofline_plot(const std::vector<const json*>& rows, const std::string& stem) {
  const json& first = rows.front()->at("roofline");
  RooflinePlot p;
  p.stem = stem;
  p.rows = rows.size();
  p.ridge = number(first, "ridge_flop_per_byte");
  const double peak = number(first, "peak_tflops");
  const double bw = number(first, "memory_bandwidth_GBps");
  const std::string gpu = gpu_of(*rows.front());
  p.label = fmt::format("{} ({}, {})", rows.size() == 1 ? name_of(*rows.front()) : fmt::format("{} rows", rows.size()),
                        gpu.empty() ? "GPU" : gpu, first.value("precision", std::string()));
  double lo = p.ridge, hi = p.ridge, lowest = peak;
  p.data = "# flop_per_byte\tachieved_tflops\tkernel\tpass\trow\tpoint_type\n";
  std::vector<std::string> kinds;   // kernels with matrix FLOPs, in first-seen order: one colour each
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double layer_time = 0, elementwise_time = 0;
    const int shape = kRowShapes[i % std::size(kRowShapes)];
    for (const auto& k : rows[i]->at("roofline").at("kernels")) {
      const double t = number(k, "time_s");
      const std::string scope = k.value("scope", std::string());
      if (scope == "layer") layer_time += t;
      if (number(k, "flops") <= 0) {
        if (scope == "layer") elementwise_time += t;
        continue;
      }
      const double x = number(k, "flop_per_byte");
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      if (number(k, "achieved_tflops") > 0) lowest = std::min(lowest, number(k, "achieved_tflops"));
      const std::string kind = plain(k.value("kernel", std::string()));
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
      p.data += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", cell(x), cell(number(k, "achieved_tflops")), kind,
                            plain(k.value("pass", std::string())), plain(name_of(*rows[i])), shape);
    }
    const double share = layer_time > 0 ? elementwise_time / layer_time : 0;
    p.elementwise_low = std::min(p.elementwise_low, share);
    p.elementwise_high = std::max(p.elementwise_high, share);
  }
  const double xmin = std::pow(10.0, std::floor(std::log10(std::max(std::min(lo / 4, p.ridge / 30), 1e-3))));
  const double xmax = std::pow(10.0, std::ceil(std::log10(hi * 4)));
  p.script = header(stem, "Roofline: " + p.label);
  p.script += fmt::format(
      "set logscale xy\nset xlabel \"arithmetic intensity (FLOP/byte)\"\nset ylabel \"TFLOP/s\"\n"
      "set xrange [{0}:{1}]\nset yrange [{2}:{3}]\n"
      // A paper column: the key below in three columns, and the x tics with SI prefixes (1k, 100k) so the widest fits.
      "if (dtsim_w_in < 5) {{ set key outside below horizontal Left reverse maxcols 3 font \",6\"; "
      "set format x \"%.0s%c\" }} "
      "else {{ set key outside right top vertical Left reverse }}\n"
      "set samples 400\npeak = {4}\nbw = {5}\nroof(x) = x * bw / 1000 < peak ? x * bw / 1000 : peak\n"
      "set arrow from {6},{2} to {6},peak nohead dt 2 lc rgb \"#888888\"\n"
      "set label \"ridge point {6:.0f} FLOP/byte\" at {6},peak * 0.4 offset 0.5,0 font \",9\"\n"
      "plot roof(x) with lines lw 3 lc rgb \"#333333\" title sprintf(\"roofline %.0f TFLOP/s, %.0f GB/s\", peak, bw)",
      cell(xmin), cell(xmax), cell(std::min(peak / 100, lowest / 2)), cell(peak * 2), cell(peak), cell(bw), p.ridge);
  // One colour per kernel (its passes share it), the point's shape its row's (column 6).
  for (std::size_t i = 0; i < kinds.size(); ++i)
    p.script += fmt::format(", \\\n  \"{0}.dat\" using (stringcolumn(3) eq {1} ? $1 : NaN):2:6 with points pt variable "
                            "ps 1.5 lc rgb \"{2}\" notitle, \\\n  NaN with points pt 7 ps 1.5 lc rgb \"{2}\" title {1}",
                            stem, gp_string(kinds[i]), colour(i));
  // The rows' shapes in the key (the first twelve; rows past them share shapes).
  if (rows.size() > 1)
    for (std::size_t i = 0; i < std::min(rows.size(), std::size(kRowShapes)); ++i)
      p.script += fmt::format(", \\\n  NaN with points pt {} ps 1.5 lc rgb \"#555555\" title {}", kRowShapes[i],
                              gp_string(name_of(*rows[i])));
  p.script += "\n" + footer();
  return p;
}

}  // namespace

std::vector<RooflinePlot> roofline_plots(const std::vector<const json*>& ok) {
  std::vector<std::pair<std::string, std::vector<const json*>>> kinds;
  for (const json* r : ok) {
    if (!r->contains("roofline")) continue;
    const std::string kind = gpu_of(*r) + "/" + (*r)["roofline"].value("precision", std::string());
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {kind, {}});
    it->second.push_back(r);
  }
  std::vector<RooflinePlot> out;
  for (const auto& [kind, of_kind] : kinds) out.push_back(roofline_plot(of_kind, fmt::format("roofline-{}", out.size() + 1)));
  return out;
}

}  // namespace dtsim::results
