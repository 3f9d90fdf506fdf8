// The hardware catalog's data: one entry per GPU and per link class. The only file in dtsim that writes a
// hardware figure as a literal. Every entry says where its figures come from; "hardware.md" is
// ../shared/calibration/hardware.md (vendor datasheets), "nccl.md" its NCCL companion.
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

// Dense peaks in TFLOP/s (TOPS for integers), by precision; an absent member is a precision the chip lacks.
struct PeakTflops {
  std::optional<double> fp64, fp32, tf32, bf16, fp16, fp8, int8, int4;
};

std::array<std::optional<FlopsPerSecond>, kAllPrecisions.size()> tflops(const PeakTflops& t) {
  const auto to_rate = [](std::optional<double> v) -> std::optional<FlopsPerSecond> {
    if (!v) return std::nullopt;
    return teraflops(*v);
  };
  return {to_rate(t.fp64), to_rate(t.fp32), to_rate(t.tf32), to_rate(t.bf16),
          to_rate(t.fp16), to_rate(t.fp8),  to_rate(t.int8), to_rate(t.int4)};
}

const Bytes kReserve = gibibytes(1.5);  // hardware.md: 1-2 GiB to CUDA context and framework

std::vector<GpuSpec> make_gpus() {
  return {
      {.name = "a100-sxm4-40gb", .vendor_name = "NVIDIA A100-SXM4-40GB", .architecture = "ampere",
       .memory = gibibytes(40), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1555),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248}),
       .tdp = Watts(400), .idle_power = Watts(54), .price = Dollars(10000), .price_per_hour = Dollars(1.3),
       .cost_source = "purchase approximate (2023 street); rental: AWS p4d capacity blocks 1.84 per A100 40GB (2024), less; idle 52-54 W with no process (a public nvidia-smi snapshot, UCLA GPU table 2025-07)",
       .gpu_link = "nvlink3", .gpu_link_count = 12, .host_link = "pcie4", .sms = 108,
       .source = "hardware.md row 'A100 SXM4 40GB'; fp64 tensor 19.5 and int4 1248 from the NVIDIA A100 "
                 "datasheet; prices approximate"},
      {.name = "a100-sxm4-80gb", .vendor_name = "NVIDIA A100-SXM4-80GB", .architecture = "ampere",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(2039),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248}),
       .tdp = Watts(400), .idle_power = Watts(64), .price = Dollars(15000), .price_per_hour = Dollars(1.8),
       .cost_source = "purchase approximate (2023 street); rental 1.8 USD/GPU-h: AWS p4d capacity blocks 1.84 per A100 (2024), neocloud A100 80GB 1.49-2.49 (2026); idle 60-67 W with a 3.5 GB context held (public nvidia-smi logs, 2021-2024)",
       .gpu_link = "nvlink3", .gpu_link_count = 12, .host_link = "pcie4", .sms = 108,
       .source = "hardware.md row 'A100 SXM4 80GB' (nvidia-smi 81,920 MiB); fp64/tf32/fp32/int4 from the NVIDIA "
                 "A100 datasheet; prices approximate"},
      {.name = "a100-pcie-80gb", .vendor_name = "NVIDIA A100 80GB PCIe", .architecture = "ampere",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1935),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248}),
       .tdp = Watts(300), .idle_power = Watts(47), .price = Dollars(14000), .price_per_hour = Dollars(1.6),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 40-54 W with no process (public nvidia-smi logs, 2021-2024)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .sms = 108,
       .source = "hardware.md row 'A100 PCIe 80GB'; fp64/tf32/fp32/int4 from the NVIDIA A100 datasheet; an "
                 "optional NVLink bridge pairs two cards (link nvlink-bridge); prices approximate"},
      {.name = "h100-sxm5-80gb", .vendor_name = "NVIDIA H100 80GB HBM3", .architecture = "hopper",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(3350),
       .peak = tflops({.fp64 = 67, .fp32 = 67, .tf32 = 494, .bf16 = 989, .fp16 = 989, .fp8 = 1979,
                       .int8 = 1979, .int4 = std::nullopt}),
       .tdp = Watts(700), .idle_power = Watts(140), .price = Dollars(30000), .price_per_hour = Dollars(3.0),
       .cost_source = "purchase 25-30 k USD (Raymond James via press, 2023-08); rental 3.0 USD/GPU-h: neocloud on-demand H100 SXM 2.99 (2024-10), AWS capacity blocks 4.92 (2024); idle 138-145 W with 72 GB held (wilicc/gpu-burn #114, 2024-10), 69-72 W empty",
       .gpu_link = "nvlink4", .gpu_link_count = 18, .host_link = "pcie5", .sms = 132,
       .source = "hardware.md row 'H100 SXM5 80GB' (nvidia-smi shows 81,559 MiB; 80 GiB by convention); fp64 "
                 "tensor 67 from the NVIDIA H100 datasheet; Hopper has no int4 tensor path; prices approximate"},
      {.name = "h100-pcie-80gb", .vendor_name = "NVIDIA H100 PCIe", .architecture = "hopper",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(2000),
       .peak = tflops({.fp64 = 51, .fp32 = 51, .tf32 = 378, .bf16 = 756, .fp16 = 756, .fp8 = 1513,
                       .int8 = 1513, .int4 = std::nullopt}),
       .tdp = Watts(350), .idle_power = Watts(80), .price = Dollars(25000), .price_per_hour = Dollars(2.5),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 73-87 W with a context held (public nvidia-smi logs, 2023-2024)",
       .gpu_link = "pcie5", .gpu_link_count = 1, .host_link = "pcie5", .sms = 114,
       .source = "hardware.md row 'H100 PCIe 80GB' (bf16 756, fp8 1513 marked unverified there; they are half "
                 "the sparse figures of the NVIDIA H100 datasheet, which also gives fp64 tensor 51, fp32 51, "
                 "tf32 378 dense, int8 1513 dense); prices approximate"},
      {.name = "h200-sxm-141gb", .vendor_name = "NVIDIA H200", .architecture = "hopper",
       .memory = 143771_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(4800),
       .peak = tflops({.fp64 = 67, .fp32 = 67, .tf32 = 494, .bf16 = 989, .fp16 = 989, .fp8 = 1979,
                       .int8 = 1979, .int4 = std::nullopt}),
       .tdp = Watts(700), .idle_power = Watts(122), .price = Dollars(35000), .price_per_hour = Dollars(3.8),
       .cost_source = "purchase approximate (2024); rental 3.8 USD/GPU-h: AWS p5e capacity blocks 5.41 (2024), neoclouds lower; idle 122 W with a context held, 73-76 W empty (public nvidia-smi logs, 2024-2025)",
       .gpu_link = "nvlink4", .gpu_link_count = 18, .host_link = "pcie5", .sms = 132,
       .source = "hardware.md row 'H200 SXM 141GB'; memory is what nvidia-smi shows (143,771 MiB, not 141 GiB); "
                 "fp64/fp32/tf32 as H100 SXM (same GH100 die, NVIDIA H200 datasheet); prices approximate"},
      {.name = "mi300x", .vendor_name = "AMD Instinct MI300X", .architecture = "cdna3",
       .memory = gibibytes(192), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(5300),
       .peak = tflops({.fp64 = 163.4, .fp32 = 163.4, .tf32 = 653.7, .bf16 = 1307.4, .fp16 = 1307.4,
                       .fp8 = 2614.9, .int8 = 2614.9, .int4 = std::nullopt}),
       .tdp = Watts(750), .idle_power = Watts(150), .price = Dollars(15000), .price_per_hour = Dollars(2.5),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP, the ratio of H100 SXM (140/700) and B200 (190/1000) with a context held (assumption)",
       .gpu_link = "infinity-fabric", .gpu_link_count = 7, .host_link = "pcie5", .sms = 304,
       .source = "hardware.md row 'MI300X' (bf16 1,307 and fp8 2,615 marked unverified there; the AMD Instinct "
                 "MI300X datasheet gives 1307.4 / 2614.9 dense, fp64 matrix 163.4, fp32 163.4, tf32 653.7, int8 "
                 "2614.9); 192 GB = 8 HBM3 stacks of 24 GiB; prices approximate"},
      {.name = "rtx4090", .vendor_name = "NVIDIA GeForce RTX 4090", .architecture = "ada",
       .memory = gibibytes(24), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1008),
       .peak = tflops({.fp64 = 1.29, .fp32 = 82.6, .tf32 = 82.6, .bf16 = 165.2, .fp16 = 165.2, .fp8 = 330.3,
                       .int8 = 660.6, .int4 = 1321.2}),
       .tdp = Watts(450), .idle_power = Watts(90), .price = Dollars(1600), .price_per_hour = Dollars(0.4),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP as for the data-centre parts (assumption)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .sms = 128,
       .source = "hardware.md row 'RTX 4090' (bf16/fp16 with FP32 accumulate, as training runs; fp8 330 and int8 "
                 "661 marked unverified there); NVIDIA Ada Lovelace whitepaper: fp32 82.6, tf32 82.6, fp8 330.3 "
                 "(FP32 accumulate), int8 660.6, int4 1321.2, fp64 1/64 of fp32; no NVLink; prices approximate "
                 "(MSRP 1,599 USD)"},
      {.name = "t4", .vendor_name = "Tesla T4", .architecture = "turing",
       .memory = 15360_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(320),
       .peak = tflops({.fp64 = 0.25, .fp32 = 8.1, .tf32 = std::nullopt, .bf16 = std::nullopt, .fp16 = 65,
                       .fp8 = std::nullopt, .int8 = 130, .int4 = 260}),
       .tdp = Watts(70), .idle_power = Watts(14), .price = Dollars(2000), .price_per_hour = Dollars(0.35),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP as for the data-centre parts (assumption)",
       .gpu_link = "pcie3", .gpu_link_count = 1, .host_link = "pcie3", .sms = 40,
       .source = "hardware.md row 'T4'; NVIDIA T4 datasheet: fp32 8.1, int4 260; Turing has no bf16/tf32; fp64 "
                 "1/32 of fp32 (assumption, not in the datasheet); memory 16 GiB less ECC as nvidia-smi shows it "
                 "(15,360 MiB, ECC on by default); prices approximate"},
      {.name = "v100-sxm2-32gb", .vendor_name = "Tesla V100-SXM2-32GB", .architecture = "volta",
       .memory = gibibytes(32), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(900),
       .peak = tflops({.fp64 = 7.8, .fp32 = 15.7, .tf32 = std::nullopt, .bf16 = std::nullopt, .fp16 = 125,
                       .fp8 = std::nullopt, .int8 = std::nullopt, .int4 = std::nullopt}),
       .tdp = Watts(300), .idle_power = Watts(53), .price = Dollars(10000), .price_per_hour = Dollars(1.0),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 53 W with 20 GB held (zai-org/GLM-130B #32, 2022-10), 39-44 W empty",
       .gpu_link = "nvlink2", .gpu_link_count = 6, .host_link = "pcie3", .sms = 80,
       .source = "hardware.md row 'V100 SXM2' (fp16 125 and NVLink2 300 GB/s marked unverified there; the "
                 "NVIDIA V100 datasheet confirms both: 6 links x 25 GB/s each way); fp64 7.8 and fp32 15.7 from "
                 "the datasheet (no fp64 tensor cores, no int8 tensor cores); prices approximate"},
      {.name = "a100-pcie-40gb", .vendor_name = "NVIDIA A100-PCIE-40GB", .architecture = "ampere",
       .memory = gibibytes(40), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1555),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248}),
       .tdp = Watts(250), .idle_power = Watts(46), .price = Dollars(8000), .price_per_hour = Dollars(1.1),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 44-48 W with no process (UCLA GPU table, 2025-07)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .sms = 108,
       .source = "NVIDIA A100 40GB PCIe product brief PB-10137-001 (copy): 1,555 GB/s, 250 W, the A100 datasheet's "
                 "peaks (same as SXM4); nvidia-smi shows 40960 MiB; an optional NVLink bridge pairs two cards "
                 "(link nvlink-bridge, 12 links); prices approximate, unverified"},
      {.name = "l40s", .vendor_name = "NVIDIA L40S", .architecture = "ada",
       .memory = 46068_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(864),
       .peak = tflops({.fp64 = 1.43, .fp32 = 91.6, .tf32 = 183, .bf16 = 362.05, .fp16 = 362.05, .fp8 = 733,
                       .int8 = 733, .int4 = 1466}),
       .tdp = Watts(350), .idle_power = Watts(94), .price = Dollars(8500), .price_per_hour = Dollars(1.0),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle in P0 with a context 83-105 W, 22-34 W in P8 empty (public nvidia-smi logs, 2023-2025)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .sms = 142,
       .source = "NVIDIA L40S datasheet (reseller copies): dense fp32 91.6, tf32 183, bf16/fp16 362.05 (FP32 "
                 "accumulate), fp8 733, int8 733; int4 2 x int8 (the datasheet prints 733, a copy error against the "
                 "L40's 2x); fp64 1/64 of fp32; 48 GB GDDR6 with ECC on shows 46068 MiB (nvidia-smi); no NVLink; "
                 "142 SMs; MSRP 8,500 USD (huggingface.co/hardware/l40s), cloud rate approximate"},
      {.name = "l4", .vendor_name = "NVIDIA L4", .architecture = "ada",
       .memory = 23034_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(300),
       .peak = tflops({.fp64 = 0.47, .fp32 = 30.3, .tf32 = 60, .bf16 = 121, .fp16 = 121, .fp8 = 242.5,
                       .int8 = 242.5, .int4 = 485}),
       .tdp = Watts(72), .idle_power = Watts(32), .price = Dollars(2500), .price_per_hour = Dollars(0.6),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle in P0 with a context 28-37 W (public nvidia-smi logs, 2023-2025)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .sms = 58,
       .source = "NVIDIA L4 datasheet (reseller copies): the sparse figures halved (tf32 120, bf16 242, fp8/int8 "
                 "485 sparse), fp32 30.3; int4 2 x int8 (not printed; Ada runs it); fp64 1/64 of fp32; 24 GB GDDR6 "
                 "with ECC on shows 23034 MiB; 72 W slot power; 58 SMs at 2040 MHz (device output); prices "
                 "approximate, unverified"},
      {.name = "v100-pcie-32gb", .vendor_name = "Tesla V100-PCIE-32GB", .architecture = "volta",
       .memory = gibibytes(32), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(900),
       .peak = tflops({.fp64 = 7, .fp32 = 14, .tf32 = std::nullopt, .bf16 = std::nullopt, .fp16 = 112,
                       .fp8 = std::nullopt, .int8 = std::nullopt, .int4 = std::nullopt}),
       .tdp = Watts(250), .idle_power = Watts(44), .price = Dollars(3000), .price_per_hour = Dollars(0.8),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); 44 W spinning in a stalled NCCL kernel, 26 W empty (NVIDIA/nccl #199, 2019-03)",
       .gpu_link = "pcie3", .gpu_link_count = 1, .host_link = "pcie3", .sms = 80,
       .source = "NVIDIA V100 datasheet, PCIe column (a stored copy): fp64 7, fp32 14, tensor fp16 112, 900 GB/s, "
                 "250 W; consistent with 80 SMs at 1380 MHz (clinfo); no NVLink connector; 32 GiB as v100-sxm2-32gb "
                 "(nvidia-smi shows 32510 MiB); prices approximate, unverified"},
      {.name = "h100-nvl-94gb", .vendor_name = "NVIDIA H100 NVL", .architecture = "hopper",
       .memory = 95830_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(3900),
       .peak = tflops({.fp64 = 60, .fp32 = 60, .tf32 = 417.5, .bf16 = 835.5, .fp16 = 835.5, .fp8 = 1670.5,
                       .int8 = 1670.5, .int4 = std::nullopt}),
       .tdp = Watts(400), .idle_power = Watts(80), .price = Dollars(28000), .price_per_hour = Dollars(3.0),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP as for the data-centre parts (assumption)",
       .gpu_link = "pcie5", .gpu_link_count = 1, .host_link = "pcie5", .sms = 132,
       .source = "NVIDIA H100 datasheet, NVL column (recalled, not read here: unverified): the sparse figures "
                 "halved, 3.9 TB/s, 400 W (configurable 350-400 W, ml-engineering's power table); fp64/fp32 60 "
                 "agree with 132 SMs at the device's 1785 MHz; nvidia-smi shows 95830 MiB; a card pair joined by "
                 "an NVLink bridge, NV12 (600 GB/s bidirectional); prices approximate, unverified"},
      {.name = "b200-sxm-180gb", .vendor_name = "NVIDIA B200", .architecture = "blackwell",
       .memory = 183359_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(8000),
       .peak = tflops({.fp64 = 37, .fp32 = 75, .tf32 = 1100, .bf16 = 2250, .fp16 = 2250, .fp8 = 4500,
                       .int8 = 4500, .int4 = std::nullopt}),
       .tdp = Watts(1000), .idle_power = Watts(190), .price = Dollars(40000), .price_per_hour = Dollars(5.5),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 187-196 W with 157-169 GB held (NVIDIA/TensorRT-LLM #10278, 2025-12), 136-141 W empty",
       .gpu_link = "nvlink5", .gpu_link_count = 18, .host_link = "pcie5", .sms = 148,
       .source = "NVIDIA HGX B200 per-GPU table (copy; an earlier revision gives fp64 40 / fp32 80): sparse figures "
                 "halved, bf16 2250 (ml-engineering's table too), NVLink 5 1.8 TB/s, configurable to 1000 W; 8 TB/s "
                 "(DGX B200: 64 TB/s over 8; NVIDIA's later table prints 7.7); nvidia-smi shows 183359 MiB; 148 SMs; "
                 "FP4 has no slot in the catalog; prices approximate, unverified"},
  };
}

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
       .source = "hardware.md: H100/H200 18 links, 450 GB/s each way; efficiency of the NVLink family (fitted on "
                 "the A100 row; checked here: 345 against nccl.md's ~370 GB/s); latency: NCCL tuning model, NVLink ring LL per hop; "
                 "third-generation NVSwitch reduces in the switch (NVLink SHARP, nccl.md's NVLS row)"},
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
       .source = "NVIDIA HGX B200 table: NVLink 5, 1.8 TB/s bidirectional over 18 links = 50 GB/s per link per "
                 "direction; efficiency of the NVLink family (NCCL's own Blackwell figure, 40.1 of 50 GB/s per link, "
                 "src/graph/tuning.cc, is 0.80); latency as nvlink3; fifth-generation NVSwitch reduces in the switch"},
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

std::span<const GpuSpec> gpu_catalog() {
  static const std::vector<GpuSpec> gpus = make_gpus();
  return gpus;
}

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
