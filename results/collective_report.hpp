// `dtsim collective`: an nccl-tests-style table (size, time, algorithm, protocol and bus bandwidth) or its JSON rows.
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

// JSON: [{size_bytes, time_us, algbw_GBps, busbw_GBps, algorithm, protocol}, ...]
nlohmann::json collective_json(const std::vector<CollectiveRow>& rows);
// `title` goes on the first line, after "# ".
std::string collective_table(const std::string& title, const std::vector<CollectiveRow>& rows);

}  // namespace dtsim::results
