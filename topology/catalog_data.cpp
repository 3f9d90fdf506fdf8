// The hardware catalog's data: one entry per link class, part, CPU, and the power and site defaults (the GPUs:
// catalog_gpus.cpp). With catalog_gpus.cpp the only files in dtsim that write a hardware figure as a literal.
// Every entry says where its figures come from; "hardware.md" is ../shared/calibration/hardware.md (vendor
// datasheets), "nccl.md" its NCCL companion.
//
// Conventions:
// - memory: what the card exposes; a "80GB" card has 80 GiB (nvidia-smi: 81,920 MiB on an A100 80GB).
// - memory_reserve: 1.5 GiB on every GPU (hardware.md: 1-2 GiB go to the CUDA context and the framework).
// - peaks: dense (no structured sparsity), TFLOP/s (TOPS for int8/int4). fp64 is the tensor-core rate where the
//   chip has one, fp32 the non-tensor rate; a precision the chip cannot run on its matrix units is absent.
// - prices: approximate 2024 public figures (street/list purchase price per GPU; typical on-demand cloud rate per
//   GPU-hour); good for orders of magnitude in cost comparisons, not for quotes.
// - link bandwidth: ONE link, ONE direction, line rate. efficiency: fraction of it NCCL moves on large messages.
// - sms: streaming multiprocessors (AMD: compute units), what an NCCL block occupies one of: NVIDIA's
//   whitepapers and spec tables (A100 108; H100 SXM5 132, PCIe 114: NVIDIA's H100 spec table as reprinted by
//   hpctech.co.jp; H200 and H100 NVL the SXM5's 132; B200 148; Ada L40S 142, L4 58, RTX 4090 128; Turing T4 40;
//   Volta V100 80), AMD's MI300X datasheet (304 CUs).
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "topology/catalog.hpp"

