// Helpers the report builders share (results/report.cpp, results/serving_report.cpp): gnuplot-safe text, numbers
// read from rows, data cells and chart headers.
#pragma once

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dtsim::results::report_support {

// The three outputs of every chart: PNG for the page, SVG and PDF for a paper (gnuplot's cairo and svg terminals),
// at the size `size.gp` beside the script gives (results::chart_size_gp).
// Bytes in a GiB, for the tables that print memory.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

inline constexpr const char* kTerminals =
    "  if (ext eq \"png\") { set terminal pngcairo size dtsim_w_in * dtsim_png_dpi, dtsim_h_in * dtsim_png_dpi "
    "font \"sans,\" . (dtsim_font_pt * dtsim_png_dpi / 100) noenhanced }\n"
    "  if (ext eq \"svg\") { set terminal svg size dtsim_w_in * 100, dtsim_h_in * 100 dynamic font \"sans,\" . dtsim_font_pt "
    "noenhanced background \"white\" }\n"
    "  if (ext eq \"pdf\") { set terminal pdfcairo size dtsim_w_in, dtsim_h_in font \"sans,\" . dtsim_font_pt noenhanced }\n";

// One colour per curve, kernel or line, the same in every chart (Tableau 10); `colour(i)` wraps around.
inline constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
inline const char* colour(std::size_t i) { return kPalette[i % std::size(kPalette)]; }

// Text that goes into gnuplot data files, comments and Markdown: no control characters (tabs, newlines: gnuplot
// would split on them), quotes or backslashes (it would end or escape on them), back-quotes (gnuplot substitutes
// the output of a back-quoted command anywhere on a command line but inside single quotes).
inline std::string plain(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f' || c == '"') c = ' ';
    else if (c == '\\') c = '/';
    else if (c == '`') c = '\'';
  return s;
}

// Any text as a gnuplot string literal that stays data, whatever it holds: single-quoted (gnuplot substitutes
// neither back-quoted commands nor @macros and interprets no escape inside single quotes), a quote doubled, control
// characters as spaces (a newline would end the command).
inline std::string gp_string(std::string_view s) {
  std::string out(1, '\'');
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') out += ' ';
    else if (c == '\'') out += "''";
    else out += c;
  }
  out += '\'';
  return out;
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

// A fraction as a percentage with one decimal ("" for NaN: a figure the row does not have).
inline std::string pct(double v) { return std::isnan(v) ? "" : fmt::format("{:.1f} %", 100 * v); }

// A chart script's first lines: a loop over the three formats, each drawing `<stem>.png`, `.svg` and `.pdf` from
// the same commands (reset first, so nothing one pass set carries into the next), tab-separated data, the title
// and a light grid. The script ends with `footer()`.
inline std::string header(const std::string& stem, const std::string& title) {
  return fmt::format("# {0}.png, {0}.svg and {0}.pdf: {1}. Run from this directory: gnuplot {0}.gp\n"
                     "load \"size.gp\"\ndo for [ext in \"png svg pdf\"] {{\n{2}  set output \"{0}.\".ext\n  reset\n"
                     "set datafile separator \"\\t\"\nset title {3}\nset grid ytics lc rgb \"#dddddd\"\n",
                     stem, plain(title), kTerminals, gp_string(title));
}

// Closes `header()`'s loop over the formats.
inline std::string footer() { return "unset output\n}\n"; }

// A Markdown table cell: '|' escaped, line breaks as spaces (they would end the row).
inline std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  return out;
}

}  // namespace dtsim::results::report_support
