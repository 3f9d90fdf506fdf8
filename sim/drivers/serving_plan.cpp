// `dtsim plan` on a serving scenario (serving_plan.hpp): every tp x pp x dp split of the cluster's GPUs that the
// scenario leaves open, each loaded as a scenario written by hand would be and served on the analytic engine.
#include "sim/drivers/serving_plan.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <yaml-cpp/yaml.h>

#include "results/run_report.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/run.hpp"
#include "sim/drivers/serving.hpp"
#include "sim/scenario/plan_template.hpp"
#include "sim/scenario/sweep.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;

constexpr std::string_view kNotFit = "does not fit in memory";

double number(const json& row, const char* key) {
  const auto it = row.find(key);
  return it == row.end() || it->is_null() ? 0.0 : it->get<double>();
}

// A stream's figure, or null where no request finished.
json stream_figure(const json& row, const char* key) {
  return row.contains("stream") ? row["stream"].value(key, json(nullptr)) : json(nullptr);
}

std::string label(const ServingPlanRow& r) {
  const auto& p = r.scenario.workload->plan;
  return fmt::format("tp {} pp {} dp {}{}", p.tp, p.pp, p.dp,
                     workloads::attention_data_parallel(*r.scenario.workload) ? " (attention DP)" : "");
}

}  // namespace

double ServingPlanRow::objective(Objective o) const {
  switch (o) {
    case Objective::Cost: return run.at("cost").at("usd_per_million_tokens").get<double>();
    case Objective::Energy: return run.at("energy").at("per_token_J").get<double>();
    case Objective::Time: break;
  }
  if (run.contains("stream")) {
    const json& p50 = run["stream"]["p50_latency_s"];
    return p50.is_null() ? std::numeric_limits<double>::infinity() : p50.get<double>();
  }
  return run.at("request_time_s").get<double>();
}

ServingPlans plan_serving(const scenario::Scenario& s, int top, int confirm, Objective o) {
  const auto& inf = *s.workload->inference;
  if (inf.disaggregation)
    throw InputError("inference.disaggregation", "", "splits the cluster into pools of their own tp; plan searches "
                     "the tp, pp and dp of colocated serving:", "a scenario without it, or run", s.file);
  if (s.cluster.graph)
    throw InputError("cluster.graph", *s.cluster.graph, "is a user graph; plan searches clusters the builders make:",
                     "a cluster of gpu, nodes, intra and inter", s.file);
  if (inf.requests && o == Objective::Energy)
    throw InputError("--objective", "energy", "ranks a static batch's plans; a stream's energy a token is not modelled "
                     "(its iterations are timed, not their power):", "time or cost for a stream");
  ServingPlans out;
  out.gpus = cluster_gpus(s);
  out.stream = inf.requests.has_value();
  // The template: the scenario's resolved keys, the split left to the search where it did not give it.
  YAML::Node base = YAML::Load(scenario::to_yaml(s));
  base.remove("sweep");
  const auto& plan = s.workload->plan;
  const bool tp_given = scenario::given(s, "parallelism.tp"), pp_given = scenario::given(s, "parallelism.pp"),
             dp_given = scenario::given(s, "parallelism.dp");
  // A static batch's load: every replica's sequences, kept whole over the candidates.
  const long long sequences = static_cast<long long>(inf.batch) * plan.dp;
  std::vector<ServingPlanRow> fitting;
  for (int tp = 1; tp <= out.gpus; ++tp) {
    if (out.gpus % tp != 0) continue;
    for (int pp = 1; tp * pp <= out.gpus; ++pp) {
      if ((out.gpus / tp) % pp != 0) continue;
      const int dp = out.gpus / (tp * pp);
      if ((tp_given && tp != plan.tp) || (pp_given && pp != plan.pp) || (dp_given && dp != plan.dp)) continue;
      ++out.candidates;
      if (!out.stream && sequences % dp != 0) {
        ++out.pruned[fmt::format("the batch of {} sequences does not split evenly over the replicas", sequences)];
        continue;
      }
      YAML::Node n = YAML::Clone(base);
      n["parallelism"]["tp"] = tp;
      n["parallelism"]["pp"] = pp;
      n["parallelism"]["dp"] = dp;
      if (!out.stream) n["inference"]["batch"] = sequences / dp;
      n["simulation"]["engine"] = "analytic";
      try {
        scenario::Scenario c = scenario::load_scenario(std::move(n), s.file);
        c.name = s.name;
        c.point = s.point;
        workloads::check_plan(*c.workload, out.gpus);
        if (!workloads::plan_memory(*c.workload, s.cluster.gpu).fits) {
          ++out.pruned[std::string(kNotFit)];
          continue;
        }
        // A KV cache the scenario sizes itself must fit beside this split's weights too.
        const long long given_blocks = inf.scheduler.kv_blocks;
        if (out.stream && given_blocks > 0 && given_blocks > stream_kv_blocks_that_fit(c)) {
          ++out.pruned["inference.scheduler.kv_blocks: more blocks than the memory beside the weights holds"];
          continue;
        }
        json row = run_point(c);
        fitting.push_back({std::move(c), std::move(row), false});
      } catch (const InputError& e) {
        ++out.pruned[fmt::format("{}: {}", e.key(), e.reason())];
      }
    }
  }
  if (out.candidates == 0)
    throw InputError("parallelism", fmt::format("tp {} pp {} dp {}", plan.tp, plan.pp, plan.dp),
                     fmt::format("given by the scenario leave no split of its {} GPUs to search:", out.gpus),
                     "degrees whose product is the GPU count, or leave them out", s.file);
  if (fitting.empty()) {
    throw InputError("parallelism", fmt::format("{} GPUs", out.gpus),
                     fmt::format("no split of the {} into tp x pp x dp serves this scenario (most common reason: {}):",
                                 out.candidates, most_common_reason(out.pruned)),
                     "more or larger GPUs, narrower weights or a smaller batch", s.file);
  }
  const auto by = [&](const ServingPlanRow& a, const ServingPlanRow& b) { return a.objective(o) < b.objective(o); };
  std::ranges::stable_sort(fitting, by);
  // A static batch's best, again on the scenario's own engine (a stream's iterations are the analytic engine's
  // closed form on every engine: nothing to confirm).
  if (!out.stream && s.simulation.engine == scenario::EngineKind::Simgrid) {
    const std::size_t n = std::min(fitting.size(), static_cast<std::size_t>(std::max(confirm, 0)));
    for (std::size_t i = 0; i < n; ++i) {
      fitting[i].scenario.simulation.engine = scenario::EngineKind::Simgrid;
      fitting[i].run = run_point(fitting[i].scenario);
      fitting[i].confirmed = true;
    }
    std::ranges::stable_sort(fitting, [&](const ServingPlanRow& a, const ServingPlanRow& b) {
      if (a.confirmed != b.confirmed) return a.confirmed;
      return by(a, b);
    });
  }
  out.top = std::min(fitting.size(), static_cast<std::size_t>(std::max(top, 1)));
  out.rows = std::move(fitting);
  return out;
}

