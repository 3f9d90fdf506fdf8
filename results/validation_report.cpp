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
    const auto add = [&](const json& name, const std::string& figure, double published, double simulated) {
      const double error = simulated / published - 1;
      rows.push_back({{"name", name}, {"figure", figure}, {"published", published}, {"dtsim", simulated},
                      {"error", error}});
      sum += std::abs(error);
      worst = std::max(worst, std::abs(error));
    };
    for (const json& r : t.rows) {
      if (r.at("reference").contains("source")) source = r.at("reference").at("source").get<std::string>();
      if (r.contains("ratio_to")) {   // published ratios of this row's figures to its baseline's
        const json& base = r.at("ratio_to");
        for (const auto& [key, value] : r.at("ratios").items())
          add(fmt::format("{} / {}", r.at("name").get<std::string>(), base.at("name").get<std::string>()),
              key + " ratio", value.get<double>(), reference_figure(r, key) / reference_figure(base, key));
        continue;
      }
      for (const auto& [key, value] : r.at("reference").items())
        if (key != "source") add(r.at("name"), key, value.get<double>(), reference_figure(r, key));
    }
    const double mean = rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
    out.push_back({{"name", t.name}, {"source", source}, {"rows", rows}, {"mean_abs_error", mean},
                   {"max_abs_error", worst}});
  }
  return {{"tables", out}};
}

std::string validation_text(const json& report) {
  std::string out;
  for (const json& t : report.at("tables")) {
    out += fmt::format("{} ({})\n", t.at("source").get<std::string>(), t.at("name").get<std::string>());
    out += fmt::format("  {:<40} {:<20} {:>10} {:>10} {:>8}\n", "row", "figure", "published", "dtsim", "error");
    for (const json& r : t.at("rows"))
      out += fmt::format("  {:<40} {:<20} {:>10.4g} {:>10.4g} {:>+7.1f}%\n", r.at("name").get<std::string>(),
                         r.at("figure").get<std::string>(), r.at("published").get<double>(),
                         r.at("dtsim").get<double>(), 100 * r.at("error").get<double>());
    out += fmt::format("  mean absolute error {:.1f} %, max {:.1f} % over {} figures\n\n",
                       100 * t.at("mean_abs_error").get<double>(), 100 * t.at("max_abs_error").get<double>(),
                       t.at("rows").size());
  }
  return out;
}

}  // namespace dtsim::results
