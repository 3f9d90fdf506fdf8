#include "results/topology_report.hpp"

#include <fmt/format.h>

namespace dtsim::results {
namespace {

std::string layout_of(const topology::ClusterSpec& c) {
  if (c.graph) return fmt::format("graph {}", *c.graph);
  std::string s = c.gpus_per_node == 1
                      ? fmt::format("{}x1", c.nodes)
                      : fmt::format("{}x{} {} ({})", c.nodes, c.gpus_per_node, to_string(c.intra), c.intra_link.name);
  if (c.inter != topology::InterKind::None) s += fmt::format(" + {} ({})", to_string(c.inter), c.inter_link.name);
  return s;
}

std::string bisection_method(const topology::TopologyProperties& p) {
  return p.bisection_exact ? "exact"
                           : fmt::format("least max-flow over {} candidate splits", p.bisection_candidates);
}

double gbps(BytesPerSecond b) { return to_gigabytes_per_second(b); }

}  // namespace

std::string cluster_layout(const topology::ClusterSpec& c) { return layout_of(c); }

nlohmann::json topology_json(const TopologyRow& row) {
  const auto& p = row.properties;
  const auto& c = *row.cluster;
  nlohmann::json j;
  j["name"] = row.name;
  j["gpu"] = c.gpu.name;
  j["layout"] = layout_of(c);
  j["gpus"] = p.gpus;
  j["switches"] = p.switches;
  j["nics"] = p.nics;
  j["cpus"] = p.cpus;
  j["links"] = p.links;
  j["diameter_hops"] = p.diameter_hops;
  j["injection_GBps_per_gpu"] = gbps(p.injection_per_gpu);
  j["bisection_GBps"] = gbps(p.bisection);
  j["bisection_method"] = bisection_method(p);
  if (!c.graph) j["gpu_budget_GBps"] = gbps(c.gpu_budget());
  return j;
}

std::string topology_table(const TopologyRow& row) {
  const auto& p = row.properties;
  std::string out = fmt::format("{}: {} x {}\n", row.name, p.gpus, row.cluster->gpu.name);
  out += fmt::format("  layout           {}\n", layout_of(*row.cluster));
  out += fmt::format("  devices          {} GPUs, {} switches, {} NICs, {} CPUs\n", p.gpus, p.switches, p.nics, p.cpus);
  out += fmt::format("  links            {}\n", p.links);
  out += fmt::format("  diameter         {} hops\n", p.diameter_hops);
  out += fmt::format("  injection        {:.1f} GB/s per GPU (one direction, line rate)\n", gbps(p.injection_per_gpu));
  out += fmt::format("  bisection        {:.1f} GB/s ({})\n", gbps(p.bisection), bisection_method(p));
  return out;
}

std::string topology_comparison(const std::vector<TopologyRow>& rows) {
  std::string out = fmt::format("{:<24} {:<16} {:>5} {:<44} {:>9} {:>10} {:>10} {:>5}\n", "configuration", "gpu", "gpus",
                                "layout", "budget", "injection", "bisection", "diam");
  out += fmt::format("{:<24} {:<16} {:>5} {:<44} {:>9} {:>10} {:>10} {:>5}\n", "", "", "", "", "GB/s", "GB/s", "GB/s",
                     "hops");
  for (const auto& r : rows) {
    const auto& p = r.properties;
    out += fmt::format("{:<24} {:<16} {:>5} {:<44} {:>9.1f} {:>10.1f} {:>10.1f} {:>5}\n", r.name, r.cluster->gpu.name,
                       p.gpus, layout_of(*r.cluster), gbps(r.cluster->gpu_budget()), gbps(p.injection_per_gpu),
                       gbps(p.bisection), p.diameter_hops);
  }
  return out;
}

}  // namespace dtsim::results
