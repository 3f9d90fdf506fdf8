// Names of precisions and link families, catalog look-ups and the checks a user-supplied entry must pass.
// The entries themselves are in catalog_gpus.cpp and catalog_data.cpp.
#include "topology/catalog.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <utility>

#include "topology/error.hpp"
#include "topology/name_table.hpp"

namespace dtsim::topology {
namespace {

constexpr NameTable<Precision, kAllPrecisions.size()> kPrecisionNames = {{
    {Precision::Fp64, "fp64"},
    {Precision::Fp32, "fp32"},
    {Precision::Tf32, "tf32"},
    {Precision::Bf16, "bf16"},
    {Precision::Fp16, "fp16"},
    {Precision::Fp8, "fp8"},
    {Precision::Int8, "int8"},
    {Precision::Int4, "int4"},
    {Precision::Mxfp8, "mxfp8"},
    {Precision::Fp4, "fp4"},
    {Precision::Mxfp4, "mxfp4"},
}};

constexpr NameTable<LinkFamily, 9> kFamilyNames = {{
    {LinkFamily::NvLink, "nvlink"},
    {LinkFamily::InfinityFabric, "infinity-fabric"},
    {LinkFamily::Pcie, "pcie"},
    {LinkFamily::CpuInterconnect, "cpu-interconnect"},
    {LinkFamily::Ethernet, "ethernet"},
    {LinkFamily::EthernetTcp, "ethernet-tcp"},
    {LinkFamily::InfiniBand, "infiniband"},
    {LinkFamily::OmniPath, "omni-path"},
    {LinkFamily::Custom, "custom"},
}};

template <class Spec>
std::string join_names(std::span<const Spec> specs) {
  std::string out;
  for (const auto& spec : specs) out += (out.empty() ? "" : ", ") + spec.name;
  return out;
}

template <class Spec>
const Spec* find_by_name(std::span<const Spec> specs, std::string_view name) {
  const auto it = std::ranges::find(specs, name, &Spec::name);
  return it == specs.end() ? nullptr : &*it;
}

// Each check names the field (key.field), the value and what is allowed.
void require(bool ok, std::string_view key, std::string_view field, const std::string& value,
             std::string_view reason, std::string_view allowed) {
  if (ok) return;
  throw InputError(fmt::format("{}.{}", key, field), value, std::string(reason), std::string(allowed));
}

void require_positive(double value, std::string_view key, std::string_view field) {
  require(value > 0.0, key, field, fmt::format("{:g}", value), "must be positive", "> 0");
}

void require_name(const std::string& name, std::string_view key) {
  require(!name.empty(), key, "name", name, "must not be empty", "a non-empty name");
}

void validate_peaks(const GpuSpec& gpu, std::string_view key) {
  bool any = false;
  for (const auto p : kAllPrecisions) {
    const auto peak = gpu.peak_for(p);
    if (!peak) continue;
    require_positive(to_teraflops(*peak), key, fmt::format("peak_TFLOPS.{}", to_string(p)));
    any = true;
  }
  require(any, key, "peak_TFLOPS", "none", "needs at least one precision", "fp64, fp32, tf32, bf16, ...");
}

}  // namespace

std::string_view to_string(Precision p) { return name_of(kPrecisionNames, p); }
std::optional<Precision> parse_precision(std::string_view name) { return value_of(kPrecisionNames, name); }
std::string_view to_string(LinkFamily f) { return name_of(kFamilyNames, f); }
std::optional<LinkFamily> parse_link_family(std::string_view name) { return value_of(kFamilyNames, name); }

std::string gpu_names() { return join_names(gpu_catalog()); }
std::string link_family_names() {
  std::string out;
  for (const auto& [family, name] : kFamilyNames) out += fmt::format("{}{}", out.empty() ? "" : ", ", name);
  return out;
}

std::string link_names() { return join_names(link_catalog()); }
std::string cpu_names() { return join_names(cpu_catalog()); }

const CpuSpec& find_cpu(std::string_view name, std::string_view key) {
  const auto* cpu = find_by_name(cpu_catalog(), name);
  if (cpu == nullptr) throw InputError(std::string(key), std::string(name), "unknown CPU", cpu_names());
  return *cpu;
}

const CpuSpec& default_cpu(std::string_view host_link) {
  const auto cpus = cpu_catalog();
  for (const CpuSpec& c : cpus)
    if (c.pcie == host_link) return c;
  return cpus.back();
}

std::string_view to_string(PartKind k) {
  switch (k) {
    case PartKind::Gpu: return "gpu";
    case PartKind::Server: return "server";
    case PartKind::Nic: return "nic";
    case PartKind::Switch: return "switch";
    case PartKind::Cable: return "cable";
    case PartKind::Transceiver: return "transceiver";
  }
  return "?";
}

const PartSpec* find_part(PartKind kind, LinkFamily family, BytesPerSecond speed) {
  for (const PartSpec& p : part_catalog())
    if (p.kind == kind && p.port_speed == speed && std::ranges::find(p.families, family) != p.families.end()) return &p;
  return nullptr;
}

const PartSpec& find_part(std::string_view name) {
  const auto* part = find_by_name(part_catalog(), name);
  DTSIM_ASSERT(part != nullptr, "a part the catalog has");
  return *part;
}

const GpuSpec& find_gpu(std::string_view name, std::string_view key) {
  const auto* gpu = find_by_name(gpu_catalog(), name);
  if (gpu == nullptr) throw InputError(std::string(key), std::string(name), "unknown GPU", gpu_names());
  return *gpu;
}

const LinkSpec& find_link(std::string_view name, std::string_view key) {
  const auto* link = find_by_name(link_catalog(), name);
  if (link == nullptr) throw InputError(std::string(key), std::string(name), "unknown link", link_names());
  return *link;
}

const LinkSpec& default_inter_link(const GpuSpec& gpu) {
  if (gpu.scale_out_link.empty()) return find_link(kDefaultInterLink, "cluster.inter_link");
  return find_link(gpu.scale_out_link, "cluster.gpu.scale_out_link");
}

const LinkSpec& host_memory_link(const GpuSpec& gpu) {
  if (gpu.cpu_link.empty()) return find_link(gpu.host_link, "cluster.gpu.host_link");
  return find_link(gpu.cpu_link, "cluster.gpu.cpu_link");
}

void validate(const GpuSpec& gpu, std::string_view key) {
  require_name(gpu.name, key);
  require_positive(gpu.memory.value(), key, "memory_bytes");
  require(gpu.memory_reserve.value() >= 0.0 && gpu.memory_reserve < gpu.memory, key, "memory_reserve_bytes",
          fmt::format("{:g}", gpu.memory_reserve.value()), "out of range", "0 <= reserve < memory_bytes");
  require_positive(to_gigabytes_per_second(gpu.memory_bandwidth), key, "memory_bandwidth_GBps");
  validate_peaks(gpu, key);
  require(gpu.tdp.value() >= 0.0, key, "tdp_W", fmt::format("{:g}", gpu.tdp.value()), "must not be negative",
          ">= 0");
  require(gpu.price.value() >= 0.0, key, "price_usd", fmt::format("{:g}", gpu.price.value()),
          "must not be negative", ">= 0");
  require(gpu.price_per_hour.value() >= 0.0, key, "price_per_hour_usd",
          fmt::format("{:g}", gpu.price_per_hour.value()), "must not be negative", ">= 0");
  require(!gpu.gpu_link.empty(), key, "gpu_link", gpu.gpu_link, "must not be empty", "a link name");
  require(gpu.gpu_link_count >= 1, key, "gpu_link_count", fmt::format("{}", gpu.gpu_link_count),
          "must be at least 1", ">= 1");
  require(!gpu.host_link.empty(), key, "host_link", gpu.host_link, "must not be empty", "a link name");
}

void validate(const LinkSpec& link, std::string_view key) {
  require_name(link.name, key);
  require_positive(to_gigabytes_per_second(link.bandwidth), key, "bandwidth_GBps");
  require(link.bandwidth <= kMaxLinkBandwidth, key, "bandwidth_GBps",
          fmt::format("{:g}", to_gigabytes_per_second(link.bandwidth)), "out of range",
          fmt::format("<= {:g} GB/s", to_gigabytes_per_second(kMaxLinkBandwidth)));
  require(link.latency.value() >= 0.0, key, "latency_us", fmt::format("{:g}", to_microseconds(link.latency)),
          "must not be negative", ">= 0");
  require(link.efficiency > 0.0 && link.efficiency <= 1.0, key, "efficiency", fmt::format("{:g}", link.efficiency),
          "out of range", "(0, 1]");
}

}  // namespace dtsim::topology
