#include "results/run_report.hpp"

#include "results/report_support.hpp"

#include <algorithm>
#include <string_view>
#include <fmt/format.h>

#include "results/memory_report.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using report_support::kGiB;


std::string verdict(const json& memory) {
  if (memory.at("fits").get<bool>()) return fmt::format("fits ({:.1f} GiB spare)", memory.at("margin_bytes").get<double>() / kGiB);
  return fmt::format("does not fit: short by {:.1f} GiB", -memory.at("margin_bytes").get<double>() / kGiB);
}

// How dtsim's figure for a reference key reads in the table.
std::string dtsim_value(const json& row, const std::string& key) {
  const double v = reference_figure(row, key);
  if (key == "tp_comm_ms") return fmt::format("{:.1f} ms", v);
  if (key.ends_with("_GB")) return fmt::format("{:.1f} GB", v);
  if (key == "scaling_efficiency" || key == "mfu" || key == "hfu") return fmt::format("{:.0f} %", v * 100);
  return fmt::format("{:.4g}", v);
}

std::string reference_value(const std::string& key, double v) {
  if (key == "scaling_efficiency" || key == "mfu" || key == "hfu") return fmt::format("{:.0f} %", v * 100);
  if (key == "tp_comm_ms") return fmt::format("{:g} ms", v);
  if (key.ends_with("_GB")) return fmt::format("{:g} GB", v);
  return fmt::format("{:.4g}", v);
}

void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [key, value] : j.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (key == "scenario" || key == "notes" || key == "kernels") continue;
    if (value.is_object()) flatten(value, name, out);
    else if (value.is_string()) out.emplace_back(name, value.get<std::string>());
    else out.emplace_back(name, value.dump());
  }
}

// Time, cost and energy to train beside each configuration (rows from before the cost model have none).
std::string cost_table(const std::vector<json>& rows) {
  if (rows.empty() || !rows.front().contains("cost")) return {};
  const auto cell = [](const json& v, const char* format_spec) {
    return v.is_null() ? std::string("-") : fmt::format(fmt::runtime(format_spec), v.get<double>());
  };
  std::string out = fmt::format("\n{:<28} {:>9} {:>8} {:>9} {:>9} {:>9} {:>11} {:>13} {:>9}\n", "time, cost, energy", "mode",
                                "kW", "J/token", "USD/Mtok", "days", "GPU-hours", "total_USD", "MWh");
  for (const auto& r : rows) {
    const auto& c = r.at("cost");
    const auto& e = r.at("energy");
    out += fmt::format("{:<28} {:>9} {:>8.1f} {:>9.3f} {:>9.3f} {:>9} {:>11} {:>13} {:>9}\n", r.at("name").get<std::string>(),
                       c.at("mode").get<std::string>(), e.at("avg_power_kW").get<double>(), e.at("per_token_J").get<double>(),
                       c.at("usd_per_million_tokens").get<double>(), cell(c.at("days"), "{:.1f}"),
                       cell(c.at("gpu_hours"), "{:.0f}"), cell(c.at("total_usd"), "{:.0f}"), cell(e.at("total_MWh"), "{:.1f}"));
  }
  return out + "(kW and J/token: the facility's, PUE included; days, GPU-hours, total and MWh need training.tokens or "
               "training.steps)\n";
}

