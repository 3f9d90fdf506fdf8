// `dtsim compare`: the buyer's table. Each point of the scenario (a sweep over clusters) gets its plan searched
// (plan_point), and its best plan becomes one row: step time, time, cost and energy to train, the bill of
// materials' capital, and whether the row is on the Pareto front of time against cost. A cluster on which nothing
// fits is a row that says by how much, not an error: "it does not fit" is an answer to the buyer's question.
#include "sim/drivers/compare.hpp"

#include <fmt/format.h>

#include "sim/drivers/common.hpp"
#include "topology/builders.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;

std::string cluster_label(const topology::ClusterSpec& c) {
  std::string out = fmt::format("{} x {} ({}", c.nodes * c.gpus_per_node, c.gpu.name, topology::to_string(c.intra));
  if (c.inter != topology::InterKind::None)
    out += fmt::format("; {} x {} {}", c.effective_nics_per_node() / c.servers_per_node(), c.inter_link.name,   // a server's
                       topology::to_string(c.inter));
  return out + ")";
}

// Marks each fitting row `pareto`: no other row is at least as fast and as cheap, and better in one.
void mark_front(json& rows, const CompareAxes& axes) {
  for (json& r : rows) {
    if (!r["fits"].get<bool>()) continue;
    const double t = axes.time(r["plan"]), c = axes.cost(r["plan"]);
    bool dominated = false;
    for (const json& o : rows) {
      if (&o == &r || !o["fits"].get<bool>()) continue;
      const double ot = axes.time(o["plan"]), oc = axes.cost(o["plan"]);
      dominated = dominated || (ot <= t && oc <= c && (ot < t || oc < c));
    }
    r["pareto"] = !dominated;
  }
}

}  // namespace

json compare(const std::vector<scenario::Scenario>& scenarios, int confirm, Objective objective) {
  json rows = json::array();
  CompareAxes axes{true};
  for (const scenario::Scenario& s : scenarios) {
    const PointPlans p = plan_point(s, 1, confirm, objective, false);
    const auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
    const auto bom = scenario_bom(s, built.topology);
    json row = {{"name", s.name},
                {"cluster", cluster_label(s.cluster)},
                {"gpu", s.cluster.gpu.name},
                {"gpus", p.gpus},
                {"capital_usd", bom.total().value()},
                {"bill_complete", bom.complete()},
                {"candidates", p.search.candidates},
                {"fitting", p.search.ranked.size()},
                {"fits", !p.rows.empty()},
                {"pareto", false}};
    if (p.rows.empty()) {
      row["why"] = nothing_fits_text(p.search, p.gpus);
      if (p.search.nearest) {
        row["nearest"] = plan_label(p.search.nearest->choice, p.gpus);
        row["lacks_bytes"] = -p.search.nearest->memory.margin.value();
      }
    } else {
      row["plan"] = plan_row_json(p.rows.front(), p.gpus);
      row["plan_label"] = plan_label(p.rows.front().candidate.choice, p.gpus);
      axes.length = axes.length && !row["plan"]["cost"]["days"].is_null();
    }
    rows.push_back(std::move(row));
  }
  mark_front(rows, axes);
  return {{"objective", std::string(to_string(objective))},
          {"axes", axes.length ? json{{"time", "days"}, {"cost", "total_usd"}}
                               : json{{"time", "s_per_million_tokens"}, {"cost", "usd_per_million_tokens"}}},
          {"clusters", rows}};
}

}  // namespace dtsim::drivers
