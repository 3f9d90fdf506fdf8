#include "results/collective_report.hpp"

#include <cmath>
#include <fmt/format.h>

namespace dtsim::results {
namespace {

double algbw_GBps(const CollectiveRow& r) { return r.size.value() / r.time.value() / 1e9; }

long long element_count(const CollectiveRun& run, const CollectiveRow& r) {
  return static_cast<long long>(std::floor(r.size.value() / run.type_bytes / run.count_ranks));
}

// nccl-tests prints fewer decimals as the time grows, keeping the column seven characters wide.
std::string time_text(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

// Consecutive sizes that ran the same algorithm and protocol, as "ring/ll 8 B to 4 KiB".
std::string algorithm_runs(const std::vector<CollectiveRow>& rows) {
  std::string out;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j + 1 < rows.size() && rows[j + 1].algorithm == rows[i].algorithm && rows[j + 1].protocol == rows[i].protocol)
      ++j;
    out += fmt::format("{}{}/{} {:.0f} to {:.0f} B", out.empty() ? "" : "; ", rows[i].algorithm, rows[i].protocol,
                       rows[i].size.value(), rows[j].size.value());
    i = j + 1;
  }
  return out;
}

}  // namespace

nlohmann::json collective_json(const CollectiveRun& run, const std::vector<CollectiveRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"size_bytes", r.size.value()},
                   {"count", element_count(run, r)},
                   {"type", run.type},
                   {"redop", run.redop},
                   {"root", run.root},
                   {"time_us", to_microseconds(r.time)},
                   {"algbw_GBps", algbw_GBps(r)},
                   {"busbw_GBps", algbw_GBps(r) * r.bus_factor},
                   {"algorithm", r.algorithm},
                   {"protocol", r.protocol}});
  return out;
}

std::string collective_table(const CollectiveRun& run, const std::vector<CollectiveRow>& rows) {
  std::string out = fmt::format(
      "# nThread 1 nGpus {} minBytes {:.0f} maxBytes {:.0f} step: {:g}(factor) warmup iters: {} iters: {} agg iters: 1 "
      "validation: 0 graph: 0\n#\n# dtsim: {}\n# dtsim: {}\n#\n# Using devices\n",
      run.gpus, run.min_bytes, run.max_bytes, run.step_factor, run.warmup_iters, run.iters, run.title,
      algorithm_runs(rows));
  const int per_node = run.gpus_per_node > 0 ? run.gpus_per_node : run.gpus;
  for (int rank = 0; rank < run.gpus; ++rank)
    out += fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device {:2d} [simulated] {}\n", rank, rank,
                       fmt::format("node{}", rank / per_node), rank % per_node, run.gpu);
  // Columns as nccl-tests aligns them: each header right-aligned over its data column.
  constexpr auto header = "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} {:>6}\n";
  out += fmt::format("#\n#{:>74}{:>30}\n", "out-of-place", "in-place");
  out += fmt::format(header, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                     "algbw", "busbw", "#wrong");
  out += fmt::format(header, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                     "(GB/s)", "");
  double busbw_sum = 0;
  for (const auto& r : rows) {
    const double busbw = algbw_GBps(r) * r.bus_factor;
    busbw_sum += busbw;
    const std::string timing =
        fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_text(to_microseconds(r.time)), algbw_GBps(r), busbw, "N/A");
    out += fmt::format("{:12.0f}  {:12d}  {:>8}  {:>6}  {:6d}{}{}\n", r.size.value(), element_count(run, r), run.type,
                       run.redop, run.root, timing, timing);
  }
  out += fmt::format("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {:.4f} \n#\n",
                     rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
  return out;
}

}  // namespace dtsim::results
