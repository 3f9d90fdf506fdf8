// Helpers the report builders share (results/report.cpp, results/serving_report.cpp): gnuplot-safe text, numbers
// read from rows, data cells and chart headers.
#pragma once

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>

namespace dtsim::results::report_support {

inline constexpr const char* kTerminal = "set terminal pngcairo size 1100,560 font \"sans,10\" noenhanced";

// Text that goes into gnuplot data and quoted titles: no tabs, newlines, quotes or backslashes (gnuplot would
// split, end or escape on them).
inline std::string plain(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r' || c == '"') c = ' ';
    else if (c == '\\') c = '/';
  return s;
}

// `row[key]` when it is a number, else NaN.
inline double number(const nlohmann::json& row, const std::string& key) {
  const auto it = row.find(key);
  return it != row.end() && it->is_number() ? it->get<double>() : std::nan("");
}

inline std::string name_of(const nlohmann::json& row) {
  return plain(row.contains("name") && row["name"].is_string() ? row["name"].get<std::string>() : "?");
}

// Data files are tab-separated so names may hold spaces; a missing figure is gnuplot's "NaN".
inline std::string cell(double v) { return std::isnan(v) ? "NaN" : fmt::format("{:.9g}", v); }

// A chart script's first lines: the PNG terminal, its output and title, tab-separated data, a light grid.
inline std::string header(const std::string& stem, const std::string& title) {
  return fmt::format("# {0}.png: {1}. Run from this directory: gnuplot {0}.gp\n{2}\nset output \"{0}.png\"\n"
                     "set datafile separator \"\\t\"\nset title \"{1}\"\nset grid ytics lc rgb \"#dddddd\"\n",
                     stem, title, kTerminal);
}

// A Markdown table cell: '|' escaped.
inline std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace dtsim::results::report_support
