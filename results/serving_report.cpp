#include "results/serving_report.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "results/report_support.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using namespace report_support;

constexpr const char* kRateKey = "inference.requests.rate_per_s";

bool has_number(const json& obj, const char* key) { return obj.contains(key) && obj[key].is_number(); }
bool number_or_null(const json& obj, const char* key) {
  return obj.contains(key) && (obj[key].is_number() || obj[key].is_null());
}

// The sweep values that set a curve apart: every axis of the row's point but the arrival rate ("" for none).
std::string series_of(const json& row) {
  if (!row.contains("point") || !row["point"].contains("values")) return "";
  std::string out;
  for (const auto& [key, value] : row["point"]["values"].items()) {
    if (key == kRateKey) continue;
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return plain(out);
}

std::string ms_or_dash(double seconds) { return std::isnan(seconds) ? "-" : fmt::format("{:.1f}", 1e3 * seconds); }

// One block per curve (gnuplot's index), its points by arrival rate; times in ms.
struct StreamCurves {
  std::vector<std::string> titles;
  std::string data;
  std::vector<bool> has_ttft, has_tpot;   // per curve: some point has the panel's figure (gnuplot refuses an empty plot)
  [[nodiscard]] bool any(const std::vector<bool>& v) const { return std::ranges::find(v, true) != v.end(); }
  [[nodiscard]] bool drawable() const { return any(has_ttft) || any(has_tpot); }
};

StreamCurves stream_curves(const std::vector<const json*>& streams) {
  std::map<std::string, std::vector<const json*>> by_series;
  std::vector<std::string> order;
  for (const json* r : streams) {
    const std::string s = series_of(*r);
    if (!by_series.contains(s)) order.push_back(s);
    by_series[s].push_back(r);
  }
  StreamCurves c;
  c.data = "# curve blocks (gnuplot index), one per series: rate_per_s\tthroughput_tokens_per_s\tp50_ttft_ms\t"
           "p99_ttft_ms\tp50_tpot_ms\tp99_tpot_ms\tname\n";
  for (const auto& s : order) {
    auto points = by_series[s];
    std::ranges::stable_sort(points, {}, [](const json* r) { return number((*r)["stream"], "arrival_rate_per_s"); });
    c.titles.push_back(s.empty() ? "stream" : s);
    c.data += fmt::format("# {}\n", c.titles.back());
    const auto some = [&](const char* key) {
      return std::ranges::any_of(points, [&](const json* r) { return !std::isnan(number(*r, key)); });
    };
    c.has_ttft.push_back(some("p50_ttft_s"));
    c.has_tpot.push_back(some("p50_tpot_s"));
    for (const json* r : points)
      c.data += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", cell(number((*r)["stream"], "arrival_rate_per_s")),
                            cell(number(*r, "throughput_tokens_per_s")), cell(1e3 * number(*r, "p50_ttft_s")),
                            cell(1e3 * number(*r, "p99_ttft_s")), cell(1e3 * number(*r, "p50_tpot_s")),
                            cell(1e3 * number(*r, "p99_tpot_s")), name_of(*r));
    c.data += "\n\n";
  }
  return c;
}

