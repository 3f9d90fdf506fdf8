#include "topology/mixed_gpu.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "topology/error.hpp"

namespace dtsim::topology {

GpuSpec mean_gpu(const std::vector<GpuCount>& groups) {
  DTSIM_ASSERT(!groups.empty(), "a mixed cluster has groups");
  GpuSpec g = groups.front().gpu;
  double total = 0;
  for (const auto& k : groups) total += k.count;
  const auto mean = [&](auto field) {
    double sum = 0;
    for (const auto& k : groups) sum += field(k.gpu) * k.count;
    return sum / total;
  };
  std::string name = "mixed:";
  for (std::size_t i = 0; i < groups.size(); ++i)
    name += fmt::format("{} {} x {}", i == 0 ? "" : " +", groups[i].count, groups[i].gpu.name);
  g.name = g.vendor_name = name;
  g.memory_bandwidth = BytesPerSecond(mean([](const GpuSpec& x) { return x.memory_bandwidth.value(); }));
  g.tdp = Watts(mean([](const GpuSpec& x) { return x.tdp.value(); }));
  g.idle_power = Watts(mean([](const GpuSpec& x) { return x.idle_power.value(); }));
  g.price = Dollars(mean([](const GpuSpec& x) { return x.price.value(); }));
  g.price_per_hour = Dollars(mean([](const GpuSpec& x) { return x.price_per_hour.value(); }));
  for (std::size_t p = 0; p < g.peak.size(); ++p) {
    const bool all = std::ranges::all_of(groups, [&](const GpuCount& k) { return k.gpu.peak[p].has_value(); });
    g.peak[p] = all ? std::optional(FlopsPerSecond(mean([&](const GpuSpec& x) { return x.peak[p]->value(); })))
                    : std::nullopt;
  }
  for (const auto& k : groups) {
    g.memory = std::min(g.memory, k.gpu.memory);
    g.memory_reserve = std::max(g.memory_reserve, k.gpu.memory_reserve);
    g.sms = std::min(g.sms, k.gpu.sms);
  }
  g.source = "the mean of the groups' GPUs (cluster.groups)";
  g.cost_source = g.source;
  return g;
}

}  // namespace dtsim::topology