// The whole run beside each configuration that has one (a run length given): failures and checkpoints included.
std::string training_run_table(const std::vector<json>& rows) {
  if (std::none_of(rows.begin(), rows.end(), [](const json& r) { return r.contains("training_run"); })) return {};
  std::string out = fmt::format("\n{:<28} {:>8} {:>9} {:>14} {:>8} {:>8} {:>10} {:>9} {:>13}\n", "whole run", "goodput",
                                "fail/day", "ckpt every s", "ckpt s", "lost h", "restart h", "days", "total_USD");
  for (const auto& r : rows) {
    if (!r.contains("training_run")) continue;
    const auto& t = r.at("training_run");
    const std::string every = fmt::format("{:.0f}{}", t.at("checkpoint_interval_s").get<double>(),
                                          t.at("checkpoint_interval_auto").get<bool>() ? " (auto)" : "");
    out += fmt::format("{:<28} {:>7.1f}% {:>9.3g} {:>14} {:>8.1f} {:>8.1f} {:>10.1f} {:>9.1f} {:>13}\n",
                       r.at("name").get<std::string>(), 100 * t.at("goodput").get<double>(),
                       t.at("interruptions_per_day").get<double>(), every, t.at("checkpoint_s").get<double>(),
                       t.at("lost_work_s").get<double>() / 3600, t.at("restart_s_total").get<double>() / 3600,
                       t.at("wall_days").get<double>(),
                       t.at("total_usd").is_null() ? std::string("-") : fmt::format("{:.0f}", t.at("total_usd").get<double>()));
  }
  out += "(expected, with failures and checkpoints: reliability and cluster.storage, docs/planning.md)\n";
  // What a failed server costs where it is not simply replaced from the facility's pool.
  for (const auto& r : rows) {
    if (!r.contains("training_run")) continue;
    const auto& t = r.at("training_run");
    const std::string mode = t.at("on_failure");
    const double wait = t.at("repair_wait_s").get<double>(), shrink = t.at("shrink_loss_s").get<double>();
    if (mode == "restart" && wait == 0) continue;
    out += fmt::format("{}: on_failure {}, {} GPUs held: {:.1f} h waiting for repairs, {:.1f} h lost to running narrower\n",
                       r.at("name").get<std::string>(), mode, t.at("gpus_held").get<int>(), wait / 3600, shrink / 3600);
  }
  // A sampled run (reliability.seed) beside the expectation: its totals, then its first failures.
  constexpr std::size_t kShown = 8;
  for (const auto& r : rows) {
    if (!r.contains("training_run") || !r.at("training_run").contains("sampled")) continue;
    const auto& s = r.at("training_run").at("sampled");
    const auto& failures = s.at("failures");
    out += fmt::format("\n{}: one run drawn with seed {}: {} interruptions, {:.1f} days, goodput {:.1f}%\n",
                       r.at("name").get<std::string>(), s.at("seed").get<unsigned long long>(), failures.size(),
                       s.at("wall_days").get<double>(), 100 * s.at("goodput").get<double>());
    for (std::size_t i = 0; i < std::min(kShown, failures.size()); ++i)
      out += fmt::format("  day {:>8.3f}  {:<24} {:>8.0f} s of work lost\n", failures[i].at("at_days").get<double>(),
                         failures[i].at("component").get<std::string>(), failures[i].at("lost_s").get<double>());
    if (failures.size() > kShown) out += fmt::format("  ... {} more (training_run.sampled.failures in the JSON)\n", failures.size() - kShown);
  }
  return out;
}

// Stragglers (reliability.stragglers) beside each configuration that has them: the step slowed, and what the
// other ranks wait in.
std::string stragglers_table(const std::vector<json>& rows) {
  std::string out;
  for (const auto& r : rows) {
    if (!r.contains("stragglers")) continue;
    const auto& st = r.at("stragglers");
    out += fmt::format("\n{}: stragglers: step {:.4g} s, {:.4g} s without them (x{:.3f}); slowest rank {} at x{:.3f}, "
                       "{} ranks slowed; {}\n",
                       r.at("name").get<std::string>(), st.at("step_time_s").get<double>(),
                       st.at("clean_step_time_s").get<double>(), st.at("slowdown").get<double>(),
                       st.at("slowest_rank").get<long long>(), st.at("slowest_factor").get<double>(),
                       st.at("slowed_ranks").get<long long>(), st.at("played").get<std::string>());
    if (!st.at("waits_s").is_null()) {
      std::vector<std::pair<double, std::string>> waits;
      for (const auto& [purpose, seconds] : st.at("waits_s").items()) waits.emplace_back(seconds.get<double>(), purpose);
      std::sort(waits.rbegin(), waits.rend());
      out += "  waiting added per rank and step:";
      for (const auto& [seconds, purpose] : waits)
        if (std::abs(seconds) >= 5e-4) out += fmt::format(" {} {:+.3f} s", purpose, seconds);
      out += "\n";
    }
    if (st.contains("expected_slowest")) {
      out += "  expected slowest GPU:";
      for (const auto& e : st.at("expected_slowest"))
        out += fmt::format(" x{:.3f} of {}", e.at("slowest_factor").get<double>(), e.at("gpus").get<int>());
      out += "\n";
    }
  }
  return out;
}

}  // namespace

double reference_figure(const json& row, const std::string& key) {
  if (key == "tp_comm_ms") return row.at("tp_comm_s").get<double>() * 1e3;
  if (key == "tp_comm_GB") return row.at("tp_comm_bytes").get<double>() / 1e9;
  if (key == "memory_GB") return row.at("memory").at("per_gpu_bytes").get<double>() / 1e9;
  // A time in ms: the row's figure in seconds (ttft_ms: ttft_s x 1e3).
  if (key.ends_with("_ms") && !row.contains(key)) return row.at(key.substr(0, key.size() - 3) + "_s").get<double>() * 1e3;
  return row.at(key).get<double>();
}

