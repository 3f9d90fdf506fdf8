#include "results/sweep_charts.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>

#include "results/report_support.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using namespace report_support;

constexpr const char* kGpus = "gpus";   // the pseudo-axis: the row's GPU count

// The value of `axis` in a row: its sweep value, or the GPU count; null when the row has none.
json value_of(const json& row, const std::string& axis) {
  if (axis == kGpus) return row.contains("gpus") ? row["gpus"] : json();
  if (!row.contains("point") || !row["point"].contains("values")) return json();
  const json& v = row["point"]["values"];
  return v.contains(axis) ? v[axis] : json();
}

std::vector<json> distinct_values(const std::vector<const json*>& ok, const std::string& axis) {
  std::vector<json> out;
  for (const json* r : ok) {
    json v = value_of(*r, axis);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
  }
  return out;
}

bool numeric(const std::vector<json>& values) {
  return std::all_of(values.begin(), values.end(), [](const json& v) { return v.is_number(); });
}

// Whether each value of `from` goes with one value of `to` (`to` advances with `from`, as zipped axes do).
bool determines(const std::vector<const json*>& ok, const std::string& from, const std::string& to) {
  std::vector<std::pair<json, json>> seen;
  for (const json* r : ok) {
    json a = value_of(*r, from), b = value_of(*r, to);
    const auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == a; });
    if (it == seen.end()) seen.emplace_back(std::move(a), std::move(b));
    else if (it->second != b) return false;
  }
  return true;
}

// A value as a label: numbers short, maps by the keys that differ among the axis's values.
std::string label_of(const json& v, const std::vector<json>& all) {
  if (v.is_null()) return "-";
  if (v.is_string()) return plain(v.get<std::string>());
  if (v.is_number()) return fmt::format("{:g}", v.get<double>());
  if (v.is_object()) {
    if (v.contains("name") && v["name"].is_string()) return plain(v["name"].get<std::string>());
    std::string out;
    for (const auto& item : v.items()) {
      // Named, not structured bindings: clang 14 (the fuzz build's compiler) cannot capture those in a lambda.
      const std::string& k = item.key();
      const json& x = item.value();
      const bool varies = std::any_of(all.begin(), all.end(), [&](const json& o) {
        return !o.is_object() || !o.contains(k) || o[k] != x;
      });
      if (varies) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, x.is_string() ? x.get<std::string>() : x.dump());
    }
    return plain(out.empty() ? v.dump() : out);
  }
  return plain(v.dump());
}

// An axis as its chart title, with units.
std::string axis_title(const std::string& key) {
  static const std::map<std::string, std::string> titles = {
      {kGpus, "GPUs"},
      {"cluster.nodes", "nodes"},
      {"cluster.gpus_per_node", "GPUs per node"},
      {"cluster.nics_per_node", "NICs per node"},
      {"cluster.oversubscription", "oversubscription (ratio)"},
      {"cluster.intra", "intra-node topology"},
      {"cluster.inter", "inter-node fabric"},
      {"cluster.inter_link", "inter-node link"},
      {"cluster.intra_link", "intra-node link"},
      {"cluster.gpu", "GPU"},
      {"training.global_batch", "global batch (sequences)"},
      {"training.micro_batch", "micro-batch (sequences)"},
      {"training.precision", "precision"},
      {"training.recompute", "recomputation"},
      {"model.seq_length", "sequence length (tokens)"},
      {"model.preset", "model"},
      {"model.layers", "layers"},
      {"model.hidden", "hidden size"},
      {"parallelism.tp", "tensor-parallel size (tp)"},
      {"parallelism.pp", "pipeline-parallel size (pp)"},
      {"parallelism.dp", "data-parallel size (dp)"},
      {"parallelism.cp", "context-parallel size (cp)"},
      {"parallelism.ep", "expert-parallel size (ep)"},
      {"parallelism.vpp", "virtual stages per rank (vpp)"},
      {"parallelism.zero", "ZeRO stage"}};
  const auto it = titles.find(key);
  return it != titles.end() ? it->second : key;
}

