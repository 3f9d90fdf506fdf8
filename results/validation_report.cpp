#include "results/validation_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "results/run_report.hpp"

namespace dtsim::results {

using nlohmann::json;

json validation_json(const std::vector<ValidationTable>& tables) {
  json out = json::array();
  for (const ValidationTable& t : tables) {
    json rows = json::array();
    std::string source;
    double sum = 0, worst = 0;
    const auto add = [&](const json& name, const std::string& figure, double published, double simulated,
                         const json& row) {
      const double error = simulated / published - 1;
      rows.push_back({{"name", name}, {"figure", figure}, {"published", published}, {"dtsim", simulated},
                      {"error", error}, {"auto_chosen", row.value("auto_chosen", json::object())}});
      sum += std::abs(error);
      worst = std::max(worst, std::abs(error));
    };
    for (const json& r : t.rows) {
      if (r.at("reference").contains("source")) source = r.at("reference").at("source").get<std::string>();
      if (r.contains("ratio_to")) {   // published ratios of this row's figures to its baseline's
        const json& base = r.at("ratio_to");
        for (const auto& [key, value] : r.at("ratios").items())
          add(fmt::format("{} / {}", r.at("name").get<std::string>(), base.at("name").get<std::string>()),
              key + " ratio", value.get<double>(), reference_figure(r, key) / reference_figure(base, key), r);
        continue;
      }
      for (const auto& [key, value] : r.at("reference").items())
        if (key != "source") add(r.at("name"), key, value.get<double>(), reference_figure(r, key), r);
    }
    const double mean = rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
    out.push_back({{"name", t.name}, {"source", source}, {"stated_only", !t.unstated.empty() || !t.stated.empty()},
                   {"unstated", t.unstated}, {"stated", t.stated}, {"rows", rows}, {"mean_abs_error", mean},
                   {"max_abs_error", worst}});
  }
  return {{"tables", out}};
}

namespace {

// What `auto` chose for a row, short: "mb 4, vpp 6, recompute none".
std::string chosen_text(const json& chosen) {
  std::string out;
  for (const auto& [key, value] : chosen.items()) {
    const auto dot = key.rfind('.');
    std::string name = key.substr(dot + 1);
    if (name == "micro_batch") name = "mb";
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

std::string summary(const json& tables) {
  std::string out = fmt::format("summary: mean / max absolute error, as written and from the stated columns only\n");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const json& t = tables[i];
    if (t.at("stated_only").get<bool>()) continue;
    const auto figure = [](const json& x) {
      return fmt::format("{:5.1f} % / {:5.1f} %", 100 * x.at("mean_abs_error").get<double>(),
                         100 * x.at("max_abs_error").get<double>());
    };
    const bool paired = i + 1 < tables.size() && tables[i + 1].at("stated_only").get<bool>() &&
                        tables[i + 1].at("name") == t.at("name");
    out += fmt::format("  {:<56} {}   {}\n", t.at("name").get<std::string>(), figure(t),
                       paired ? figure(tables[i + 1]) : std::string("(states every key it sets)"));
  }
  return out;
}

}  // namespace

std::string validation_text(const json& report) {
  std::string out;
  for (const json& t : report.at("tables")) {
    const bool stated = t.value("stated_only", false);
    out += fmt::format("{} ({}){}\n", t.at("source").get<std::string>(), t.at("name").get<std::string>(),
                       stated ? ", stated columns only" : "");
    if (stated) {
      std::string keys;
      for (const json& k : t.at("unstated")) keys += (keys.empty() ? "" : ", ") + k.get<std::string>();
      if (!keys.empty()) out += fmt::format("  left to dtsim's defaults: {}\n", keys);
      std::string given;
      for (const json& k : t.value("stated", json::array())) given += (given.empty() ? "" : ", ") + k.get<std::string>();
      if (!given.empty()) out += fmt::format("  as the source states: {}\n", given);
    }
    out += fmt::format("  {:<40} {:<20} {:>10} {:>10} {:>8}{}\n", "row", "figure", "published", "dtsim", "error",
                       stated ? "  auto chose" : "");
    for (const json& r : t.at("rows"))
      out += fmt::format("  {:<40} {:<20} {:>10.4g} {:>10.4g} {:>+7.1f}%{}\n", r.at("name").get<std::string>(),
                         r.at("figure").get<std::string>(), r.at("published").get<double>(),
                         r.at("dtsim").get<double>(), 100 * r.at("error").get<double>(),
                         stated ? "  " + chosen_text(r.value("auto_chosen", json::object())) : "");
    out += fmt::format("  mean absolute error {:.1f} %, max {:.1f} % over {} figures\n\n",
                       100 * t.at("mean_abs_error").get<double>(), 100 * t.at("max_abs_error").get<double>(),
                       t.at("rows").size());
  }
  if (report.at("tables").size() > 1) out += summary(report.at("tables"));
  return out;
}

}  // namespace dtsim::results
