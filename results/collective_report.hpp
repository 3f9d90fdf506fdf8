// `dtsim collective`: nccl-tests' table (the header lines, size, count, type, redop, root, then out-of-place and
// in-place time, algbw, busbw and #wrong, then "# Avg bus bandwidth") or its JSON rows.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "topology/units.hpp"

namespace dtsim::results {

struct CollectiveRow {
  Bytes size;
  Seconds time;
  double bus_factor = 1.0;   // nccl-tests' factor for the operation and group size
  std::string algorithm;     // the algorithm that ran (`auto` resolved)
  std::string protocol;      // the protocol that ran (`auto` resolved)
};

// What nccl-tests prints around its rows: the run's parameters, the devices, the element type and reduction.
struct CollectiveRun {
  std::string title;           // dtsim's own description, on a comment line after nccl-tests' header
  std::string gpu;             // catalog name, on each "# Rank" line
  int gpus = 0;
  int gpus_per_node = 0;
  double min_bytes = 0, max_bytes = 0, step_factor = 2;
  std::string type = "float";  // nccl-tests' datatype name
  int type_bytes = 4;
  std::string redop = "sum";   // "none" for collectives that do not reduce
  int root = -1;               // -1 for collectives without a root
  int count_ranks = 1;         // nccl-tests counts elements per rank for all-gather, reduce-scatter and all-to-all
  int iters = 1, warmup_iters = 0;   // nccl-tests' -n and -w, as its header prints them
};

// JSON: [{size_bytes, count, type, redop, root, time_us, algbw_GBps, busbw_GBps, algorithm, protocol}, ...]
nlohmann::json collective_json(const CollectiveRun& run, const std::vector<CollectiveRow>& rows);
// nccl-tests' *_perf output. dtsim checks no data: #wrong is N/A, as nccl-tests prints it with -c 0; out-of-place
// and in-place runs time the same in the simulator.
std::string collective_table(const CollectiveRun& run, const std::vector<CollectiveRow>& rows);

}  // namespace dtsim::results
