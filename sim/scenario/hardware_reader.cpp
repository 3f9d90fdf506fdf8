#include "sim/scenario/hardware_reader.hpp"

#include <limits>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"

namespace dtsim::scenario {
namespace {

using topology::GpuSpec;
using topology::LinkSpec;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Required when there is no base entry to take it from.
void need(const YamlMap& m, bool has_base, std::initializer_list<const char*> keys) {
  if (has_base) return;
  for (const char* k : keys)
    if (!m.has(k)) m.fail(k, "", "missing field (no `base` catalog entry to take it from)", k);
}

// What an inline GPU may claim: far past any part made (a thousand times a B200), and small enough that every
// figure dtsim derives from it stays a finite double that prints (1e308 GiB printed as null).
constexpr double kMostTflops = 1e6;
constexpr double kMostGiB = 1e6;
constexpr double kMostGBps = 1e7;
constexpr double kMostWatts = 1e6;
constexpr double kMostUsd = 1e9;

void read_peaks(const YamlMap& m, GpuSpec& gpu) {
  std::string allowed;
  for (auto p : topology::kAllPrecisions) allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(p));
  for (const std::string& k : m.keys()) {
    auto p = topology::parse_precision(k);
    if (!p) m.fail(k, k, "unknown precision", allowed);
    gpu.peak[static_cast<std::size_t>(*p)] = teraflops(*m.number(k, 0.0, false, kMostTflops));
  }
}

GpuSpec read_gpu_map(const YamlMap& m) {
  m.allow_only({"base", "name", "architecture", "memory_GiB", "memory_reserve_GiB", "memory_bandwidth_GBps",
                "peak_TFLOPS", "tdp_W", "idle_W", "price_usd", "price_per_hour_usd", "gpu_link", "gpu_link_count", "host_link",
                "cpu_link", "scale_out_link", "sms"});
  const auto base = m.text("base");
  GpuSpec gpu = base ? topology::find_gpu(*base, m.dotted("base")) : GpuSpec{};
  need(m, base.has_value(), {"name", "architecture", "memory_GiB", "memory_reserve_GiB", "memory_bandwidth_GBps",
                             "peak_TFLOPS", "gpu_link", "host_link"});
  if (!base) gpu.source = "scenario";
  if (auto v = m.text("name")) gpu.name = *v;
  if (auto v = m.text("architecture")) {
    try {
      gpu.architecture = workloads::architecture(*v, m.dotted("architecture")).name;
    } catch (const InputError& e) {
      m.fail("architecture", *v, e.reason(), e.allowed());
    }
  }
  if (auto v = m.number("memory_GiB", 0.0, false, kMostGiB)) gpu.memory = gibibytes(*v);
  if (auto v = m.number("memory_reserve_GiB", 0.0, true, kMostGiB)) gpu.memory_reserve = gibibytes(*v);
  if (auto v = m.number("memory_bandwidth_GBps", 0.0, false, kMostGBps)) gpu.memory_bandwidth = gigabytes_per_second(*v);
  if (m.has("peak_TFLOPS")) read_peaks(m.map("peak_TFLOPS"), gpu);
  if (auto v = m.number("tdp_W", 0.0, true, kMostWatts)) gpu.tdp = Watts(*v);
  if (auto v = m.number("idle_W", 0.0, true, kMostWatts)) gpu.idle_power = Watts(*v);
  if (auto v = m.number("price_usd", 0.0, true, kMostUsd)) gpu.price = Dollars(*v);
  if (auto v = m.number("price_per_hour_usd", 0.0, true, kMostUsd)) gpu.price_per_hour = Dollars(*v);
  if (auto v = m.text("gpu_link")) gpu.gpu_link = topology::find_link(*v, m.dotted("gpu_link")).name;
  if (auto v = m.integer("gpu_link_count", 1, 1024)) gpu.gpu_link_count = static_cast<int>(*v);
  if (auto v = m.text("host_link")) gpu.host_link = topology::find_link(*v, m.dotted("host_link")).name;
  if (auto v = m.text("cpu_link")) gpu.cpu_link = topology::find_link(*v, m.dotted("cpu_link")).name;
  if (auto v = m.text("scale_out_link")) gpu.scale_out_link = topology::find_link(*v, m.dotted("scale_out_link")).name;
  if (auto v = m.integer("sms", 0, 100000)) gpu.sms = static_cast<int>(*v);
  return gpu;
}

LinkSpec read_link_map(const YamlMap& m) {
  m.allow_only({"base", "name", "family", "bandwidth_GBps", "bandwidth_Gbps", "latency_us", "efficiency", "switch_reduction",
                "switch_port_GBps"});
  const auto base = m.text("base");
  LinkSpec link = base ? topology::find_link(*base, m.dotted("base")) : LinkSpec{};
  if (!base) link.source = "scenario";
  need(m, base.has_value(), {"name", "latency_us"});
  const auto gbytes = m.number("bandwidth_GBps", 0.0, false, kInf);
  const auto gbits = m.number("bandwidth_Gbps", 0.0, false, kInf);
  if (gbytes && gbits) m.fail("bandwidth_Gbps", "both", "give the bandwidth once, not", "bandwidth_GBps or bandwidth_Gbps");
  if (!base && !gbytes && !gbits) m.fail("bandwidth_GBps", "", "missing field", "bandwidth_GBps or bandwidth_Gbps");
  if (gbytes) link.bandwidth = gigabytes_per_second(*gbytes);
  if (gbits) link.bandwidth = gigabits_per_second(*gbits);
  if (auto v = m.text("name")) link.name = *v;
  if (auto v = m.text("family")) {
    auto f = topology::parse_link_family(*v);
    if (!f) m.fail("family", *v, "unknown link family", topology::link_family_names());
    link.family = *f;
  }
  if (auto v = m.number("latency_us", 0.0, true, 1e6)) link.latency = microseconds(*v);   // a second at most
  if (auto v = m.number("efficiency", 0.0, false, 1.0)) link.efficiency = *v;
  if (auto v = m.boolean("switch_reduction")) link.switch_reduction = *v;
  if (auto v = m.number("switch_port_GBps", 0.0, true, kInf)) link.switch_port_rate = gigabytes_per_second(*v);
  return link;
}

template <class Spec, class FromMap, class FromCatalog>
Spec read_hardware(const YamlMap& parent, const std::string& key, FromMap from_map, FromCatalog from_catalog) {
  Spec spec;
  try {
    spec = parent.is_map(key) ? from_map(parent.map(key)) : from_catalog(*parent.text(key), parent.dotted(key));
    topology::validate(spec, parent.dotted(key));
  } catch (const InputError& e) {
    if (!e.location().empty()) throw;
    throw InputError(e.key(), e.value(), e.reason(), e.allowed(), parent.where(key));
  }
  return spec;
}

}  // namespace

GpuSpec read_gpu(const YamlMap& parent, const std::string& key) {
  return read_hardware<GpuSpec>(parent, key, read_gpu_map,
                                [](const std::string& n, const std::string& k) { return topology::find_gpu(n, k); });
}

LinkSpec read_link(const YamlMap& parent, const std::string& key) {
  return read_hardware<LinkSpec>(parent, key, read_link_map,
                                 [](const std::string& n, const std::string& k) { return topology::find_link(n, k); });
}

LinkSpec read_link_or(const YamlMap& parent, const std::string& key, const std::string& fallback) {
  if (parent.has(key)) return read_link(parent, key);
  return topology::find_link(fallback, parent.dotted(key));
}

}  // namespace dtsim::scenario
