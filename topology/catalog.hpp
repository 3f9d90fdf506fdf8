// The hardware catalog: GPUs and links as data, one entry each, with the source of every figure.
// Values live in catalog_gpus.cpp (GPUs) and catalog_data.cpp (the rest); nothing else in dtsim writes a hardware
// number as a literal.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topology/units.hpp"

namespace dtsim::topology {

// Number formats a GPU computes in (and int8/int4 for weights). Order fixes the column order of tables. The block-
// scaled formats (OCP Microscaling Formats (MX) v1.0, NVIDIA's NVFP4): mxfp8, E4M3 elements with one E8M0 scale per
// 32; fp4, NVFP4: E2M1 elements with one E4M3 scale per 16 (and one fp32 scale per tensor); mxfp4: E2M1 elements
// with one E8M0 scale per 32 (OCP MX v1.0's MXFP4: AMD's FP4, and the format of GPT-OSS's released weights). Their
// bytes per element count the scales.
enum class Precision { Fp64, Fp32, Tf32, Bf16, Fp16, Fp8, Int8, Int4, Mxfp8, Fp4, Mxfp4 };
inline constexpr std::array kAllPrecisions = {Precision::Fp64, Precision::Fp32, Precision::Tf32,  Precision::Bf16,
                                              Precision::Fp16, Precision::Fp8,  Precision::Int8,  Precision::Int4,
                                              Precision::Mxfp8, Precision::Fp4, Precision::Mxfp4};
std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view name);

// What a link is made of; one protocol efficiency per family is fitted later (sim/).
// Ethernet is RDMA over it (RoCE); EthernetTcp is NCCL's socket transport over kernel TCP; OmniPath is Intel's
// (Cornelis') fabric, destination-routed as InfiniBand is.
enum class LinkFamily { NvLink, InfinityFabric, Pcie, CpuInterconnect, Ethernet, EthernetTcp, InfiniBand, OmniPath, Custom };
std::string_view to_string(LinkFamily f);
std::optional<LinkFamily> parse_link_family(std::string_view name);
// Fabrics whose switches forward by destination (subnet-managed forwarding tables): InfiniBand and Omni-Path.
inline bool destination_routed(LinkFamily f) { return f == LinkFamily::InfiniBand || f == LinkFamily::OmniPath; }

// One link class. `bandwidth` is one direction, line rate, of ONE link of this class (one NVLink, one x16 slot,
// one NIC port); a GPU may have several (GpuSpec::link_count).
struct LinkSpec {
  std::string name;
  LinkFamily family = LinkFamily::Custom;
  BytesPerSecond bandwidth;     // per direction, line rate
  Seconds latency;              // per hop
  double efficiency = 1.0;      // fraction of line rate a collective library moves (0, 1]
  bool switch_reduction = false;   // an NVSwitch of this link class reduces in the switch (NVLink SHARP, NVLS)
  BytesPerSecond switch_port_rate{};   // ... at this rate per GPU port, each way (0: the collective tuning's)
  std::string source;
};

// One GPU model. Peaks are dense (no structured sparsity); a precision the chip lacks has no entry.
struct GpuSpec {
  std::string name;
  std::string vendor_name;
  std::string architecture;     // "ampere", "hopper", ...: whose kernel efficiencies apply (workloads/compute_model.hpp)
  Bytes memory;                 // capacity as the card exposes it (an "80GB" card has 80 GiB)
  Bytes memory_reserve;         // CUDA context + framework, subtracted before a fit verdict
  BytesPerSecond memory_bandwidth;
  std::array<std::optional<FlopsPerSecond>, kAllPrecisions.size()> peak{};
  Watts tdp;
  Watts idle_power;             // drawn with a CUDA context holding memory and no kernel running (what a rank
                                // waiting on the network or the pipeline draws)
  Dollars price;                // purchase price per GPU, for cost estimates
  Dollars price_per_hour;       // typical cloud rental per GPU-hour
  std::string cost_source;      // where price, rental rate and idle power come from, with dates
  std::string gpu_link;         // GPU-to-GPU link class ("nvlink3"), or the host link when it has none
  int gpu_link_count = 1;       // links of that class per GPU (A100: 12 NVLink3)
  std::string host_link;        // PCIe generation of its slot ("pcie4")
  std::string cpu_link;         // to its CPU's memory when not over host_link (Grace's "nvlink-c2c"); empty: host_link
  std::string scale_out_link;   // the NIC port its reference system gives each GPU (DGX H100: ConnectX-7, "ib-ndr"),
                                // cluster.inter_link's default; empty: kDefaultInterLink
  int sms = 0;                  // streaming multiprocessors (compute units): what an overlapped NCCL kernel's
                                // blocks take from compute, one SM each; 0 = unknown (no interference modelled)
  std::string source;