json run_json(const RunInfo& info, const StepMetrics& m, const workloads::MemoryPlan& memory) {
  json reference = json::object();
  if (!info.reference_source.empty()) reference["source"] = info.reference_source;
  for (const auto& [k, v] : info.reference) reference[k] = v;
  return {{"name", info.name},
          {"layout", info.layout},
          {"gpus", m.gpus},
          {"step_time_s", m.step_time.value()},
          {"tokens_per_s", m.tokens_per_s},
          {"tokens_per_s_per_gpu", m.tokens_per_s / m.gpus},
          {"tflops_per_gpu", m.tflops_per_gpu},
          {"hw_tflops_per_gpu", m.hw_tflops_per_gpu},
          {"mfu", m.mfu},
          {"hfu", m.hfu},
          {"scaling_efficiency", m.scaling_efficiency},
          {"ideal_time_s", m.ideal_time.value()},
          {"breakdown_s",
           {{"compute", m.breakdown.compute.value()},
            {"exposed_comm", m.breakdown.exposed_comm.value()},
            {"pipeline_bubble", m.breakdown.pipeline_bubble.value()},
            {"other", m.breakdown.other.value()},
            {"interference", m.breakdown.interference.value()}}},
          {"tp_comm_s", m.tp_comm.value()},
          {"tp_comm_bytes", m.tp_comm_bytes.value()},
          {"memory", memory_json(memory)},
          {"engine", info.engine},
          {"network_model", info.network_model},
          {"collective_algo", info.collective_algo},
          {"shortcuts", info.shortcuts},
          {"reference", reference}};
}

namespace {

std::string seconds_or_dash(const json& v, double scale) {
  return v.is_null() ? std::string("-") : fmt::format("{:.2f}", v.get<double>() * scale);
}

// Serving rows (`run` on an inference scenario): latency, throughput, regimes and the batch that fits.
std::string serving_table(const std::vector<json>& rows) {
  std::string out = fmt::format("{:<28} {:>5} {:>9} {:>9} {:>10} {:>10} {:>14} {:>14} {:>9}  {}\n", "configuration",
                                "gpus", "ttft_ms", "tpot_ms", "tokens/s", "per GPU", "prefill", "decode", "max batch",
                                "memory per GPU");
  for (const auto& r : rows) {
    const auto& p = r.at("phases");
    out += fmt::format("{:<28} {:>5} {:>9} {:>9} {:>10.0f} {:>10.1f} {:>14} {:>14} {:>9}  {}\n",
                       r.at("name").get<std::string>(), r.at("gpus").get<int>(), seconds_or_dash(r.at("ttft_s"), 1e3),
                       seconds_or_dash(r.at("tpot_s"), 1e3), r.at("tokens_per_s").get<double>(),
                       r.at("tokens_per_s_per_gpu").get<double>(),
                       p.at("prefill").at("regime").get<std::string>(),
                       p.contains("decode") ? p.at("decode").at("regime").get<std::string>() : std::string("-"),
                       r.at("max_batch_that_fits").get<int>(), verdict(r.at("memory")));
  }
  return out + "(ttft: time to first token, the batch's prefill; tpot: time per output token, the mean decode "
               "step; tokens/s: generated tokens per second over the batch's whole run, all replicas; prefill and "
               "decode: each phase's roofline regime; max batch: the largest static batch whose memory plan fits)\n";
}

// Served streams (`inference.requests`): the latency percentiles and what the queue did.
std::string stream_table(const std::vector<json>& rows) {
  std::string out = fmt::format("{:<28} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>6}\n", "served stream",
                                "req/s", "requests", "ttft p50", "ttft p99", "tpot p50", "tpot p99", "tokens/s",
                                "queue p99", "busy");
  for (const auto& r : rows) {
    const auto& st = r.at("stream");
    out += fmt::format("{:<28} {:>7.2f} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10.0f} {:>9} {:>5.0f}%\n",
                       r.at("name").get<std::string>(), st.at("arrival_rate_per_s").get<double>(),
                       st.at("requests").get<long long>(), seconds_or_dash(r.at("p50_ttft_s"), 1e3),
                       seconds_or_dash(r.at("p99_ttft_s"), 1e3), seconds_or_dash(r.at("p50_tpot_s"), 1e3),
                       seconds_or_dash(r.at("p99_tpot_s"), 1e3), r.at("throughput_tokens_per_s").get<double>(),
                       seconds_or_dash(st.at("p99_queue_s"), 1e3), 100 * st.at("busy_fraction").get<double>());
  }
  out += "(times in ms over the stream's requests; ttft: arrival to first token; tpot: the rest of the output, "
         "per token; tokens/s: output tokens over the time to serve the last request; queue: arrival to "
         "admission; busy: the share of that time the replicas were running iterations)\n";
  // The scheduler each stream was served with: its engine's defaults (inference.framework) where the scenario
  // writes none.
  for (const auto& r : rows) {
    const auto& st = r.at("stream");
    const auto& sch = r.at("scenario").at("inference").at("scheduler");
    const json& blocks = st.at("kv_blocks");
    out += fmt::format("{}: {}'s scheduler, {} tokens and {} sequences an iteration, {}-token KV blocks ({}), prompts "
                       "{}, {}\n",
                       r.at("name").get<std::string>(), st.at("framework").get<std::string>(),
                       sch.at("max_tokens_per_iteration").get<long long>(), st.at("max_sequences").dump(),
                       sch.at("block_tokens").get<long long>(), blocks.dump(),
                       sch.at("chunked_prefill").get<bool>() ? "chunked" : "whole",
                       sch.at("mixed_batches").get<bool>() ? "prefill beside decode" : "prefill and decode apart");
  }
  return out;
}

// A step's `other` share from which the table names it.
constexpr double kOtherShown = 0.05;

bool has_experts(const json& row) {
  const json& model = row.at("scenario").at("model");
  return model.contains("experts") && model.at("experts").get<long long>() > 0;
}

}  // namespace