// Two panels against output throughput: TTFT and TPOT, p50 solid and p99 dashed, a colour per curve; a panel only
// for a figure some curve has (a stream of one-token outputs has no TPOT), and in it only the curves that have it.
std::string latency_script(const StreamCurves& c) {
  static constexpr const char* colours[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#76b7b2", "#b07aa1"};
  struct Panel {
    const char* title;
    int p50, p99;
    const std::vector<bool>& has;
  };
  std::vector<Panel> panels;
  if (c.any(c.has_ttft)) panels.push_back({"time to first token", 3, 4, c.has_ttft});
  if (c.any(c.has_tpot)) panels.push_back({"time per output token", 5, 6, c.has_tpot});
  std::string out = header("latency", "Latency against throughput as the arrival rate rises") +
                    fmt::format("set multiplot layout 1,{}\n", panels.size()) +
                    "set xlabel \"output tokens per second\"\nset key top left\nset xrange [0:*]\nset yrange [0:*]\n";
  for (const Panel& p : panels) {
    out += fmt::format("set title \"{}\"\nset ylabel \"ms\"\nplot ", p.title);
    bool first = true;
    for (std::size_t i = 0; i < c.titles.size(); ++i) {
      if (!p.has[i]) continue;
      const char* colour = colours[i % std::size(colours)];
      out += fmt::format("{}\"latency.dat\" index {} using 2:{} with linespoints lw 2 pt 7 lc rgb \"{}\" title {}, "
                         "\"latency.dat\" index {} using 2:{} with linespoints lw 2 dt 2 pt 6 lc rgb \"{}\" title {}",
                         first ? "" : ", ", i, p.p50, colour, gp_string(c.titles[i] + " p50"), i, p.p99, colour,
                         gp_string(c.titles[i] + " p99"));
      first = false;
    }
    out += "\n";
  }
  return out + "unset multiplot\n" + footer();
}

std::string serving_summary(const std::vector<json>& rows, std::size_t served, bool chart, const std::string& title,
                    const std::string& source) {
  std::string out = fmt::format("# {}\n\nFrom `{}`: {} rows, {} served.\n\n", title, source, rows.size(), served);
  out += "| configuration | GPUs | TTFT (ms) | TPOT (ms) | tokens/s | arrival rate (/s) | TTFT p50 / p99 (ms) | "
         "TPOT p50 / p99 (ms) | throughput (tokens/s) | queue p99 (ms) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const json& r : rows) {
    if (!is_serving_row(r)) {
      out += fmt::format("| {} | | | | | | | | | not simulated: {} |\n", md_cell(name_of(r)),
                         md_cell(r.value("error", std::string("no result"))));
      continue;
    }
    out += fmt::format("| {} | {} | {} | {} | {:.4g} |", md_cell(name_of(r)), cell(number(r, "gpus")),
                       ms_or_dash(number(r, "ttft_s")), ms_or_dash(number(r, "tpot_s")), number(r, "tokens_per_s"));
    if (r.contains("stream")) {
      const json& st = r["stream"];
      out += fmt::format(" {:.3g} | {} / {} | {} / {} | {:.4g} | {} |\n", number(st, "arrival_rate_per_s"),
                         ms_or_dash(number(r, "p50_ttft_s")), ms_or_dash(number(r, "p99_ttft_s")), ms_or_dash(number(r, "p50_tpot_s")),
                         ms_or_dash(number(r, "p99_tpot_s")), number(r, "throughput_tokens_per_s"), ms_or_dash(number(st, "p99_queue_s")));
    } else {
      out += " | | | | |\n";
    }
  }
  out += "\nTTFT and TPOT: the static batch of the scenario (one request alone, of the stream's mean lengths, for a "
         "stream); the percentiles are over the stream's requests.\n";
  if (chart)
    out += "\n## Charts\n\n![latency against throughput](plots/latency.png)\n\nEach curve is one setting of the "
           "sweep's other axes; its points are arrival rates. Past the knee the queue grows and TTFT climbs while "
           "throughput stays flat. The chart is drawn by gnuplot from `plots/latency.gp` and `plots/latency.dat`.\n";
  else
    out += "\nNo chart: no row serves a request stream (inference.requests) that completed a request.\n";
  return out;
}

}  // namespace

bool is_serving_row(const json& row) { return row.is_object() && row.contains("ttft_s"); }

std::string serving_row_problem(const json& row) {
  if (!row.contains("name") || !row["name"].is_string()) return "no string `name`";
  for (const char* key : {"gpus", "ttft_s", "tokens_per_s"})
    if (!has_number(row, key)) return fmt::format("no number `{}`", key);
  if (!row.contains("stream")) return "";
  if (!row["stream"].is_object() || !has_number(row["stream"], "arrival_rate_per_s"))
    return "`stream` needs a number `arrival_rate_per_s`";
  if (!has_number(row, "throughput_tokens_per_s")) return "no number `throughput_tokens_per_s`";
  for (const char* key : {"p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s"})
    if (!number_or_null(row, key)) return fmt::format("`{}` is neither a number nor null", key);
  return "";
}

Report build_serving_report(const std::vector<json>& rows, const std::string& title, const std::string& source) {
  std::vector<const json*> streams;
  std::size_t served = 0;
  for (const json& r : rows) {
    if (r.contains("error")) continue;
    if (!is_serving_row(r))
      throw std::invalid_argument(fmt::format("row '{}' is a training row among serving rows", name_of(r)));
    ++served;
    if (r.contains("stream")) streams.push_back(&r);
  }
  if (served == 0) throw std::invalid_argument("no simulated row (every row is an error row)");
  Report rep;
  const StreamCurves c = stream_curves(streams);
  const bool chart = c.drawable();
  if (chart) {
    rep.files.push_back({"plots/latency.dat", c.data});
    rep.files.push_back({"plots/latency.gp", latency_script(c)});
    rep.scripts.push_back("plots/latency.gp");
  }
  rep.files.push_back({"report.md", serving_summary(rows, served, chart, title, source)});
  return rep;
}

}  // namespace dtsim::results