json serving_plan_json(const scenario::Scenario& s, const ServingPlans& p, Objective o) {
  json plans = json::array();
  for (std::size_t i = 0; i < p.top; ++i) {
    const ServingPlanRow& r = p.rows[i];
    const auto& plan = r.scenario.workload->plan;
    json row = {{"parallelism", {{"tp", plan.tp}, {"pp", plan.pp}, {"dp", plan.dp}}},
                {"inference", {{"batch", r.scenario.workload->inference->batch}}},
                {"engine", r.run.at("engine")},
                {"confirmed", r.confirmed},
                {"objective_value", r.objective(o)},
                {"ttft_s", r.run.at("ttft_s")},
                {"tpot_s", r.run.at("tpot_s")},
                {"request_time_s", r.run.at("request_time_s")},
                {"tokens_per_s", r.run.at("tokens_per_s")},
                {"tokens_per_s_per_gpu", r.run.at("tokens_per_s_per_gpu")},
                {"fits", r.run.at("memory").at("fits")},
                {"margin_bytes", r.run.at("memory").at("margin_bytes")},
                {"max_batch_that_fits", r.run.at("max_batch_that_fits")},
                {"cost", r.run.at("cost")},
                {"energy", r.run.at("energy")}};
    if (p.stream) {
      for (const char* key : {"p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s", "throughput_tokens_per_s"})
        row[key] = r.run.value(key, json(nullptr));
      row["p50_latency_s"] = stream_figure(r.run, "p50_latency_s");
      row["p99_latency_s"] = stream_figure(r.run, "p99_latency_s");
    }
    plans.push_back(std::move(row));
  }
  return {{"name", s.name},
          {"objective", std::string(to_string(o))},
          {"serving", true},
          {"plans", plans},
          {"candidates", p.candidates},
          {"pruned", p.pruned}};
}