// The axis's last dotted part: how a label names it ("tp=4").
std::string short_name(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

struct Metric {
  const char* stem;
  const char* title;
  const char* ylabel;
  int column;
};
constexpr Metric kMetrics[] = {{"step_time", "Step time", "step time (s)", 2},
                               {"throughput", "Throughput per GPU", "throughput per GPU (tokens/s)", 3},
                               {"mfu", "Model FLOPs utilisation", "MFU (%)", 4}};

void check_choice(const std::string& option, const std::string& key, const std::vector<std::string>& axes) {
  if (key.empty() || std::find(axes.begin(), axes.end(), key) != axes.end()) return;
  std::string list;
  for (const auto& a : axes) list += (list.empty() ? "" : ", ") + a;
  throw std::invalid_argument(fmt::format("{}\t{}\tis not an axis that varies in these rows:\t{}", option, key,
                                          list.empty() ? "none varies" : list));
}

}  // namespace

std::vector<std::string> varying_axes(const std::vector<const json*>& ok) {
  std::set<std::string> keys;
  for (const json* r : ok)
    if (r->contains("point") && (*r)["point"].contains("values") && (*r)["point"]["values"].is_object())
      for (const auto& [k, v] : (*r)["point"]["values"].items())
        if (k != "name" && !k.starts_with("reference.")) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (distinct_values(ok, k).size() >= 2) out.push_back(k);
  if (distinct_values(ok, kGpus).size() >= 2) out.push_back(kGpus);
  return out;
}

std::set<std::string> gpu_count_axes(const std::vector<const json*>& ok) {
  std::set<std::string> out;
  for (const auto& a : varying_axes(ok))
    if (a != kGpus && determines(ok, a, kGpus) && distinct_values(ok, kGpus).size() >= 2) out.insert(a);
  return out;
}