namespace dtsim::topology {
namespace {

using namespace dtsim::literals;

// Per-hop latencies follow NCCL's own tuning model (nccl.md: per-hop latency Ring LL, NVLink 0.6 us, PCI 1.0 us)
// where it has one; the others are stated assumptions.
// One protocol efficiency per link family. NVLink's is fitted on ONE row of nccl.md, 8x A100 SXM4 on NVSwitch,
// all-reduce of 8 GB at 230 GB/s busbw: 230 / 300 GB/s line rate = 0.7667 once the collective's latency is
// counted (0.7673 to three digits: 0.767). The other NVLink rows are checks, not fits: 8x H100 ring and
// non-reduction collectives come out at 345 GB/s against ~370 (-7 %), 8x H100 NVLS at 481 against ~480.
constexpr double kNvLinkEfficiency = 0.767;

// NCCL's socket transport over kernel TCP (the ethernet-tcp family), one model for every speed: a port moves
// its TCP framing's share of line rate (1448 B of payload per 1538 B on the wire at MTU 1500: 0.94), but no more
// than what the host's copies through the socket path sustain per NIC, 5 GB/s, fitted on NCCL over 100 Gb/s TCP
// (4-6 GB/s on 4 nodes x 8 V100, NVIDIA/nccl #450; about 4.7 GB/s on AWS p3dn, nccl #398). Checked: 0.96-0.98
// of a 32 Gb/s network with one GPU per node (nccl #209); with 8 GPUs per node there it measured 0.45-0.72, which
// this model does not reproduce. 10 us per hop for the host's socket path is an assumption (NCCL's own tuning
// gives the network no latency of its own).
constexpr double kTcpFraming = 1448.0 / 1538.0;

// The socket interconnect of a two-socket PCIe server as GPU peer traffic crosses it, per direction, for the
// whole interconnect (however many UPI or xGMI links it has). It is what the CPU's coherent fabric and memory
// forward for PCIe peer traffic (GPU writes, or NCCL's shared-memory staging through host memory where it uses no
// peer-to-peer across the root complex), far below the links' line rate. NCCL rates it per CPU
// (src/graph/topo.h at NVIDIA/nccl 5067397c, ncclTopoGetInterCpuBw) for its ring search, conservatively: 8x RTX
// 5090 on two Sapphire Rapids sockets reach 28 GB/s all-reduce busbw across them (nccl.md, NVIDIA/nccl #1639)
// where NCCL rates the link 22. One factor for every CPU, 28 / 22, fitted on that row, carries NCCL's figures to
// what a ring gets. Checked: the 4x A100 PCIe (Ice Lake) against 4x A100 SXM4 MLPerf pair and the 8x H100 PCIe
// (Genoa) against HGX pair (docs/validation.md); NCCL's own Turin measurement, 32.18 GB/s, is 21 % below 32 x
// 28 / 22 (one GPU pair's copy, not a ring).
constexpr double kSocketMeasuredOverNccl = 28.0 / 22.0;

LinkSpec socket_link(const char* name, double nccl_gbps, const char* what) {
  return {.name = name, .family = LinkFamily::CpuInterconnect,
          .bandwidth = gigabytes_per_second(nccl_gbps * kSocketMeasuredOverNccl), .latency = microseconds(1.0),
          .efficiency = 1.0, .switch_reduction = false,
          .source = fmt::format("NCCL src/graph/topo.h (NVIDIA/nccl 5067397c): {}; x 28/22 (a ring across two Sapphire "
                                "Rapids sockets measured 28 GB/s where NCCL rates 22: nccl.md, NVIDIA/nccl #1639); per "
                                "direction, the whole socket interconnect as GPU peer traffic crosses it; latency as "
                                "upi (assumption)", what)};
}
constexpr double kTcpHostCeilingGBps = 5.0;

LinkSpec tcp_link(const char* name, double gbps) {
  const double line = gbps / 8.0;   // GB/s
  return {.name = name, .family = LinkFamily::EthernetTcp, .bandwidth = gigabits_per_second(gbps),
          .latency = microseconds(10.0), .efficiency = std::min(kTcpFraming, kTcpHostCeilingGBps / line),
          .switch_reduction = false,
          .source = "NCCL's socket transport (kernel TCP, staged in host memory): TCP framing 0.94 of line rate, at "
                    "most 5 GB/s per NIC (fitted on NVIDIA/nccl #450 at 100 Gb/s); latency 10 us per hop assumed"};
}

std::vector<LinkSpec> make_links() {
  return {
      {.name = "nvlink2", .family = LinkFamily::NvLink, .bandwidth = gigabytes_per_second(25),
       .latency = microseconds(0.6), .efficiency = kNvLinkEfficiency,
       .source = "NVIDIA V100 datasheet: 6 links, 300 GB/s total = 25 GB/s per link per direction; latency and "
                 "efficiency as nvlink3 (assumption)"},
      {.name = "nvlink3", .family = LinkFamily::NvLink, .bandwidth = gigabytes_per_second(25),
       .latency = microseconds(0.6), .efficiency = kNvLinkEfficiency,
       .source = "hardware.md: A100 12 links, 300 GB/s each way; efficiency fitted on nccl.md's 8x A100 NVSwitch "
                 "all-reduce row (230 GB/s busbw at 8 GB); latency: NCCL tuning model, NVLink ring LL per hop"},
      {.name = "nvlink4", .family = LinkFamily::NvLink, .bandwidth = gigabytes_per_second(25),
       .latency = microseconds(0.6), .efficiency = kNvLinkEfficiency, .switch_reduction = true,
       .switch_port_rate = gigabytes_per_second(310),
       .source = "hardware.md: H100/H200 18 links, 450 GB/s each way; efficiency of the NVLink family (fitted on "
                 "the A100 row; checked here: 345 against nccl.md's ~370 GB/s); latency: NCCL tuning model, NVLink ring LL per hop; "
                 "third-generation NVSwitch reduces in the switch (NVLink SHARP, nccl.md's NVLS row) at 310 GB/s a port "
                 "(the collective tuning's nvls_port_rate, fitted there on 8x H100)"},
      {.name = "nvlink-bridge", .family = LinkFamily::NvLink, .bandwidth = gigabytes_per_second(25),
       .latency = microseconds(0.6), .efficiency = kNvLinkEfficiency,
       .source = "NVIDIA A100 PCIe datasheet: NVLink bridge for 2 GPUs, 600 GB/s bidirectional over 12 links = 25 "
                 "GB/s per link per direction; H100 PCIe bridge 600 GB/s (hardware.md, unverified); latency and "
                 "efficiency as nvlink3 (assumption)"},
      {.name = "infinity-fabric", .family = LinkFamily::InfinityFabric, .bandwidth = gigabytes_per_second(64),
       .latency = microseconds(0.6), .efficiency = 0.8,
       .source = "hardware.md: MI300X 7 links x 128 GB/s bidirectional = 64 GB/s per link per direction; latency "
                 "and efficiency assumed equal to NVLink (no public RCCL fit yet)"},
      {.name = "pcie3", .family = LinkFamily::Pcie, .bandwidth = gigabytes_per_second(15.75),
       .latency = microseconds(1.0), .efficiency = 0.8,
       .source = "hardware.md: PCIe Gen3 x16 15.75 GB/s per direction; efficiency as pcie4 (one per family); "
                 "latency: NCCL tuning model, PCI ring LL per hop"},
      {.name = "pcie4", .family = LinkFamily::Pcie, .bandwidth = gigabytes_per_second(31.5),
       .latency = microseconds(1.0), .efficiency = 0.8,
       .source = "hardware.md: PCIe Gen4 x16 31.5 GB/s per direction; efficiency 0.8 fitted on the A100's "
                 "measured ~25 GB/s (hardware.md); latency: NCCL tuning model, PCI ring LL per hop"},
      {.name = "pcie5", .family = LinkFamily::Pcie, .bandwidth = gigabytes_per_second(63),
       .latency = microseconds(1.0), .efficiency = 0.8,
       .source = "hardware.md: PCIe Gen5 x16 63 GB/s per direction; efficiency as pcie4 (one per family); "
                 "latency: NCCL tuning model, PCI ring LL per hop"},
      {.name = "pcie6", .family = LinkFamily::Pcie, .bandwidth = gigabytes_per_second(126),
       .latency = microseconds(1.0), .efficiency = 0.8,
       .source = "PCIe Gen6 x16: 64 GT/s x 16 lanes, twice Gen5's 63 GB/s per direction (PCI-SIG); efficiency and "
                 "latency as pcie5 (one per family)"},
      {.name = "nvlink-c2c", .family = LinkFamily::NvLink, .bandwidth = gigabytes_per_second(450),
       .latency = microseconds(0.6), .efficiency = kNvLinkEfficiency,
       .source = "NVIDIA Grace Blackwell: NVLink-C2C 900 GB/s bidirectional between the Grace CPU and each of its "
                 "GPUs (GB200 NVL72 specifications), 450 per direction; efficiency and latency of the NVLink family"},
      {.name = "upi", .family = LinkFamily::CpuInterconnect, .bandwidth = gigabytes_per_second(20.8),
       .latency = microseconds(1.0), .efficiency = 0.7,
       .source = "hardware.md: Intel UPI about 20 GB/s per direction per link (10.4 GT/s x 2 B = 20.8); latency "
                 "1 us and efficiency 0.7 (coherence protocol overhead) are assumptions, not fitted"},
      {.name = "eth-100g", .family = LinkFamily::Ethernet, .bandwidth = gigabits_per_second(100),
       .latency = microseconds(2.0), .efficiency = 0.875,
       .source = "hardware.md: 100 Gb/s = 12.5 GB/s line rate; efficiency 0.875, the middle of RoCE's 85-90 % in "
                 "NCCL (hardware.md); latency 2 us per hop (NIC + switch, RoCE) is an assumption"},
      {.name = "eth-200g", .family = LinkFamily::Ethernet, .bandwidth = gigabits_per_second(200),
       .latency = microseconds(2.0), .efficiency = 0.875,
       .source = "hardware.md: 200 Gb/s = 25 GB/s line rate; efficiency 0.875 (RoCE 85-90 %, hardware.md); "
                 "latency 2 us per hop is an assumption"},
      {.name = "eth-400g", .family = LinkFamily::Ethernet, .bandwidth = gigabits_per_second(400),
       .latency = microseconds(2.0), .efficiency = 0.875,
       .source = "hardware.md: 400 Gb/s = 50 GB/s line rate; efficiency 0.875 (RoCE 85-90 %, hardware.md); "
                 "latency 2 us per hop is an assumption"},
      {.name = "ib-hdr", .family = LinkFamily::InfiniBand, .bandwidth = gigabits_per_second(200),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "hardware.md: InfiniBand HDR 4x port 200 Gb/s = 25 GB/s; efficiency 0.94 (hardware.md; nccl.md: "
                 "about 24 GB/s per NIC); latency 1 us per hop (NIC + switch) is an assumption"},
      {.name = "ib-ndr", .family = LinkFamily::InfiniBand, .bandwidth = gigabits_per_second(400),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "hardware.md: InfiniBand NDR 4x port 400 Gb/s = 50 GB/s; efficiency 0.94 (nccl.md: 46-49 of 50 "
                 "GB/s per NIC); latency 1 us per hop (NIC + switch) is an assumption"},
      {.name = "nvlink5", .family = LinkFamily::NvLink, .bandwidth = gigabytes_per_second(50),
       .latency = microseconds(0.6), .efficiency = kNvLinkEfficiency, .switch_reduction = true,
       .switch_port_rate = gigabytes_per_second(479),
       .source = "NVIDIA HGX B200 table: NVLink 5, 1.8 TB/s bidirectional over 18 links = 50 GB/s per link per "
                 "direction; efficiency of the NVLink family (NCCL's own Blackwell figure, 40.1 of 50 GB/s per link, "
                 "src/graph/tuning.cc, is 0.80); latency as nvlink3; fifth-generation NVSwitch reduces in the switch at "
                 "479 GB/s a port, fitted on a GB200 NVL72's 72-GPU NVLS all-reduce, 839 GB/s busbw at 4 GiB "
                 "(coreweave/nccl-tests README at cb865533, NCCL 2.26.2): algbw 839 x 72/142 = 425.5 = rate x 8/9 "
                 "(nvls_all_reduce's pipelining); checked on a 4-GPU GB200 ring, 679.6 GB/s busbw at 8 GB "
                 "(Azure/AI-benchmarking-guide ND GB200 v6): 689 here, +1.4 %"},
      {.name = "ib-xdr", .family = LinkFamily::InfiniBand, .bandwidth = gigabits_per_second(800),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "InfiniBand XDR 800 Gb/s = 100 GB/s a port (NVIDIA Quantum-X800, ConnectX-8 SuperNIC at 800 Gb/s line "
                 "rate: DOCA 2.9.0 ConnectX-8 notes); the InfiniBand family's efficiency and latency (ib-hdr)"},
      {.name = "ib-qdr", .family = LinkFamily::InfiniBand, .bandwidth = gigabits_per_second(32),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "InfiniBand QDR 4x: 40 Gb/s signalling, 8b/10b, 32 Gb/s of data; the InfiniBand family's efficiency "
                 "and latency (ib-hdr; no NCCL measurement of QDR found)"},
      {.name = "ib-fdr", .family = LinkFamily::InfiniBand, .bandwidth = gigabits_per_second(54.5),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "InfiniBand FDR 4x: 4 x 14.0625 Gb/s, 64b/66b, 54.5 Gb/s of data; the InfiniBand family's "
                 "efficiency and latency (ib-hdr; no NCCL measurement of FDR found)"},
      {.name = "ib-edr", .family = LinkFamily::InfiniBand, .bandwidth = gigabits_per_second(100),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "InfiniBand EDR 4x 100 Gb/s = 12.5 GB/s; the InfiniBand family's efficiency (checked: NCCL's "
                 "maintainer gives 12 GB/s per 100G NIC, NVIDIA/nccl-tests #119, and 12.2 GB/s on 4 servers with "
                 "one EDR NIC each, nccl-tests #29: 0.96-0.98); latency as ib-hdr"},
      {.name = "opa-100", .family = LinkFamily::OmniPath, .bandwidth = gigabits_per_second(100),
       .latency = microseconds(1.0), .efficiency = 0.94,
       .source = "Omni-Path 100: 4 x 25.78125 Gb/s, 64b/66b; NCCL has no Omni-Path transport of its own and reaches it "
                 "through its InfiniBand verbs transport on the hfi1 device (NVIDIA/nccl #333's log) or the PSM2 "
                 "provider of its libfabric plugin; PSM2 moves 12.1-12.4 of its 12.5 GB/s (osu_put_bw, "
                 "openucx/ucx #3196), so the InfiniBand family's 0.94 (verbs alone peak at 6.6 GB/s there, which the "
                 "MLPerf v3.0 1 -> 2 NIC pair rules out: it would put that pair 15-20 % high); latency as ib-hdr"},
      {.name = "eth-10g", .family = LinkFamily::Ethernet, .bandwidth = gigabits_per_second(10),
       .latency = microseconds(2.0), .efficiency = 0.875,
       .source = "10 GbE RoCE: efficiency and latency of the RoCE entries (eth-100g)"},
      {.name = "eth-25g", .family = LinkFamily::Ethernet, .bandwidth = gigabits_per_second(25),
       .latency = microseconds(2.0), .efficiency = 0.875,
       .source = "25 GbE RoCE: efficiency and latency of the RoCE entries (eth-100g)"},
      {.name = "eth-40g", .family = LinkFamily::Ethernet, .bandwidth = gigabits_per_second(40),
       .latency = microseconds(2.0), .efficiency = 0.875,
       .source = "40 GbE RoCE: efficiency and latency of the RoCE entries (eth-100g)"},
      tcp_link("eth-10g-tcp", 10), tcp_link("eth-25g-tcp", 25), tcp_link("eth-40g-tcp", 40),
      tcp_link("eth-100g-tcp", 100),
      socket_link("socket-skylake", 10.0, "SKL_QPI_BW 10: Intel Skylake-SP, Cascade Lake and Ice Lake-SP (NCCL classes "
                                          "every CPUID model from 0x55 below 0x8F as Skylake)"),
      socket_link("socket-sapphire-rapids", 22.0, "SRP_QPI_BW 22: Intel Sapphire Rapids (CPUID model 0x8F)"),
      socket_link("socket-emerald-rapids", 40.0, "ERP_QPI_BW 40: Intel Emerald Rapids (CPUID model 0xCF)"),
      socket_link("socket-zen2", 16.0, "AMD_BW 16: every AMD EPYC in NCCL's releases, Zen 2 (Rome) in its dev branch"),
      socket_link("socket-zen3", 24.0, "24 for Zen 3 and 4 (Milan, Genoa) in NCCL's dev branch, commit 2f1c174c "
                                       "('a conservative estimate')"),
      socket_link("socket-zen5", 32.0, "32 for Zen 5 (Turin) in NCCL's dev branch, commit 2f1c174c, from measured "
                                       "cross-socket GPU P2P of 32.18 GB/s on dual EPYC 9575F"),
  };
}

// Bill-of-materials parts (topology/bill_of_materials.hpp). Switch power is typical with passive cables; optics
// count apart, one transceiver per optical link end at the link's speed (a switch's twin-port 800G module serving
// two 400G links counts as two). Prices are list or street prices as dated; many are recalled rather than read
// (said so): orders of magnitude for comparing clusters, not quotes. Servers are priced without their GPUs and
// NICs (the bill lists those apart); their power is counted from the GPUs' share (power_model()).
std::vector<PartSpec> make_parts() {
  const std::vector<LinkFamily> ib = {LinkFamily::InfiniBand};
  const std::vector<LinkFamily> eth = {LinkFamily::Ethernet, LinkFamily::EthernetTcp};
  const std::vector<LinkFamily> any_net = {LinkFamily::InfiniBand, LinkFamily::Ethernet, LinkFamily::EthernetTcp,
                                           LinkFamily::OmniPath};
  const std::vector<LinkFamily> vpi = {LinkFamily::InfiniBand, LinkFamily::Ethernet, LinkFamily::EthernetTcp};
  const auto part = [](const char* name, PartKind kind, std::vector<LinkFamily> families, double gbps, int ports,
                       double usd, double watts, const char* source) {
    return PartSpec{name, kind, std::move(families), gigabits_per_second(gbps), ports, Dollars(usd), Watts(watts), source};
  };
  return {
      part("hgx-8gpu-server", PartKind::Server, {}, 0, 0, 55000, 0,
           "an 8-GPU baseboard server (NVSwitch or OAM mesh, two CPUs, 2 TB DRAM) without GPUs and NICs: an HGX H100 "
           "node with 8 NDR NICs quoted 310-317 k USD (public cluster-cost sheet, 2024-08) less 8 GPUs at 30 k and 8 "
           "NICs at 2 k (derived)"),
      part("nvl-compute-tray", PartKind::Server, {}, 0, 0, 60000, 0,
           "a GB200/GB300 NVL72 compute tray (two Grace CPUs with their LPDDR5X, four GPU sockets, liquid cooling) "
           "and its share of the rack (power shelves, manifolds, the NVLink cable cartridge): 60 k USD, an unsourced "
           "estimate (public quotes of a whole NVL72 rack, 3-4 M USD, 2025, do not split it from the GPUs)"),
      part("nvlink-switch-tray", PartKind::Switch, {}, 0, 144, 40000, 1500,
           "an NVL72 NVLink Switch tray: two fifth-generation NVLink switch chips, 7.2 TB/s; 144 NVLink 5 ports (72 "
           "GPUs x 18 links over 9 trays: NVIDIA Mission Control's 9 trays a rack; two chips a tray, third-party "
           "teardowns); about 40 k USD and 1.5 kW (recalled, unverified, 2025)"),
      part("pcie-gpu-server", PartKind::Server, {}, 0, 0, 20000, 0,
           "a dual-socket 4U PCIe GPU server without GPUs and NICs, 15-25 k USD (recalled, unverified, 2024)"),
      part("quantum-2-qm9700", PartKind::Switch, ib, 400, 64, 43000, 747,
           "NVIDIA Quantum-2 QM9700: 64 NDR ports on 32 twin-port OSFP cages, 747 W typical with passive cables "
           "(QM97x0 hardware manual); 36 k USD (FS.com variant) to about 50 k (NVIDIA), midpoint (public cluster-cost "
           "sheet, 2024-08)"),
      part("quantum-qm8700", PartKind::Switch, ib, 200, 40, 21000, 250,
           "NVIDIA Quantum QM8700: 40 HDR ports (QSFP56); about 250 W typical and 21 k USD (recalled, unverified, 2021)"),
      part("switch-ib-2-sb7800", PartKind::Switch, ib, 100, 36, 12000, 136,
           "NVIDIA (Mellanox) Switch-IB 2 SB7800: 36 EDR ports; 136 W typical and 12 k USD (recalled, unverified, 2019)"),
      part("spectrum-4-sn5600", PartKind::Switch, eth, 400, 128, 50000, 940,
           "NVIDIA Spectrum-4 SN5600: 64 x 800GbE OSFP split to 128 x 400GbE, 51.2 Tb/s, 940 W typical (SN5000 "
           "hardware manual); about 50 k USD (recalled, unverified, 2024)"),
      part("spectrum-3-sn4600", PartKind::Switch, eth, 200, 64, 30000, 600,
           "NVIDIA Spectrum-3 SN4600: 64 x 200GbE, 600 W typical (SN4000 hardware manual); about 30 k USD (recalled, "
           "unverified, 2022)"),
      part("spectrum-3-sn4600c", PartKind::Switch, eth, 100, 64, 20000, 466,
           "NVIDIA Spectrum-3 SN4600C: 64 x 100GbE, 466 W typical (SN4000 hardware manual); about 20 k USD (recalled, "
           "unverified, 2022)"),
      part("quantum-x800-q3400", PartKind::Switch, ib, 800, 144, 120000, 3000,
           "NVIDIA Quantum-X800 Q3400: 144 XDR ports of 800 Gb/s (NVIDIA Quantum-X800 product brief); about 120 k USD "
           "and 3 kW (recalled, unverified, 2025)"),
      part("connectx-8-800g", PartKind::Nic, vpi, 800, 1, 3000, 35,
           "NVIDIA ConnectX-8 SuperNIC, one 800 Gb/s port (XDR or 800GbE), PCIe Gen6: about 3 k USD and 30-40 W "
           "(recalled, unverified, 2025)"),
      part("optic-800g", PartKind::Transceiver, any_net, 800, 1, 1500, 16,
           "800G OSFP twin-port SR8/DR8 module: about 16 W and 1.2-2 k USD (recalled, unverified, 2025)"),
      part("dac-800g", PartKind::Cable, any_net, 800, 1, 500, 0.2,
           "800G passive copper (OSFP DAC, within a rack): about 0.5 k USD (recalled, unverified, 2025)"),
      part("connectx-7-400g", PartKind::Nic, vpi, 400, 1, 2000, 25,
           "NVIDIA ConnectX-7 single-port OSFP (NDR or 400GbE): 1.5-2.5 k USD list and 20-25 W (recalled, "
           "unverified, 2024)"),
      part("connectx-6-200g", PartKind::Nic, vpi, 200, 1, 1500, 20,
           "NVIDIA ConnectX-6 single-port HDR or 200GbE: about 1.5 k USD and 15-20 W (recalled, unverified, 2021)"),
      part("connectx-6-100g", PartKind::Nic, vpi, 100, 1, 900, 15,
           "NVIDIA ConnectX-6 100 Gb/s (EDR or 100GbE): about 0.9 k USD and 15 W (recalled, unverified, 2021)"),
      part("connectx-5-25g", PartKind::Nic, eth, 25, 1, 300, 13,
           "NVIDIA ConnectX-5 25GbE: 12.95 W typical (OCP card user manual); about 0.3 k USD (recalled, 2020)"),
      part("optic-400g", PartKind::Transceiver, any_net, 400, 1, 1000, 8,
           "400G OSFP/QSFP112 SR4 multimode module: 8 W typical (NVIDIA MMA4Z00-NS400 spec); 0.7-1.2 k USD list "
           "(recalled, unverified, 2024)"),
      part("optic-200g", PartKind::Transceiver, any_net, 200, 1, 600, 5,
           "200G QSFP56 SR4 module: 5 W (NVIDIA's 400G module in 200G mode, 5 W typical); about 0.6 k USD (recalled, "
           "unverified, 2022)"),
      part("optic-100g", PartKind::Transceiver, any_net, 100, 1, 300, 3.5,
           "100G QSFP28 SR4 module: about 3.5 W and 0.3 k USD (recalled, unverified, 2022)"),
      part("optic-25g", PartKind::Transceiver, any_net, 25, 1, 50, 1,
           "25G SFP28 SR module: about 1 W and 50 USD (recalled, unverified, 2022)"),
      part("dac-400g", PartKind::Cable, any_net, 400, 1, 300, 0.2,
           "400G passive copper (DAC, at most 2-3 m: within a rack): 0.1 W an end (NVIDIA MCP4Y10 spec); 0.2-0.5 k "
           "USD (recalled, unverified, 2024)"),
      part("dac-200g", PartKind::Cable, any_net, 200, 1, 200, 0.2,
           "200G passive copper (HDR QSFP56 DAC): 0.1 W an end (NVIDIA MCP1650 spec); about 0.2 k USD (recalled, 2022)"),
      part("dac-100g", PartKind::Cable, any_net, 100, 1, 100, 0.2,
           "100G passive copper (QSFP28 DAC): about 0.1 k USD (recalled, 2022)"),
      part("dac-25g", PartKind::Cable, any_net, 25, 1, 40, 0.2,
           "25G passive copper (SFP28 DAC): about 40 USD (recalled, 2022)"),
      part("fiber-patch", PartKind::Cable, {}, 0, 1, 100, 0,
           "a multimode MPO fibre patch cord between two optical modules, any speed: about 0.1 k USD (recalled, 2024)"),
  };
}

// A PCIe box's CPUs, in the order default_cpu searches them (the first of each PCIe generation is the Xeon that
// brought it to servers).
std::vector<CpuSpec> make_cpus() {
  const auto cpu = [](const char* name, const char* vendor, const char* socket, const char* pcie) {
    return CpuSpec{name, vendor, socket, pcie,
                   "socket link: NCCL's inter-CPU bandwidth for this CPU (src/graph/topo.h); root ports: the CPU's "
                   "PCIe generation (vendor product pages)"};
  };
  return {
      cpu("skylake", "Intel Xeon Scalable 1st/2nd gen (Skylake-SP, Cascade Lake)", "socket-skylake", "pcie3"),
      cpu("icelake", "Intel Xeon Scalable 3rd gen (Ice Lake-SP)", "socket-skylake", "pcie4"),
      cpu("sapphire-rapids", "Intel Xeon Scalable 4th gen (Sapphire Rapids)", "socket-sapphire-rapids", "pcie5"),
      cpu("emerald-rapids", "Intel Xeon Scalable 5th gen (Emerald Rapids)", "socket-emerald-rapids", "pcie5"),
      cpu("rome", "AMD EPYC 7002 (Rome, Zen 2)", "socket-zen2", "pcie4"),
      cpu("milan", "AMD EPYC 7003 (Milan, Zen 3)", "socket-zen3", "pcie4"),
      cpu("genoa", "AMD EPYC 9004 (Genoa, Zen 4)", "socket-zen3", "pcie5"),
      cpu("turin", "AMD EPYC 9005 (Turin, Zen 5)", "socket-zen5", "pcie5"),
  };
}

}  // namespace

// nccl.md: 8x RTX 5090 on PCIe 5.0 without NVLink reach 28 GB/s all-reduce busbw, "bounded by CPU/memory on PCIe
// systems" (hardware.md: traffic that crosses the root complex is limited by what the CPU and memory deliver).
// In the PCIe box a ring over 8 GPUs sends three of its flows through each socket's root complex, so 3 x 28 =
// 84 GB/s; fitted on that row. Check: 4 GPUs on one socket (two flows through it) give 42 GB/s against the
// 35 GB/s reported (+20 %); PCIe 4.0 rings (3 x 25 GB/s) stay under the limit.
BytesPerSecond pcie_root_complex_throughput() { return gigabytes_per_second(84); }

std::span<const LinkSpec> link_catalog() {
  static const std::vector<LinkSpec> links = make_links();
  return links;
}

std::span<const PartSpec> part_catalog() {
  static const std::vector<PartSpec> parts = make_parts();
  return parts;
}

// Compute-bound kernels: busy GPUs read 79-102 % of their power cap in public nvidia-smi snapshots at 99-100 %
// utilisation (A100 SXM4 358/400 W, H200 607/700, H100 PCIe 276/350, A100 PCIe 307/300; 2023-2025), mean 0.89.
// Memory-bound kernels: LLM decode, which saturates HBM, draws 137-300 W on a 700 W H200 (Ma et al., "The
// Illusion of Power Capping in LLM Decode", arXiv 2605.11999, 2026-05), midpoint 0.31 of TDP. GPUs draw about 70 %
// of a server's power while training (ML.ENERGY, Zeus research overview); checked against an 8x H100 HGX node,
// whose most in training was 8.4 kW (Latif et al., arXiv 2412.08602, 2025): 8 x 0.89 x 700 W / 0.7 = 7.1 kW.
// Racks: 4 DGX-class servers to a rack (DGX SuperPOD H100: 32 DGX in 8 racks).
const PowerModelSpec& power_model() {
  static const PowerModelSpec model{0.89, 0.31, 0.70, 4,
                                    "compute-bound 0.89 and memory-bound 0.31 of TDP, GPUs 70 % of a server's power "
                                    "(catalog_data.cpp: nvidia-smi snapshots 2023-2025; Ma et al. 2026; ML.ENERGY "
                                    "Zeus); 4 servers a rack (DGX SuperPOD H100)"};
  return model;
}

// Electricity: the US industrial average, 8.06 cents/kWh in 2023 (EIA via Statista, 2024-03-18). PUE: the
// industry average of Uptime Institute's 2023 survey, 1.58 (Uptime Intelligence Update 221, 2023-11-23); Google's
// fleet ran at 1.10 that year (Google 2024 Environmental Report). Service life: 4 years (assumption: the straight-
// line depreciation of GPU servers, against 5-6 years hyperscalers book for servers).
const SiteSpec& site_defaults() {
  static const SiteSpec site{0.0806, 1.58, 4.0,
                             "electricity 0.0806 USD/kWh (EIA, US industrial 2023); PUE 1.58 (Uptime Institute 2023 "
                             "industry average); 4-year life (assumption)"};
  return site;
}

std::span<const CpuSpec> cpu_catalog() {
  static const std::vector<CpuSpec> cpus = make_cpus();
  return cpus;
}

}  // namespace dtsim::topology
