// The hardware catalog's GPUs: one entry per GPU, each saying where its figures come from (the conventions are
// catalog_data.cpp's, whose links, parts and CPUs these name; "hardware.md" is ../shared/calibration/hardware.md).
#include <array>
#include <optional>
#include <vector>

#include "topology/catalog.hpp"

namespace dtsim::topology {
namespace {

using namespace dtsim::literals;

// scale_out_link, the NIC port a GPU's reference system gives each GPU (cluster.inter_link's default): DGX-1 with
// V100 SXM2, four 100 Gb/s EDR InfiniBand ports (the DGX-1 datasheet; DGX-2, eight EDR ConnectX-5); DGX A100, eight 200 Gb/s HDR
// ConnectX-6 (the DGX A100 datasheet); DGX H100 and DGX H200, eight 400 Gb/s NDR ConnectX-7 (their datasheets,
// 2023 and 2024); DGX B200, eight 400 Gb/s ConnectX-7 (DGX B200 datasheet); GB200 NVL72, a 400 Gb/s ConnectX-7 per
// GPU (DGX GB200 datasheet); DGX B300 and GB300 NVL72, an 800 Gb/s ConnectX-8 per GPU (their datasheets, 2025);
// MI300X, Azure's ND MI300X v5, eight 400 Gb/s NDR ConnectX-7 a VM (learn.microsoft.com, ND MI300X v5 series).
// PCIe cards name none: their servers' NICs vary, and the default stays ib-hdr.

// Dense peaks in TFLOP/s (TOPS for integers), by precision; an absent member is a precision the chip lacks.
struct PeakTflops {
  std::optional<double> fp64, fp32, tf32, bf16, fp16, fp8, int8, int4, mxfp8, fp4;
};

std::array<std::optional<FlopsPerSecond>, kAllPrecisions.size()> tflops(const PeakTflops& t) {
  const auto to_rate = [](std::optional<double> v) -> std::optional<FlopsPerSecond> {
    if (!v) return std::nullopt;
    return teraflops(*v);
  };
  // MXFP4 at the FP4 rate: Blackwell's block-scaled MMA takes NVFP4 and MXFP4 alike (PTX ISA, tcgen05.mma
  // kind::mxf4nvf4: E2M1 operands with UE4M3 scales per 16 or UE8M0 per 32, one instruction); NVIDIA's datasheets
  // give one FP4 figure, so the same rate is an assumption (no MXFP4 measurement read).
  return {to_rate(t.fp64), to_rate(t.fp32), to_rate(t.tf32),  to_rate(t.bf16), to_rate(t.fp16), to_rate(t.fp8),
          to_rate(t.int8), to_rate(t.int4), to_rate(t.mxfp8), to_rate(t.fp4),  to_rate(t.fp4)};
}

// A part whose FP4 is MXFP4 only (AMD's CDNA 4: OCP MX formats, no NVFP4): `t.fp4` is its MXFP4 rate.
std::array<std::optional<FlopsPerSecond>, kAllPrecisions.size()> tflops_mx_fp4(const PeakTflops& t) {
  auto peaks = tflops(t);
  peaks[static_cast<std::size_t>(Precision::Fp4)] = std::nullopt;
  return peaks;
}

const Bytes kReserve = gibibytes(1.5);  // hardware.md: 1-2 GiB to CUDA context and framework

std::vector<GpuSpec> make_gpus() {
  return {
      {.name = "a100-sxm4-40gb", .vendor_name = "NVIDIA A100-SXM4-40GB", .architecture = "ampere",
       .memory = gibibytes(40), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1555),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(400), .idle_power = Watts(54), .price = Dollars(10000), .price_per_hour = Dollars(1.3),
       .cost_source = "purchase approximate (2023 street); rental: AWS p4d capacity blocks 1.84 per A100 40GB (2024), less; idle 52-54 W with no process (a public nvidia-smi snapshot, UCLA GPU table 2025-07)",
       .gpu_link = "nvlink3", .gpu_link_count = 12, .host_link = "pcie4", .cpu_link = "",
       .scale_out_link = "ib-hdr", .sms = 108,
       .source = "hardware.md row 'A100 SXM4 40GB'; fp64 tensor 19.5 and int4 1248 from the NVIDIA A100 "
                 "datasheet; prices approximate"},
      {.name = "a100-sxm4-80gb", .vendor_name = "NVIDIA A100-SXM4-80GB", .architecture = "ampere",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(2039),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(400), .idle_power = Watts(64), .price = Dollars(15000), .price_per_hour = Dollars(1.8),
       .cost_source = "purchase approximate (2023 street); rental 1.8 USD/GPU-h: AWS p4d capacity blocks 1.84 per A100 (2024), neocloud A100 80GB 1.49-2.49 (2026); idle 60-67 W with a 3.5 GB context held (public nvidia-smi logs, 2021-2024)",
       .gpu_link = "nvlink3", .gpu_link_count = 12, .host_link = "pcie4", .cpu_link = "",
       .scale_out_link = "ib-hdr", .sms = 108,
       .source = "hardware.md row 'A100 SXM4 80GB' (nvidia-smi 81,920 MiB); fp64/tf32/fp32/int4 from the NVIDIA "
                 "A100 datasheet; prices approximate"},
      {.name = "a100-pcie-80gb", .vendor_name = "NVIDIA A100 80GB PCIe", .architecture = "ampere",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1935),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(300), .idle_power = Watts(47), .price = Dollars(14000), .price_per_hour = Dollars(1.6),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 40-54 W with no process (public nvidia-smi logs, 2021-2024)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .cpu_link = "", .scale_out_link = "", .sms = 108,
       .source = "hardware.md row 'A100 PCIe 80GB'; fp64/tf32/fp32/int4 from the NVIDIA A100 datasheet; an "
                 "optional NVLink bridge pairs two cards (link nvlink-bridge); prices approximate"},
      {.name = "h100-sxm5-80gb", .vendor_name = "NVIDIA H100 80GB HBM3", .architecture = "hopper",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(3350),
       .peak = tflops({.fp64 = 67, .fp32 = 67, .tf32 = 494, .bf16 = 989, .fp16 = 989, .fp8 = 1979,
                       .int8 = 1979, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(700), .idle_power = Watts(140), .price = Dollars(30000), .price_per_hour = Dollars(3.0),
       .cost_source = "purchase 25-30 k USD (Raymond James via press, 2023-08); rental 3.0 USD/GPU-h: neocloud on-demand H100 SXM 2.99 (2024-10), AWS capacity blocks 4.92 (2024); idle 138-145 W with 72 GB held (wilicc/gpu-burn #114, 2024-10), 69-72 W empty",
       .gpu_link = "nvlink4", .gpu_link_count = 18, .host_link = "pcie5", .cpu_link = "",
       .scale_out_link = "ib-ndr", .sms = 132,
       .source = "hardware.md row 'H100 SXM5 80GB' (nvidia-smi shows 81,559 MiB; 80 GiB by convention); fp64 "
                 "tensor 67 from the NVIDIA H100 datasheet; Hopper has no int4 tensor path; prices approximate"},
      {.name = "h100-pcie-80gb", .vendor_name = "NVIDIA H100 PCIe", .architecture = "hopper",
       .memory = gibibytes(80), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(2000),
       .peak = tflops({.fp64 = 51, .fp32 = 51, .tf32 = 378, .bf16 = 756, .fp16 = 756, .fp8 = 1513,
                       .int8 = 1513, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(350), .idle_power = Watts(80), .price = Dollars(25000), .price_per_hour = Dollars(2.5),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 73-87 W with a context held (public nvidia-smi logs, 2023-2024)",
       .gpu_link = "pcie5", .gpu_link_count = 1, .host_link = "pcie5", .cpu_link = "", .scale_out_link = "", .sms = 114,
       .source = "hardware.md row 'H100 PCIe 80GB' (bf16 756, fp8 1513 marked unverified there; they are half "
                 "the sparse figures of the NVIDIA H100 datasheet, which also gives fp64 tensor 51, fp32 51, "
                 "tf32 378 dense, int8 1513 dense); prices approximate"},
      {.name = "h200-sxm-141gb", .vendor_name = "NVIDIA H200", .architecture = "hopper",
       .memory = 143771_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(4800),
       .peak = tflops({.fp64 = 67, .fp32 = 67, .tf32 = 494, .bf16 = 989, .fp16 = 989, .fp8 = 1979,
                       .int8 = 1979, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(700), .idle_power = Watts(122), .price = Dollars(35000), .price_per_hour = Dollars(3.8),
       .cost_source = "purchase approximate (2024); rental 3.8 USD/GPU-h: AWS p5e capacity blocks 5.41 (2024), neoclouds lower; idle 122 W with a context held, 73-76 W empty (public nvidia-smi logs, 2024-2025)",
       .gpu_link = "nvlink4", .gpu_link_count = 18, .host_link = "pcie5", .cpu_link = "",
       .scale_out_link = "ib-ndr", .sms = 132,
       .source = "hardware.md row 'H200 SXM 141GB'; memory is what nvidia-smi shows (143,771 MiB, not 141 GiB); "
                 "fp64/fp32/tf32 as H100 SXM (same GH100 die, NVIDIA H200 datasheet); prices approximate"},
      {.name = "mi300x", .vendor_name = "AMD Instinct MI300X", .architecture = "cdna3",
       .memory = gibibytes(192), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(5300),
       .peak = tflops({.fp64 = 163.4, .fp32 = 163.4, .tf32 = 653.7, .bf16 = 1307.4, .fp16 = 1307.4,
                       .fp8 = 2614.9, .int8 = 2614.9, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(750), .idle_power = Watts(150), .price = Dollars(15000), .price_per_hour = Dollars(2.5),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP, the ratio of H100 SXM (140/700) and B200 (190/1000) with a context held (assumption)",
       .gpu_link = "infinity-fabric", .gpu_link_count = 7, .host_link = "pcie5", .cpu_link = "",
       .scale_out_link = "ib-ndr", .sms = 304,
       .source = "hardware.md row 'MI300X' (bf16 1,307 and fp8 2,615 marked unverified there; the AMD Instinct "
                 "MI300X datasheet gives 1307.4 / 2614.9 dense, fp64 matrix 163.4, fp32 163.4, tf32 653.7, int8 "
                 "2614.9); 192 GB = 8 HBM3 stacks of 24 GiB; prices approximate"},
      {.name = "rtx4090", .vendor_name = "NVIDIA GeForce RTX 4090", .architecture = "ada",
       .memory = gibibytes(24), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1008),
       .peak = tflops({.fp64 = 1.29, .fp32 = 82.6, .tf32 = 82.6, .bf16 = 165.2, .fp16 = 165.2, .fp8 = 330.3,
                       .int8 = 660.6, .int4 = 1321.2, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(450), .idle_power = Watts(90), .price = Dollars(1600), .price_per_hour = Dollars(0.4),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP as for the data-centre parts (assumption)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .cpu_link = "", .scale_out_link = "", .sms = 128,
       .source = "hardware.md row 'RTX 4090' (bf16/fp16 with FP32 accumulate, as training runs; fp8 330 and int8 "
                 "661 marked unverified there); NVIDIA Ada Lovelace whitepaper: fp32 82.6, tf32 82.6, fp8 330.3 "
                 "(FP32 accumulate), int8 660.6, int4 1321.2, fp64 1/64 of fp32; no NVLink; prices approximate "
                 "(MSRP 1,599 USD)"},
      {.name = "t4", .vendor_name = "Tesla T4", .architecture = "turing",
       .memory = 15360_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(320),
       .peak = tflops({.fp64 = 0.25, .fp32 = 8.1, .tf32 = std::nullopt, .bf16 = std::nullopt, .fp16 = 65,
                       .fp8 = std::nullopt, .int8 = 130, .int4 = 260, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(70), .idle_power = Watts(14), .price = Dollars(2000), .price_per_hour = Dollars(0.35),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP as for the data-centre parts (assumption)",
       .gpu_link = "pcie3", .gpu_link_count = 1, .host_link = "pcie3", .cpu_link = "", .scale_out_link = "", .sms = 40,
       .source = "hardware.md row 'T4'; NVIDIA T4 datasheet: fp32 8.1, int4 260; Turing has no bf16/tf32; fp64 "
                 "1/32 of fp32 (assumption, not in the datasheet); memory 16 GiB less ECC as nvidia-smi shows it "
                 "(15,360 MiB, ECC on by default); prices approximate"},
      {.name = "v100-sxm2-32gb", .vendor_name = "Tesla V100-SXM2-32GB", .architecture = "volta",
       .memory = gibibytes(32), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(900),
       .peak = tflops({.fp64 = 7.8, .fp32 = 15.7, .tf32 = std::nullopt, .bf16 = std::nullopt, .fp16 = 125,
                       .fp8 = std::nullopt, .int8 = std::nullopt, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(300), .idle_power = Watts(53), .price = Dollars(10000), .price_per_hour = Dollars(1.0),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 53 W with 20 GB held (zai-org/GLM-130B #32, 2022-10), 39-44 W empty",
       .gpu_link = "nvlink2", .gpu_link_count = 6, .host_link = "pcie3", .cpu_link = "",
       .scale_out_link = "ib-edr", .sms = 80,
       .source = "hardware.md row 'V100 SXM2' (fp16 125 and NVLink2 300 GB/s marked unverified there; the "
                 "NVIDIA V100 datasheet confirms both: 6 links x 25 GB/s each way); fp64 7.8 and fp32 15.7 from "
                 "the datasheet (no fp64 tensor cores, no int8 tensor cores); prices approximate"},
      {.name = "a100-pcie-40gb", .vendor_name = "NVIDIA A100-PCIE-40GB", .architecture = "ampere",
       .memory = gibibytes(40), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(1555),
       .peak = tflops({.fp64 = 19.5, .fp32 = 19.5, .tf32 = 156, .bf16 = 312, .fp16 = 312, .fp8 = std::nullopt,
                       .int8 = 624, .int4 = 1248, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(250), .idle_power = Watts(46), .price = Dollars(8000), .price_per_hour = Dollars(1.1),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 44-48 W with no process (UCLA GPU table, 2025-07)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .cpu_link = "", .scale_out_link = "", .sms = 108,
       .source = "NVIDIA A100 40GB PCIe product brief PB-10137-001 (copy): 1,555 GB/s, 250 W, the A100 datasheet's "
                 "peaks (same as SXM4); nvidia-smi shows 40960 MiB; an optional NVLink bridge pairs two cards "
                 "(link nvlink-bridge, 12 links); prices approximate, unverified"},
      {.name = "l40s", .vendor_name = "NVIDIA L40S", .architecture = "ada",
       .memory = 46068_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(864),
       .peak = tflops({.fp64 = 1.43, .fp32 = 91.6, .tf32 = 183, .bf16 = 362.05, .fp16 = 362.05, .fp8 = 733,
                       .int8 = 733, .int4 = 1466, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(350), .idle_power = Watts(94), .price = Dollars(8500), .price_per_hour = Dollars(1.0),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle in P0 with a context 83-105 W, 22-34 W in P8 empty (public nvidia-smi logs, 2023-2025)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .cpu_link = "", .scale_out_link = "", .sms = 142,
       .source = "NVIDIA L40S datasheet (reseller copies): dense fp32 91.6, tf32 183, bf16/fp16 362.05 (FP32 "
                 "accumulate), fp8 733, int8 733; int4 2 x int8 (the datasheet prints 733, a copy error against the "
                 "L40's 2x); fp64 1/64 of fp32; 48 GB GDDR6 with ECC on shows 46068 MiB (nvidia-smi); no NVLink; "
                 "142 SMs; MSRP 8,500 USD (huggingface.co/hardware/l40s), cloud rate approximate"},
      {.name = "l4", .vendor_name = "NVIDIA L4", .architecture = "ada",
       .memory = 23034_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(300),
       .peak = tflops({.fp64 = 0.47, .fp32 = 30.3, .tf32 = 60, .bf16 = 121, .fp16 = 121, .fp8 = 242.5,
                       .int8 = 242.5, .int4 = 485, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(72), .idle_power = Watts(32), .price = Dollars(2500), .price_per_hour = Dollars(0.6),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle in P0 with a context 28-37 W (public nvidia-smi logs, 2023-2025)",
       .gpu_link = "pcie4", .gpu_link_count = 1, .host_link = "pcie4", .cpu_link = "", .scale_out_link = "", .sms = 58,
       .source = "NVIDIA L4 datasheet (reseller copies): the sparse figures halved (tf32 120, bf16 242, fp8/int8 "
                 "485 sparse), fp32 30.3; int4 2 x int8 (not printed; Ada runs it); fp64 1/64 of fp32; 24 GB GDDR6 "
                 "with ECC on shows 23034 MiB; 72 W slot power; 58 SMs at 2040 MHz (device output); prices "
                 "approximate, unverified"},
      {.name = "v100-pcie-32gb", .vendor_name = "Tesla V100-PCIE-32GB", .architecture = "volta",
       .memory = gibibytes(32), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(900),
       .peak = tflops({.fp64 = 7, .fp32 = 14, .tf32 = std::nullopt, .bf16 = std::nullopt, .fp16 = 112,
                       .fp8 = std::nullopt, .int8 = std::nullopt, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(250), .idle_power = Watts(44), .price = Dollars(3000), .price_per_hour = Dollars(0.8),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); 44 W spinning in a stalled NCCL kernel, 26 W empty (NVIDIA/nccl #199, 2019-03)",
       .gpu_link = "pcie3", .gpu_link_count = 1, .host_link = "pcie3", .cpu_link = "", .scale_out_link = "", .sms = 80,
       .source = "NVIDIA V100 datasheet, PCIe column (a stored copy): fp64 7, fp32 14, tensor fp16 112, 900 GB/s, "
                 "250 W; consistent with 80 SMs at 1380 MHz (clinfo); no NVLink connector; 32 GiB as v100-sxm2-32gb "
                 "(nvidia-smi shows 32510 MiB); prices approximate, unverified"},
      {.name = "h100-nvl-94gb", .vendor_name = "NVIDIA H100 NVL", .architecture = "hopper",
       .memory = 95830_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(3900),
       .peak = tflops({.fp64 = 60, .fp32 = 60, .tf32 = 417.5, .bf16 = 835.5, .fp16 = 835.5, .fp8 = 1670.5,
                       .int8 = 1670.5, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(400), .idle_power = Watts(80), .price = Dollars(28000), .price_per_hour = Dollars(3.0),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle: no measurement read; 20 % of TDP as for the data-centre parts (assumption)",
       .gpu_link = "pcie5", .gpu_link_count = 1, .host_link = "pcie5", .cpu_link = "", .scale_out_link = "", .sms = 132,
       .source = "NVIDIA H100 datasheet, NVL column (recalled, not read here: unverified): the sparse figures "
                 "halved, 3.9 TB/s, 400 W (configurable 350-400 W, ml-engineering's power table); fp64/fp32 60 "
                 "agree with 132 SMs at the device's 1785 MHz; nvidia-smi shows 95830 MiB; a card pair joined by "
                 "an NVLink bridge, NV12 (600 GB/s bidirectional); prices approximate, unverified"},
      {.name = "b200-sxm-180gb", .vendor_name = "NVIDIA B200", .architecture = "blackwell",
       .memory = 183359_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(8000),
       .peak = tflops({.fp64 = 37, .fp32 = 75, .tf32 = 1100, .bf16 = 2250, .fp16 = 2250, .fp8 = 4500,
                       .int8 = 4500, .int4 = std::nullopt, .mxfp8 = 4500, .fp4 = 9000}),
       .tdp = Watts(1000), .idle_power = Watts(190), .price = Dollars(40000), .price_per_hour = Dollars(5.5),
       .cost_source = "purchase and rental approximate 2024 public figures (unverified); idle 187-196 W with 157-169 GB held (NVIDIA/TensorRT-LLM #10278, 2025-12), 136-141 W empty",
       .gpu_link = "nvlink5", .gpu_link_count = 18, .host_link = "pcie5", .cpu_link = "",
       .scale_out_link = "ib-ndr", .sms = 148,
       .source = "NVIDIA HGX B200 per-GPU table (copy; an earlier revision gives fp64 40 / fp32 80): sparse figures "
                 "halved, bf16 2250 (ml-engineering's table too), NVLink 5 1.8 TB/s, configurable to 1000 W; 8 TB/s "
                 "(DGX B200: 64 TB/s over 8; NVIDIA's later table prints 7.7); nvidia-smi shows 183359 MiB; 148 SMs; "
                 "fp4 (NVFP4) 9000: the table's 18 PF sparse halved; mxfp8 at the fp8 rate (the tables list FP8/FP6 "
                 "with no separate MX figure: Blackwell's tensor cores apply the block scales inside the MMA); prices "
                 "approximate, unverified"},
      {.name = "gb200", .vendor_name = "NVIDIA GB200 (one Blackwell GPU of the superchip)", .architecture = "blackwell",
       .memory = gibibytes(186), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(8000),
       .peak = tflops({.fp64 = 45, .fp32 = 80, .tf32 = 1225, .bf16 = 2450, .fp16 = 2450, .fp8 = 4900,
                       .int8 = 4900, .int4 = std::nullopt, .mxfp8 = 4900, .fp4 = 9800}),
       .tdp = Watts(1200), .idle_power = Watts(240), .price = Dollars(45000), .price_per_hour = Dollars(6.5),
       .cost_source = "purchase 45 k USD: an unsourced estimate (B200's 40 k and more; the rack's trays are priced "
                      "apart, nvl-compute-tray and nvlink-switch-tray); rental 6.5 USD/GPU-h (neocloud GB200 offers "
                      "2025, unverified); idle: no measurement read; 20 % of TDP as B200 (assumption)",
       .gpu_link = "nvlink5", .gpu_link_count = 18, .host_link = "pcie5", .cpu_link = "nvlink-c2c",
       .scale_out_link = "ib-ndr", .sms = 148,
       .source = "dense peaks per GPU from NVIDIA/dgxc-benchmarking README at 841f5466 ('based on non-sparse "
                 "specifications'): BF16 2450, FP8 4900, NVFP4 9800 (NVIDIA's GB200 NVL72 rack figures over 72 GPUs "
                 "with sparsity halved give 2500 / 5000 / 10000); tf32 half of bf16 and int8 as fp8 (every NVIDIA "
                 "tensor core generation); FP64 3,240 TF a rack (45 a GPU); 186 GB HBM3e at 8 TB/s (dgxc-benchmarking); "
                 "NVLink 5 1.8 TB/s a GPU over 18 links; Grace to each GPU over NVLink-C2C, its NICs (ConnectX-7) on PCIe Gen5; up to 1,200 W a GPU; fp32 "
                 "80 (B200's 75 at GB200's clock, assumption); mxfp8 at the fp8 rate; SMs as B200; price approximate"},
      {.name = "gb300", .vendor_name = "NVIDIA GB300 (one Blackwell Ultra GPU of the superchip)",
       .architecture = "blackwell-ultra",
       .memory = gibibytes(279), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(8000),
       .peak = tflops({.fp64 = 1.39, .fp32 = 80, .tf32 = 1225, .bf16 = 2450, .fp16 = 2450, .fp8 = 4900,
                       .int8 = std::nullopt, .int4 = std::nullopt, .mxfp8 = 4900, .fp4 = 14700}),
       .tdp = Watts(1400), .idle_power = Watts(280), .price = Dollars(55000), .price_per_hour = Dollars(8.0),
       .cost_source = "purchase and rental approximate (GB300 NVL72 rack quotes, recalled, unverified, 2025); idle: no "
                      "measurement read; 20 % of TDP (assumption)",
       .gpu_link = "nvlink5", .gpu_link_count = 18, .host_link = "pcie6", .cpu_link = "nvlink-c2c",
       .scale_out_link = "ib-xdr", .sms = 160,
       .source = "dense peaks per GPU from NVIDIA/dgxc-benchmarking README at 841f5466: BF16 2450, FP8 4900, NVFP4 "
                 "14700 (NVIDIA's 'Inside Blackwell Ultra' blog: 15 PF dense NVFP4); tf32 half of bf16; FP64 1.39 TF "
                 "(Hot Chips 2025 as Tom's Hardware reports it); INT8 not listed (Blackwell Ultra trades it for FP4); "
                 "279 GB HBM3e at 8 TB/s and up to 1,400 W (dgxc-benchmarking; NVIDIA's blog rounds to 288 GB); 160 SMs "
                 "(Blackwell Ultra); Grace over NVLink-C2C, its ConnectX-8 NICs on PCIe Gen6; fp32 as GB200 (assumption); "
                 "mxfp8 at the fp8 rate; price approximate"},
      {.name = "b300-sxm", .vendor_name = "NVIDIA B300 (HGX B300)", .architecture = "blackwell-ultra",
       .memory = gibibytes(270), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(7700),
       .peak = tflops({.fp64 = 1.39, .fp32 = 75, .tf32 = 1125, .bf16 = 2250, .fp16 = 2250, .fp8 = 4500,
                       .int8 = std::nullopt, .int4 = std::nullopt, .mxfp8 = 4500, .fp4 = 13500}),
       .tdp = Watts(1100), .idle_power = Watts(220), .price = Dollars(50000), .price_per_hour = Dollars(7.0),
       .cost_source = "purchase and rental approximate (recalled, unverified, 2025); idle: no measurement read; 20 % of "
                      "TDP (assumption)",
       .gpu_link = "nvlink5", .gpu_link_count = 18, .host_link = "pcie6", .cpu_link = "",
       .scale_out_link = "ib-xdr", .sms = 160,
       .source = "dense peaks per GPU from NVIDIA/dgxc-benchmarking README at 841f5466: BF16 2250, FP8 4500, NVFP4 "
                 "13500 (other readings of NVIDIA's HGX B300 table give 14 PF); tf32 half of bf16; FP64 1.39 TF as "
                 "GB300 (Hot Chips 2025); INT8 not listed; 270 GB HBM3e (dgxc-benchmarking) at 7.7 TB/s; 1,100 W (DGX "
                 "B300); NVLink 5 1.8 TB/s; PCIe Gen6 to ConnectX-8; fp32 as B200 (assumption); mxfp8 at the fp8 "
                 "rate; price approximate"},
      {.name = "h200-nvl", .vendor_name = "NVIDIA H200 NVL", .architecture = "hopper",
       .memory = 143771_MiB, .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(4800),
       .peak = tflops({.fp64 = 60, .fp32 = 60, .tf32 = 417.5, .bf16 = 835.5, .fp16 = 835.5, .fp8 = 1670.5,
                       .int8 = 1670.5, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(600), .idle_power = Watts(105), .price = Dollars(32000), .price_per_hour = Dollars(3.5),
       .cost_source = "purchase and rental approximate (recalled, unverified, 2025); idle: H200 SXM's 122 W scaled by TDP "
                      "600/700 (assumption)",
       .gpu_link = "pcie5", .gpu_link_count = 1, .host_link = "pcie5", .cpu_link = "", .scale_out_link = "", .sms = 132,
       .source = "NVIDIA H200 NVL datasheet (PCIe card, up to 600 W): FP64 30 / FP64 tensor 60, FP32 60, TF32 835, "
                 "BF16/FP16 1,671, FP8/INT8 3,341 TFLOPS with sparsity (halved), 141 GB HBM3e at 4.8 TB/s (memory as "
                 "h200-sxm-141gb's nvidia-smi 143,771 MiB, the same stacks); 2- or "
                 "4-way NVLink bridges at 900 GB/s are not modelled here (gpu_link pcie5, as the cards talk without "
                 "them); SMs as H200 SXM"},
      {.name = "mi325x", .vendor_name = "AMD Instinct MI325X", .architecture = "cdna3",
       .memory = gibibytes(256), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(6000),
       .peak = tflops({.fp64 = 163.4, .fp32 = 163.4, .tf32 = 653.7, .bf16 = 1307.4, .fp16 = 1307.4,
                       .fp8 = 2614.9, .int8 = 2614.9, .int4 = std::nullopt, .mxfp8 = std::nullopt, .fp4 = std::nullopt}),
       .tdp = Watts(1000), .idle_power = Watts(200), .price = Dollars(20000), .price_per_hour = Dollars(3.0),
       .cost_source = "purchase and rental approximate (recalled, unverified, 2025); idle: no measurement read; 20 % of "
                      "TDP (assumption)",
       .gpu_link = "infinity-fabric", .gpu_link_count = 7, .host_link = "pcie5", .cpu_link = "", .scale_out_link = "", .sms = 304,
       .source = "AMD Instinct MI325X datasheet: the MI300X's CDNA 3 die (same dense peaks: BF16 1,307.4, FP8 "
                 "2,614.9, FP64 matrix 163.4, TF32 653.7 TFLOPS) with 256 GB HBM3E at 6 TB/s and 1,000 W; 7 Infinity "
                 "Fabric links to its 8-GPU platform's peers as MI300X; 304 CUs"},
      {.name = "mi355x", .vendor_name = "AMD Instinct MI355X", .architecture = "cdna4",
       .memory = gibibytes(288), .memory_reserve = kReserve, .memory_bandwidth = gigabytes_per_second(8000),
       .peak = tflops_mx_fp4({.fp64 = 78.6, .fp32 = 157.3, .tf32 = std::nullopt, .bf16 = 2516.6, .fp16 = 2516.6,
                       .fp8 = 5033.2, .int8 = 5033.2, .int4 = std::nullopt, .mxfp8 = 5033.2, .fp4 = 10066.3}),
       .tdp = Watts(1400), .idle_power = Watts(280), .price = Dollars(25000), .price_per_hour = Dollars(4.0),
       .cost_source = "purchase and rental approximate (recalled, unverified, 2025); idle: no measurement read; 20 % of "
                      "TDP (assumption)",
       .gpu_link = "infinity-fabric", .gpu_link_count = 7, .host_link = "pcie5", .cpu_link = "", .scale_out_link = "", .sms = 256,
       .source = "AMD Instinct MI355X datasheet: CDNA 4, dense BF16/FP16 2.5 PF, FP8 and OCP MXFP8 5.0 PF, MXFP6 and "
                 "MXFP4 10 PF (mxfp4; no NVFP4, so no fp4), INT8 5.0 POPS, FP64 78.6, FP32 157.3 "
                 "TFLOPS, no TF32 matrix rate; 288 GB HBM3E at 8 TB/s; 1,400 W (liquid cooled); 256 CUs; Infinity "
                 "Fabric links as MI300X (assumption); price approximate"},
  };
}

}  // namespace

std::span<const GpuSpec> gpu_catalog() {
  static const std::vector<GpuSpec> gpus = make_gpus();
  return gpus;
}

}  // namespace dtsim::topology
