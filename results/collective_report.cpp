#include "results/collective_report.hpp"

#include <fmt/format.h>

namespace dtsim::results {
namespace {

double algbw_GBps(const CollectiveRow& r) { return r.size.value() / r.time.value() / 1e9; }

}  // namespace

nlohmann::json collective_json(const std::vector<CollectiveRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"size_bytes", r.size.value()},
                   {"time_us", to_microseconds(r.time)},
                   {"algbw_GBps", algbw_GBps(r)},
                   {"busbw_GBps", algbw_GBps(r) * r.bus_factor},
                   {"algorithm", r.algorithm},
                   {"protocol", r.protocol}});
  return out;
}

std::string collective_table(const std::string& title, const std::vector<CollectiveRow>& rows) {
  std::string out = fmt::format("# {}\n#\n# {:>14} {:>12} {:>11} {:>11}  {:<16} {}\n", title, "size (B)", "time (us)",
                                "algbw (GB/s)", "busbw (GB/s)", "algorithm", "protocol");
  for (const auto& r : rows)
    out += fmt::format("  {:>14.0f} {:>12.2f} {:>11.2f} {:>11.2f}  {:<16} {}\n", r.size.value(),
                       to_microseconds(r.time), algbw_GBps(r), algbw_GBps(r) * r.bus_factor, r.algorithm, r.protocol);
  return out;
}

}  // namespace dtsim::results
