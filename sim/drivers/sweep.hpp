// `dtsim sweep` and `dtsim merge` as library calls: a sweep's points run in worker processes, rows streamed to
// OUT/results.{jsonl,csv} as they finish; what the sweep has to say along the way goes to an observer, not to a
// stream (sweep.cpp has the files' guarantees).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "sim/drivers/sweep_rows.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim::drivers {

struct SweepOptions {
  int jobs = 1;          // worker processes at once (>= 1)
  Shard shard;           // this process's slice of the points
  bool resume = false;   // keep the rows already in the files whose point is unchanged, run the rest
};

// What a sweep tells as it runs; any may be empty.
struct SweepObserver {
  std::function<void(std::size_t done, std::size_t total)> start;                      // before the first worker
  std::function<void(std::size_t done, std::size_t total, const std::string& name)> row;   // a row arrived
  std::function<void(const std::string& message)> warning;                              // a worker died
};

struct SweepResult {
  Files files;            // where the rows are
  std::size_t rows = 0;   // whole rows in the files
  std::size_t lost = 0;   // points whose worker died without a result: --resume runs them
  int signal = 0;         // SIGINT or SIGTERM that stopped the sweep (its rows kept whole), 0 when none did
};

// InputError unless `scenarios` are the points of one document's sweep, in sweep order.
void check_sweep(const std::vector<scenario::Scenario>& scenarios);

// Runs the sweep's points `scenarios` (one document's, in sweep order, loaded with keep_invalid_points: an invalid
// point becomes an error row) into `dir`. The sweep catches SIGINT and SIGTERM while it runs and restores them after.
SweepResult sweep(const std::vector<scenario::Scenario>& scenarios, const std::string& dir, const SweepOptions& options,
                  const SweepObserver& observer = {});

// `dtsim merge DIR`: a complete set of one sweep's shard files into DIR/results.{jsonl,csv}, in sweep order, with
// the scaling columns; InputError naming what is missing or foreign.
struct MergeResult {
  std::size_t rows = 0;
  int shards = 0;
};
MergeResult merge(const std::string& dir);

}  // namespace dtsim::drivers
