// A sweep's rows and their files (sweep_rows.hpp).
#include "sim/drivers/sweep_rows.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "results/run_report.hpp"
#include "results/files.hpp"

namespace dtsim::drivers {
namespace {

using nlohmann::json;

std::string jsonl_text(const Rows& rows) {
  std::string out;
  for (const auto& [index, row] : rows) out += row.dump() + "\n";
  return out;
}

}  // namespace

Files files_of(const std::string& dir, const Shard& shard) {
  const std::string base =
      shard.count > 1 ? fmt::format("{}/results.shard-{}-of-{}", dir, shard.index, shard.count) : dir + "/results";
  return {base + ".jsonl", base + ".csv"};
}

void replace_file(const std::string& path, const std::string& text) {
  results::write_file(path, text, "--out");   // beside itself (a name per process: shards may write one file at once), renamed
}

std::string csv_text(const Rows& rows) {
  std::vector<json> list;
  for (const auto& [index, row] : rows) list.push_back(row);
  return list.empty() ? std::string() : results::run_csv(list);
}

// Scaling efficiency of each row against the sweep's smallest configuration (the fewest GPUs; the first such
// row): strong, the same problem on more GPUs, (t0 x g0) / (t x g) from step times; weak, the work growing with
// the GPUs, model TFLOP/s per GPU over the smallest's. Rows with an error get neither. Only a complete sweep (or
// a merge) knows its smallest configuration, so the columns appear when it completes. Serving rows (no training
// step) get neither: their scaling is tokens per second per GPU, already in the row. A sweep whose rows all have one
// GPU count gets neither either.
void add_scaling(Rows& rows) {
  const auto training = [](const json& row) { return !row.contains("error") && row.contains("step_time_s"); };
  const json* small = nullptr;
  for (const auto& [index, row] : rows)
    if (training(row) && (small == nullptr || row["gpus"].get<double>() < (*small)["gpus"].get<double>()))
      small = &row;
  if (small == nullptr) return;
  // One GPU count throughout (a sweep over plans or models on one cluster): there is no scaling to show.
  const bool one_size = std::all_of(rows.begin(), rows.end(), [&](const auto& kv) {
    return !training(kv.second) || kv.second["gpus"].template get<double>() == (*small)["gpus"].template get<double>();
  });
  if (one_size) return;
  const double g0 = (*small)["gpus"].get<double>(), t0 = (*small)["step_time_s"].get<double>();
  const double f0 = (*small)["tflops_per_gpu"].get<double>();
  for (auto& [index, row] : rows) {
    if (!training(row)) continue;
    row["strong_scaling_efficiency"] = t0 * g0 / (row["step_time_s"].get<double>() * row["gpus"].get<double>());
    row["weak_scaling_efficiency"] = row["tflops_per_gpu"].get<double>() / f0;
  }
}

void write_both(const Files& files, const Rows& rows) {
  replace_file(files.jsonl, jsonl_text(rows));
  replace_file(files.csv, csv_text(rows));
}

// The rows of a JSONL file: every complete line that parses as an object with a point index. A last line cut
// short by a kill (no newline, or not JSON) is dropped.
Rows read_rows(const std::string& path) {
  Rows rows;
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) break;   // torn
    const json row = json::parse(text.substr(start, end - start), nullptr, false);
    if (row.is_object() && row.contains("point") && row["point"].is_object() &&
        row["point"].contains("index") && row["point"]["index"].is_number_integer())
      rows.emplace(row["point"]["index"].get<int>(), row);
    start = end + 1;
  }
  return rows;
}

}  // namespace dtsim::drivers