namespace {

// What `auto` chose for the knobs a row left open (its auto_chosen), one line per row that had any.
std::string auto_lines(const std::vector<json>& rows) {
  std::string out;
  bool layers = false, batches = false;
  for (const auto& r : rows) {
    if (!r.contains("auto_chosen") || r.at("auto_chosen").empty()) continue;
    layers = layers || r.at("auto_chosen").contains("parallelism.layers_per_stage");
    batches = batches || r.at("auto_chosen").contains("parallelism.replica_micro_batches");
    std::string chosen;
    for (const auto& [key, value] : r.at("auto_chosen").items())
      chosen += fmt::format("{}{} {}", chosen.empty() ? "" : ", ", key,
                            value.is_string() ? value.get<std::string>() : value.dump());
    out += fmt::format("{:<28} auto chose {}\n", r.at("name").get<std::string>(), chosen);
  }
  if (!out.empty())
    out += fmt::format("(auto: what the scenario left open, chosen as the fastest plan that fits on the analytic engine, "
                       "or the nearest to fitting where none does{}{}; write a value to fix it)\n",
                       layers ? "; layers_per_stage: split so that stages on different GPU kinds take as long" : "",
                       batches ? "; replica_micro_batches: each replica's share of the batch in proportion to its GPUs' speed" : "");
  return out;
}

}  // namespace

std::string run_table(const std::vector<json>& all) {
  std::vector<json> serving, rows;   // a file's documents may mix serving and training
  for (const auto& r : all) (r.contains("ttft_s") ? serving : rows).push_back(r);
  std::vector<json> streams;
  for (const auto& r : serving)
    if (r.contains("stream")) streams.push_back(r);
  std::string served = serving.empty() ? "" : serving_table(serving);
  if (!streams.empty()) served.append("\n").append(stream_table(streams));
  if (rows.empty()) return served;
  std::string out = served + (served.empty() ? "" : "\n") + fmt::format("{:<28} {:>5} {:>9} {:>9} {:>7} {:>5} {:>5} {:>6} {:>8} {:>8} {:>8}  {}\n",
                                "configuration", "gpus", "step_s", "tokens/s", "TFLOP/s", "MFU", "HFU", "scale",
                                "compute", "comm", "bubble", "memory per GPU");
  for (const auto& r : rows) {
    const auto& b = r.at("breakdown_s");
    out += fmt::format("{:<28} {:>5} {:>9.3f} {:>9.0f} {:>7.1f} {:>4.0f}% {:>4.0f}% {:>5.0f}% {:>8.3f} {:>8.3f} {:>8.3f}  {}\n",
                       r.at("name").get<std::string>(), r.at("gpus").get<int>(), r.at("step_time_s").get<double>(),
                       r.at("tokens_per_s").get<double>(), r.at("tflops_per_gpu").get<double>(),
                       100 * r.at("mfu").get<double>(), 100 * r.at("hfu").get<double>(),
                       100 * r.at("scaling_efficiency").get<double>(),
                       b.at("compute").get<double>(), b.at("exposed_comm").get<double>(),
                       b.at("pipeline_bubble").get<double>(), verdict(r.at("memory")));
  }
  out += "(TFLOP/s: model FLOPs per GPU; HFU counts recomputed FLOPs; scale: scaling efficiency; compute / comm / bubble: seconds of the critical "
         "GPU's step busy, waiting on communication, waiting on the pipeline)\n";
  out += auto_lines(rows);
  out += stragglers_table(rows);
  // The rest of a step (other) is named when it is a good part of one: an MoE model waiting on its host, a long
  // optimizer step.
  double other = 0;
  bool experts = false;
  for (const auto& r : rows) {
    other = std::max(other, r.at("breakdown_s").at("other").get<double>() / r.at("step_time_s").get<double>());
    experts = experts || has_experts(r);
  }
  if (other >= kOtherShown)
    out += fmt::format("(the rest of the step, other: the optimizer step, waits on neither compute nor communication{}; "
                       "up to {:.0f}% of a step here, per row in --format json as breakdown_s.other)\n",
                       experts ? ", the GPU waiting for its host to issue MoE layer passes" : "", 100 * other);
  out += cost_table(rows);
  out += training_run_table(rows);
  std::string refs;
  for (const auto& r : rows)
    for (const auto& [key, value] : r.at("reference").items())
      if (key != "source")
        refs += fmt::format("  {:<28} {:<20} {:>14} {:>14}\n", r.at("name").get<std::string>(), key,
                            reference_value(key, value.get<double>()), dtsim_value(r, key));
  if (refs.empty()) return out;
  const auto& first = rows.front().at("reference");
  const std::string source = first.contains("source") ? first.at("source").get<std::string>() : "reference";
  return out + fmt::format("\n{} beside dtsim:\n  {:<28} {:<20} {:>14} {:>14}\n", source, "configuration", "figure",
                           "published", "dtsim") + refs;
}

