// `dtsim catalog`: the hardware catalog as a plain-text table or as JSON. Units are in the column and key names.
#include "results/catalog_report.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>

#include "topology/catalog.hpp"
#include "topology/units.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using topology::GpuSpec;
using topology::LinkSpec;
using topology::Precision;

// The precisions the table shows; JSON lists all the GPU has.
constexpr std::array kTablePrecisions = {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::Fp8,
                                         Precision::Int8};

// Unit conversions leave binary noise (0.6 us -> 0.6000000000000001); 12 significant digits is far below any
// figure's accuracy and prints clean numbers.
double tidy(double value) {
  const auto text = fmt::format("{:.12g}", value);
  double out = value;
  std::from_chars(text.data(), text.data() + text.size(), out);
  return out;
}

std::int64_t whole_bytes(Bytes b) { return static_cast<std::int64_t>(std::llround(b.value())); }

std::string peak_cell(const GpuSpec& gpu, Precision p) {
  const auto peak = gpu.peak_for(p);
  return peak ? fmt::format("{:g}", tidy(to_teraflops(*peak))) : std::string("-");
}

std::string gpu_header() {
  std::string row = fmt::format("{:<16} {:>8} {:>9}", "gpu", "mem_GiB", "HBM_GBps");
  for (const auto p : kTablePrecisions) row += fmt::format(" {:>7}", to_string(p));
  return row + fmt::format(" {:>6} {:<19} {:>9} {:>7}\n", "tdp_W", "gpu_link", "price_usd", "usd_h");
}

std::string gpu_row(const GpuSpec& gpu) {
  std::string row = fmt::format("{:<16} {:>8.1f} {:>9.0f}", gpu.name, to_gibibytes(gpu.memory),
                                to_gigabytes_per_second(gpu.memory_bandwidth));
  for (const auto p : kTablePrecisions) row += fmt::format(" {:>7}", peak_cell(gpu, p));
  const auto link = fmt::format("{} x{}", gpu.gpu_link, gpu.gpu_link_count);
  return row + fmt::format(" {:>6.0f} {:<19} {:>9.0f} {:>7.2f}\n", gpu.tdp.value(), link, gpu.price.value(),
                           gpu.price_per_hour.value());
}

std::string link_header() {
  return fmt::format("{:<16} {:<17} {:>8} {:>8} {:>10} {:>10}\n", "link", "family", "GBps_dir", "Gbps",
                     "latency_us", "efficiency");
}

std::string link_row(const LinkSpec& link) {
  return fmt::format("{:<16} {:<17} {:>8g} {:>8g} {:>10g} {:>10g}\n", link.name, to_string(link.family),
                     tidy(to_gigabytes_per_second(link.bandwidth)), tidy(to_gigabits_per_second(link.bandwidth)),
                     tidy(to_microseconds(link.latency)), link.efficiency);
}

json peaks_json(const GpuSpec& gpu) {
  json peaks = json::object();
  for (const auto p : topology::kAllPrecisions) {
    if (const auto peak = gpu.peak_for(p)) peaks[std::string(to_string(p))] = tidy(to_teraflops(*peak));
  }
  return peaks;
}

json gpu_json(const GpuSpec& gpu) {
  return {{"name", gpu.name},
          {"vendor_name", gpu.vendor_name},
          {"memory_bytes", whole_bytes(gpu.memory)},
          {"memory_reserve_bytes", whole_bytes(gpu.memory_reserve)},
          {"memory_bandwidth_GBps", tidy(to_gigabytes_per_second(gpu.memory_bandwidth))},
          {"peak_TFLOPS", peaks_json(gpu)},
          {"tdp_W", gpu.tdp.value()},
          {"price_usd", gpu.price.value()},
          {"price_per_hour_usd", gpu.price_per_hour.value()},
          {"gpu_link", gpu.gpu_link},
          {"gpu_link_count", gpu.gpu_link_count},
          {"host_link", gpu.host_link},
          {"source", gpu.source}};
}

json link_json(const LinkSpec& link) {
  return {{"name", link.name},
          {"family", std::string(to_string(link.family))},
          {"bandwidth_GBps", tidy(to_gigabytes_per_second(link.bandwidth))},
          {"bandwidth_Gbps", tidy(to_gigabits_per_second(link.bandwidth))},
          {"latency_us", tidy(to_microseconds(link.latency))},
          {"efficiency", link.efficiency},
          {"source", link.source}};
}

}  // namespace

std::string catalog_table() {
  std::string out = "GPUs (dense peaks in TFLOP/s, int8 in TOPS; prices approximate)\n" + gpu_header();
  for (const auto& gpu : topology::gpu_catalog()) out += gpu_row(gpu);
  out += "\nlinks (bandwidth of one link, one direction, line rate; latency per hop)\n" + link_header();
  for (const auto& link : topology::link_catalog()) out += link_row(link);
  return out + "\nmodels: (presets arrive with the workloads)\n";
}

json catalog_json() {
  json gpus = json::array();
  for (const auto& gpu : topology::gpu_catalog()) gpus.push_back(gpu_json(gpu));
  json links = json::array();
  for (const auto& link : topology::link_catalog()) links.push_back(link_json(link));
  return {{"gpus", gpus}, {"links", links}, {"models", json::array()}};
}

}  // namespace dtsim::results