std::string serving_plan_table(const scenario::Scenario& s, const ServingPlans& p, Objective o) {
  std::size_t dropped = 0;
  for (const auto& [why, n] : p.pruned) dropped += n;
  std::string out = fmt::format("{}: {} split{} of {} GPUs into tp x pp x dp, {} served{}; ranked by {} ({})\n", s.name,
                                p.candidates, p.candidates == 1 ? "" : "s", p.gpus, p.candidates - dropped,
                                dropped > 0 ? fmt::format(", {} dropped (most: {})", dropped, most_common_reason(p.pruned)) : "",
                                to_string(o),
                                o == Objective::Time ? (p.stream ? "the stream's median end-to-end latency"
                                                                 : "the batch's request time")
                                : o == Objective::Cost ? "USD per million output tokens"
                                                       : "the facility's joules a token");
  if (p.stream)
    out += fmt::format("{:>4}  {:<20} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>8} {:>9}\n", "rank", "plan",
                       "p50_lat_s", "p99_lat_s", "ttft_p99ms", "tpot_p50ms", "tokens/s", "per GPU", "spare", "USD/Mtok");
  else
    out += fmt::format("{:>4}  {:<20} {:>6} {:>9} {:>9} {:>9} {:>10} {:>9} {:>8} {:>9} {:>8} {:>8}\n", "rank", "plan",
                       "batch", "ttft_ms", "tpot_ms", "request_s", "tokens/s", "per GPU", "spare", "USD/Mtok", "J/token",
                       "engine");
  const auto ms = [](const json& v) { return v.is_null() ? std::string("-") : fmt::format("{:.2f}", 1e3 * v.get<double>()); };
  const auto s_ = [](const json& v) { return v.is_null() ? std::string("-") : fmt::format("{:.3f}", v.get<double>()); };
  for (std::size_t i = 0; i < p.top; ++i) {
    const ServingPlanRow& r = p.rows[i];
    const json& run = r.run;
    const double spare = number(run.at("memory"), "margin_bytes") / (1024.0 * 1024.0 * 1024.0);
    const double usd = run.at("cost").at("usd_per_million_tokens").get<double>();
    const double joules = run.at("energy").at("per_token_J").get<double>();
    if (p.stream)
      out += fmt::format("{:>4}  {:<20} {:>10} {:>10} {:>10} {:>10} {:>10.0f} {:>9.1f} {:>7.1f}G {:>9.3f}\n", i + 1,
                         label(r), s_(stream_figure(run, "p50_latency_s")), s_(stream_figure(run, "p99_latency_s")),
                         ms(run.value("p99_ttft_s", json(nullptr))), ms(run.value("p50_tpot_s", json(nullptr))),
                         number(run, "throughput_tokens_per_s"), number(run, "throughput_tokens_per_s") / p.gpus, spare,
                         usd);
    else
      out += fmt::format("{:>4}  {:<20} {:>6} {:>9} {:>9} {:>9.3f} {:>10.0f} {:>9.1f} {:>7.1f}G {:>9.3f} {:>8.3f} {:>8}\n",
                         i + 1, label(r), r.scenario.workload->inference->batch, ms(run.at("ttft_s")), ms(run.at("tpot_s")),
                         number(run, "request_time_s"), number(run, "tokens_per_s"), number(run, "tokens_per_s_per_gpu"),
                         spare, usd, joules, run.at("engine").get<std::string>());
  }
  out += fmt::format("({}spare: GPU memory left beside {}; {} cost)\n", p.stream ? "" : "batch: sequences a replica; ",
                     p.stream ? "the weights and one request's KV cache" : "the batch's KV cache",
                     p.rows.empty() ? "" : p.rows.front().run.at("cost").at("mode").get<std::string>());
  return out;
}

std::string serving_plan_csv(const std::vector<std::pair<std::string, json>>& points) {
  static const std::vector<std::string> columns = {
      "rank", "tp", "pp", "dp", "batch", "confirmed", "ttft_s", "tpot_s", "request_time_s", "p50_latency_s",
      "p99_latency_s", "p99_ttft_s", "p50_tpot_s", "tokens_per_s", "tokens_per_s_per_gpu", "throughput_tokens_per_s",
      "margin_bytes", "usd_per_million_tokens", "per_token_J"};
  std::vector<std::pair<std::string, json>> rows;
  for (const auto& [name, point] : points) {
    int rank = 0;
    for (const json& p : point.at("plans")) {
      json cells = p;
      cells["rank"] = ++rank;
      cells["tp"] = p["parallelism"]["tp"];
      cells["pp"] = p["parallelism"]["pp"];
      cells["dp"] = p["parallelism"]["dp"];
      cells["batch"] = p["inference"]["batch"];
      cells["usd_per_million_tokens"] = p["cost"]["usd_per_million_tokens"];
      cells["per_token_J"] = p["energy"]["per_token_J"];
      rows.emplace_back(name, std::move(cells));
    }
  }
  return results::csv_rows(columns, rows);
}

}  // namespace dtsim::drivers