namespace {

// Quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q(1, '"');
  for (char c : s) {
    q += c;
    if (c == '"') q += '"';
  }
  q += '"';
  return q;
}

}  // namespace

std::string csv_field(const std::string& s) {
  // Text a spreadsheet would read as a formula (OWASP's CSV injection: a cell that starts with =, +, -, @, a tab or
  // a carriage return) starts with a quote instead, which makes it text.
  const bool formula = !s.empty() && std::string_view("=+-@\t\r").find(s.front()) != std::string_view::npos;
  return quoted(formula ? "'" + s : s);
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  return v.is_string() ? csv_field(v.get<std::string>()) : quoted(v.dump());
}

std::string run_csv(const std::vector<json>& rows) {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::pair<std::string, std::string>> flat;
    flatten(r, "", flat);
    // The plan the row ran, from its resolved scenario (which the flattening leaves out): tp, pp and dp always.
    if (r.contains("scenario") && r["scenario"].is_object() && r["scenario"].contains("parallelism"))
      for (const char* key : {"tp", "pp", "dp", "cp", "ep"})
        if (const json& p = r["scenario"]["parallelism"]; p.is_object() && p.contains(key) && p[key].is_number())
          flat.emplace_back(key, p[key].dump());
    std::map<std::string, std::string> row;
    for (auto& [k, v] : flat) {
      if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
      row[k] = v;
    }
    cells.push_back(std::move(row));
  }
  // The identifying and headline columns first, the rest as the JSON has them (alphabetical).
  const std::vector<std::string> first = {"name", "point.index", "gpus", "layout", "tp", "pp", "dp", "step_time_s", "tokens_per_s",
                                          "tflops_per_gpu", "hw_tflops_per_gpu", "mfu", "hfu", "scaling_efficiency"};
  std::stable_sort(columns.begin(), columns.end(), [&](const std::string& a, const std::string& b) {
    const auto rank = [&](const std::string& c) { return std::find(first.begin(), first.end(), c) - first.begin(); };
    return rank(a) < rank(b);
  });
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ',';
    out += csv_field(columns[i]);
  }
  out += '\n';
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (i) out += ',';
      if (auto it = row.find(columns[i]); it != row.end()) out += csv_field(it->second);
    }
    out += '\n';
  }
  return out;
}

std::string csv_rows(const std::vector<std::string>& columns, const std::vector<std::pair<std::string, json>>& rows) {
  std::string out = "name";
  for (const auto& c : columns) {
    out += ',';
    out += c;
  }
  out += '\n';
  for (const auto& [name, cells] : rows) {
    out += csv_field(name);
    for (const auto& c : columns) {
      out += ',';
      out += csv_cell(cells.value(c, json(nullptr)));
    }
    out += '\n';
  }
  return out;
}

}  // namespace dtsim::results