  [[nodiscard]] std::optional<FlopsPerSecond> peak_for(Precision p) const {
    return peak[static_cast<std::size_t>(p)];
  }
  // The roofline's ridge point in FLOP/byte: dense peak of `p` over memory bandwidth (0 without a peak for `p`).
  [[nodiscard]] double ridge_point(Precision p) const {
    const double bandwidth = memory_bandwidth.value();
    return bandwidth > 0 ? peak_for(p).value_or(FlopsPerSecond(0)).value() / bandwidth : 0.0;
  }
};

// The widest link dtsim accepts, per direction: far above any real link, and low enough that bisection
// arithmetic (integer kB/s in max-flow) cannot overflow.
inline constexpr BytesPerSecond kMaxLinkBandwidth = gigabytes_per_second(1e6);

// What a CPU socket's root complex sustains for GPU peer-to-peer traffic routed through it (catalog data, with
// its source in catalog_data.cpp); the PCIe box's default.
BytesPerSecond pcie_root_complex_throughput();

// A PCIe server's host CPU: how much GPU peer traffic crosses between its two sockets (`socket_link`, a catalog
// link of the cpu-interconnect family: the whole socket interconnect as that traffic sees it, per direction) and
// the PCIe generation of its root ports (`pcie`, a catalog link).
struct CpuSpec {
  std::string name;
  std::string vendor_name;
  std::string socket_link;
  std::string pcie;
  std::string source;
};

std::span<const GpuSpec> gpu_catalog();
std::span<const LinkSpec> link_catalog();
std::span<const CpuSpec> cpu_catalog();
// The CPU of a PCIe box that names none: the first catalog CPU whose root ports run `host_link` (the GPU's PCIe
// generation), i.e. the Xeon generation that brought it; the last one for a generation no CPU has.
const CpuSpec& default_cpu(std::string_view host_link);

// A part of a cluster's bill of materials (topology/bill_of_materials.hpp) besides the GPUs: servers (without
// GPUs and NICs), NICs, switches, cables and transceivers, each with a unit price and power and their source.
enum class PartKind { Gpu, Server, Nic, Switch, Cable, Transceiver };
std::string_view to_string(PartKind k);

struct PartSpec {
  std::string name;
  PartKind kind = PartKind::Server;
  std::vector<LinkFamily> families;   // link families it serves (NIC, switch, cable, transceiver)
  BytesPerSecond port_speed;          // line rate of one port, one direction (NIC, switch, cable, transceiver)
  int ports = 0;                      // switch: ports at port_speed (its radix)
  Dollars price;
  Watts power;                        // typical draw in service (switch: with passive cables; optics apart)
  std::string source;                 // with the date of the figures
};
std::span<const PartSpec> part_catalog();
// The part of `kind` for a link of `family` at `speed` (servers: by name); none when the catalog has none.
const PartSpec* find_part(PartKind kind, LinkFamily family, BytesPerSecond speed);
const PartSpec& find_part(std::string_view name);

// How a GPU's power follows what it does (results/energy.hpp), and the share of a server's power its GPUs take.
struct PowerModelSpec {
  double compute_bound = 0;    // fraction of TDP drawn by compute-bound (tensor-core) kernels
  double memory_bound = 0;     // fraction of TDP drawn by kernels bound by HBM bandwidth
  double gpu_share = 0;        // GPUs' share of a training server's power (the rest: CPUs, memory, fans, NICs)
  int nodes_per_rack = 0;      // 8-GPU servers per rack: links within a rack are copper, beyond it optics
  std::string source;
};
const PowerModelSpec& power_model();

// What the cost of running a cluster defaults to where a scenario's `cost` gives nothing.
struct SiteSpec {
  double kwh_usd = 0;   // electricity, $ per kWh
  double pue = 1;       // facility power / IT power
  double years = 4;     // service life the hardware's capital is spread over
  std::string source;
};
const SiteSpec& site_defaults();

// Look-ups by catalog name. Throw InputError naming `key` and listing the allowed names when unknown.
const GpuSpec& find_gpu(std::string_view name, std::string_view key = "cluster.gpu");
const LinkSpec& find_link(std::string_view name, std::string_view key = "cluster.intra_link");
// A GPU's link to host memory: its CPU's coherent link where it has one (Grace's NVLink-C2C), else its PCIe slot.
const LinkSpec& host_memory_link(const GpuSpec& gpu);
// The NIC port a cluster of `gpu` has when cluster.inter_link is not written: its reference system's
// (GpuSpec::scale_out_link), else kDefaultInterLink.
inline constexpr std::string_view kDefaultInterLink = "ib-hdr";
const LinkSpec& default_inter_link(const GpuSpec& gpu);
const CpuSpec& find_cpu(std::string_view name, std::string_view key = "cluster.pcie.cpu");
std::string gpu_names();   // "a100-sxm4-40gb, a100-sxm4-80gb, ..."
std::string link_names();
std::string cpu_names();
std::string link_family_names();   // "nvlink, infinity-fabric, ..."

// Checks a user-supplied entry (positive bandwidths, efficiency in (0,1], ...); throws InputError with `key`.
void validate(const GpuSpec& gpu, std::string_view key);
void validate(const LinkSpec& link, std::string_view key);

}  // namespace dtsim::topology