std::optional<SweepCharts> sweep_charts(const std::vector<const json*>& ok, const ChartChoice& choice) {
  const auto axes = varying_axes(ok);
  check_choice("--x", choice.x, axes);
  check_choice("--series", choice.series, axes);
  check_choice("--facet", choice.facet, axes);
  if (axes.empty()) return std::nullopt;
  // Each axis's values, read once (a large sweep has thousands of rows).
  std::map<std::string, std::vector<json>> values;
  for (const auto& a : axes) values[a] = distinct_values(ok, a);
  // x: as chosen, else the first numeric swept axis, else the GPU count, else the first axis that varies; never
  // the axis chosen for the panels or to lead the lines.
  std::vector<std::string> free_axes;
  for (const auto& a : axes)
    if (a != choice.facet && a != choice.series) free_axes.push_back(a);
  std::string x = choice.x;
  if (x.empty())
    for (const auto& a : free_axes)
      if (a != kGpus && numeric(values[a])) {
        x = a;
        break;
      }
  if (x.empty() && std::find(free_axes.begin(), free_axes.end(), kGpus) != free_axes.end()) x = kGpus;
  if (x.empty() && !free_axes.empty()) x = free_axes.front();
  if (x.empty())
    throw std::invalid_argument(fmt::format("--series\t{}\tleaves no axis to draw along x:\tanother axis for "
                                            "--series or --facet", choice.series));
  const std::string facet = choice.facet;
  if (facet == x) throw std::invalid_argument(fmt::format("--facet\t{}\tis the x axis already:\tanother axis", facet));
  // The lines: every other axis that does not advance with x or the panels; --series leads the label.
  std::vector<std::string> line_axes;
  if (!choice.series.empty() && choice.series != x && choice.series != facet) line_axes.push_back(choice.series);
  for (const auto& a : axes) {
    if (a == x || a == facet || a == choice.series || a == kGpus) continue;
    if (determines(ok, x, a) || (!facet.empty() && determines(ok, facet, a))) continue;
    line_axes.push_back(a);
  }
  const auto& x_values = values[x];
  const bool numeric_x = numeric(x_values);
  // A categorical x is labelled by the sweep's names where they go one to one with it.
  const bool named = std::any_of(ok.begin(), ok.end(), [](const json* r) {
    return r->contains("point") && (*r)["point"]["values"].contains("name");
  }) && determines(ok, x, "name") && determines(ok, "name", x);
  const auto x_label = [&](const json& row) {
    return named ? label_of(value_of(row, "name"), {}) : label_of(value_of(row, x), x_values);
  };
  const auto x_position = [&](const json& row) -> double {
    const json v = value_of(row, x);
    if (numeric_x) return v.get<double>();
    return static_cast<double>(std::find(x_values.begin(), x_values.end(), v) - x_values.begin() + 1);
  };
  // A line's label: its values, named by axis when more than one axis splits the lines (the key's title names a
  // single one).
  const auto line_label = [&](const json& row) {
    std::string out;
    for (const auto& a : line_axes) {
      const std::string v = label_of(value_of(row, a), values[a]);
      out += line_axes.size() == 1 ? v : fmt::format("{}{}={}", out.empty() ? "" : ", ", short_name(a), v);
    }
    return out;
  };
  SweepCharts c;
  // Each row's label in the other charts: the values of the axes that vary.
  for (const json* r : ok) {
    std::string label = named ? label_of(value_of(*r, "name"), {}) : "";
    if (!named)
      for (const auto& a : axes)
        if (a != kGpus) label += fmt::format("{}{}={}", label.empty() ? "" : ", ", short_name(a), label_of(value_of(*r, a), values[a]));
    c.labels[r] = label.empty() ? name_of(*r) : label;
  }
  // Blocks of sweep.dat: per panel, per line, the points in x order. Each row's panel and line, found once.
  std::vector<std::string> panels, lines;
  std::map<std::pair<std::size_t, std::size_t>, std::vector<const json*>> grouped;
  for (const json* r : ok) {
    const std::string p = facet.empty() ? "" : label_of(value_of(*r, facet), values[facet]);
    const std::string l = line_label(*r);
    auto pi = std::find(panels.begin(), panels.end(), p);
    if (pi == panels.end()) pi = panels.insert(panels.end(), p);
    auto li = std::find(lines.begin(), lines.end(), l);
    if (li == lines.end()) li = lines.insert(lines.end(), l);
    grouped[{static_cast<std::size_t>(pi - panels.begin()), static_cast<std::size_t>(li - lines.begin())}].push_back(r);
  }
  struct Block {
    std::size_t panel, line;
    std::vector<const json*> rows;
    bool infeasible = false;
  };
  std::vector<Block> blocks;
  for (auto& [at, members] : grouped) {   // in (panel, line) order
    Block b{at.first, at.second, std::move(members), false};
    std::stable_sort(b.rows.begin(), b.rows.end(), [&](const json* a, const json* z) { return x_position(*a) < x_position(*z); });
    b.infeasible = std::any_of(b.rows.begin(), b.rows.end(), [](const json* r) {
      return r->contains("memory") && !(*r)["memory"].value("fits", true);
    });
    blocks.push_back(std::move(b));
  }
  std::string data;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    data += fmt::format("{}# block {}: panel '{}', line '{}'\n# x\tstep_time_s\ttokens_per_s_per_gpu\tmfu_pct\tfits\tname\n",
                        i ? "\n\n" : "", i, panels[b.panel], lines[b.line]);
    for (const json* r : b.rows) {
      const bool has_fit = r->contains("memory");
      data += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", cell(x_position(*r)), cell(number(*r, "step_time_s")),
                          cell(number(*r, "tokens_per_s") / number(*r, "gpus")), cell(100 * number(*r, "mfu")),
                          has_fit ? ((*r)["memory"].value("fits", true) ? "1" : "0") : "NaN", name_of(*r));
    }
  }
  c.files.push_back({"plots/sweep.dat", data});
  // The x axis: log 2 for numbers spanning 8x and more, else linear; categories by their labels.
  std::string x_setup = fmt::format("set xlabel {}\n", gp_string(axis_title(x)));
  if (numeric_x) {
    double lo = 1e300, hi = -1e300;
    for (const auto& v : x_values) lo = std::min(lo, v.get<double>()), hi = std::max(hi, v.get<double>());
    if (lo > 0 && hi / lo >= 8) x_setup += "set logscale x 2\n";
    // A few whole values (degrees, batch sizes, node counts): a tick at each, no fractions between.
    const bool whole = std::all_of(x_values.begin(), x_values.end(), [](const json& v) {
      return v.get<double>() == std::round(v.get<double>());
    });
    if (whole && x_values.size() <= 12) {
      std::vector<double> ticks;
      for (const auto& v : x_values) ticks.push_back(v.get<double>());
      std::ranges::sort(ticks);
      x_setup += fmt::format("set xtics ({})\n", fmt::join(ticks, ", "));
    }
    x_setup += "set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.02\n";
  } else {
    std::string tics;
    for (const json* r : ok) {
      const std::string entry = fmt::format("{} {}", gp_string(x_label(*r)), x_position(*r));
      if (tics.find(entry) == std::string::npos) tics += (tics.empty() ? "" : ", ") + entry;
    }
    x_setup += fmt::format("set xtics ({}) rotate by -25 font \",9\"\nset xrange [0.5:{}.5]\nset bmargin 7\n", tics,
                           x_values.size());
  }
  const std::string line_title = line_axes.empty() ? "" : [&] {
    std::string t;
    for (const auto& a : line_axes) t += (t.empty() ? "" : ", ") + short_name(a);
    return t;
  }();
  static const int shapes[] = {7, 5, 9, 11, 13, 15};
  const std::size_t cols = std::min<std::size_t>(panels.size(), 3);
  const std::size_t rows_of_panels = (panels.size() + cols - 1) / cols;
  for (const Metric& m : kMetrics) {
    std::string s = header(m.stem, fmt::format("{} against {}", m.title, axis_title(x)));
    s += x_setup + fmt::format("set ylabel {}\nset yrange [0:*]\n", gp_string(m.ylabel));
    s += fmt::format("set key outside right top vertical Left reverse font \",9\"{}\n",
                     line_title.empty() ? "" : " title " + gp_string(line_title));
    if (panels.size() > 1)
      s += fmt::format("set multiplot layout {},{} title {}\n", rows_of_panels, cols,
                       gp_string(fmt::format("{} against {}", m.title, axis_title(x))));
    for (std::size_t p = 0; p < panels.size(); ++p) {
      if (panels.size() > 1) s += fmt::format("set title {}\n", gp_string(short_name(facet) + "=" + panels[p]));
      std::string plot;
      bool marked = false;
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i].panel != p) continue;
        const std::size_t l = blocks[i].line;
        plot += fmt::format("{}\"sweep.dat\" index {} using 1:{} with {} lw 2 pt {} ps 1.4 lc rgb \"{}\" title {}",
                            plot.empty() ? "" : ", \\\n  ", i, m.column, numeric_x ? "linespoints" : "points",
                            shapes[l % std::size(shapes)], colour(l),
                            gp_string(lines[l].empty() ? std::string(m.title) : lines[l]));
        if (blocks[i].infeasible) {
          plot += fmt::format(", \\\n  \"sweep.dat\" index {} using 1:($5 == 0 ? ${} : NaN) with points pt 2 ps 2.6 lw 2 "
                              "lc rgb \"#d62728\" {}",
                              i, m.column, marked ? "notitle" : "title \"does not fit in memory\"");
          marked = true;
        }
      }
      s += "plot " + plot + "\n";
    }
    if (panels.size() > 1) s += "unset multiplot\n";
    s += footer();
    c.files.push_back({fmt::format("plots/{}.gp", m.stem), s});
    c.scripts.push_back(fmt::format("plots/{}.gp", m.stem));
    c.charts.emplace_back(m.stem, fmt::format("{} against {}", m.title, axis_title(x)));
  }
  c.choice = fmt::format("x: `{}`; lines: {}; panels: {}", x,
                         line_axes.empty() ? "one" : fmt::format("`{}`", fmt::join(line_axes, "`, `")),
                         facet.empty() ? "none" : fmt::format("`{}`", facet));
  return c;
}

}  // namespace dtsim::results
