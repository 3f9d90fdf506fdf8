// `dtsim compare`'s report (report.hpp build_compare_report): each cluster's best plan from compare.json, its
// time, cost and energy to train, as a Markdown table and a CSV.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "results/cost.hpp"
#include "results/report.hpp"
#include "results/report_support.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using namespace report_support;

// The number at a dotted path of a plan ("cost.days"), NaN where the plan has none.
double plan_figure(const json& plan, const std::string& path) {
  const json* at = &plan;
  std::size_t start = 0;
  for (std::size_t dot = path.find('.'); ; dot = path.find('.', start)) {
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) return std::nan("");
    at = &(*at)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return at->is_number() ? at->get<double>() : std::nan("");
}

}  // namespace

Report build_compare_report(const json& doc, const std::string& title) {
  if (!doc.is_object() || !doc.contains("clusters") || !doc["clusters"].is_array() || !doc.contains("axes"))
    throw std::invalid_argument("not a compare.json written by dtsim compare (no clusters or axes)");
  const bool length = doc["axes"].value("time", std::string()) == "days";
  // With a run length, the whole run's figures (failures and checkpoints included) where the plan has them.
  const auto run_or = [](const json& p, const char* run, const char* perfect) {
    return plan_figure(p, p.contains("training_run") ? run : perfect);
  };
  const auto time_of = [&](const json& p) {
    return length ? run_or(p, "training_run.wall_days", "cost.days") : 1e6 / plan_figure(p, "tokens_per_s");
  };
  const auto cost_of = [&](const json& p) {
    return length ? run_or(p, "training_run.total_usd", "cost.total_usd") : plan_figure(p, "cost.usd_per_million_tokens");
  };
  std::string points = "# row\tname\ttime\tcost\tpareto\n", front = "# time\tcost (the Pareto front, by time)\n";
  std::vector<std::pair<double, double>> on_front;
  std::size_t row = 0;
  std::string table = "| cluster | GPUs | best plan | step (s) | tokens/s | MFU | " +
                      std::string(length ? "days | cost (USD)" : "s per M tokens | USD per M tokens") +
                      " | capital (USD) | MWh | Pareto |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const json& c : doc["clusters"]) {
    if (!c.is_object() || !c.contains("name") || !c.contains("fits"))
      throw std::invalid_argument("a cluster of compare.json without name or fits");
    const std::string name = plain(c["name"].get<std::string>());
    if (!c["fits"].get<bool>()) {
      table += fmt::format("| {} | {} | does not fit: {} | | | | | | | | |\n", md_cell(name), c.value("gpus", 0),
                           md_cell(c.value("why", std::string())));
      continue;
    }
    const json& p = c["plan"];
    const bool pareto = c.value("pareto", false);
    const double t = time_of(p), k = cost_of(p);
    points += fmt::format("{}\t{}\t{}\t{}\t{}\n", ++row, name, cell(t), cell(k), pareto ? 1 : 0);
    if (pareto) on_front.emplace_back(t, k);
    table += fmt::format("| {} | {} | {} | {:.3f} | {:.0f} | {} | {:.{}f} | {} | {} | {} | {} |\n", md_cell(name),
                         c.value("gpus", 0), md_cell(c.value("plan_label", std::string())), plan_figure(p, "step_time_s"),
                         plan_figure(p, "tokens_per_s"), pct(plan_figure(p, "mfu")), t, length ? 1 : 3,
                         length ? dollars_text(k) : fmt::format("{:.3f}", k), dollars_text(c.value("capital_usd", 0.0)),
                         length ? fmt::format("{:.1f}", run_or(p, "training_run.total_MWh", "energy.total_MWh")) : "",
                         pareto ? "yes" : "");
  }
  if (row == 0) throw std::invalid_argument("no cluster of compare.json fits its model");
  std::ranges::sort(on_front);
  for (const auto& [t, k] : on_front) front += fmt::format("{}\t{}\n", cell(t), cell(k));
  const std::string xlabel = length ? "time to train (days)" : "time per million tokens (s)";
  const std::string ylabel = length ? "cost to train (USD)" : "cost per million tokens (USD)";
  std::string script = header("time_cost", "Time against cost, each cluster with its best plan") +
                       fmt::format("set xlabel \"{}\"\nset ylabel \"{}\"\nset grid xtics lc rgb \"#dddddd\"\n"
                                   "set key top right\nset offsets graph 0.08, graph 0.25, graph 0.12, graph 0.12\n"
                                   "set format y \"%.1s%c\"\n",
                                   xlabel, ylabel) +
                       "plot \"front.dat\" using 1:2 with lines lw 2 lc rgb \"#e15759\" title \"Pareto front\", "
                       "\"points.dat\" using 3:($5 == 1 ? $4 : 1/0) with points pt 7 ps 1.6 lc rgb \"#e15759\" "
                       "title \"on the front\", "
                       "\"points.dat\" using 3:($5 == 0 ? $4 : 1/0) with points pt 6 ps 1.6 lc rgb \"#4e79a7\" "
                       "title \"dominated\", "
                       "\"points.dat\" using 3:4:2 with labels offset char 1,1 left font \",9\" notitle\n" + footer();
  Report rep;
  rep.files.push_back({"plots/points.dat", points});
  rep.files.push_back({"plots/front.dat", front});
  rep.files.push_back({"plots/time_cost.gp", script});
  rep.scripts.push_back("plots/time_cost.gp");
  std::string md = fmt::format("# {}\n\nFrom `compare.json`: {} cluster options, each with its best plan by {}{}.\n\n",
                               title, doc["clusters"].size(), doc.value("objective", std::string("time")),
                               length ? "" : " (no run length given: figures per million tokens)");
  md += table;
  md += "\nCost as each scenario's `cost.mode` prices it; capital: the bill of materials. A row is on the Pareto front "
        "when no other cluster is at least as fast and as cheap, and better in one.\n\n";
  md += "![time against cost](plots/time_cost.png)\n\nThe chart is drawn by gnuplot from `plots/time_cost.gp` and its "
        "`.dat` files.\n";
  rep.files.push_back({"report.md", md});
  return rep;
}

}  // namespace dtsim::results
