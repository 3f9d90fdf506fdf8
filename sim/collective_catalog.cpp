// Protocol constants of the collective algorithms, as data, with their sources (calibration/nccl.md).
//
// - ring_latency, tree_latency: NCCL's base latency for the Simple protocol (src/graph/tuning.cc; nccl.md: Ring
//   and Tree Simple 8.4 us). Large messages, which dominate training, use Simple.
// - nvls_latency: nccl.md gives NVLS Simple 23-25 us; 24 us, the middle. NCCL's model adds no per-hop term to
//   NVLS, so lower() charges NVLS no step_latency (the links still add their own hop latency).
// - step_latency: NCCL charges a Simple ring 3.4 us per hop over NVLink (nccl.md). Part of that is the link's
//   own latency, which the topology's links already carry (NVLink 0.6 us per hop, link catalog), so the
//   protocol's share is 3.4 - 0.6 = 2.8 us: one ring step over NVLink then costs NCCL's 3.4 us. Over PCIe (1 us
//   per hop) a step costs 3.8 us where NCCL says 5.7: one protocol constant for every link family, as the
//   engines have one per step; PCIe collectives are bandwidth-bound far sooner than that gap matters.
// - chunks = 8: NCCL pipelines through NCCL_STEPS = 8 buffer slots per connection (src/include/device.h), so
//   eight chunks are in flight between a pair of ranks; with 8 chunks a pipeline of depth D costs (8+D-1)/8 of
//   one buffer's transfer time, and a collective stays a few dozen transfers per link for the engine.
// - nvls_port_rate: the switch's reduction rate per GPU port. Each GPU sends its buffer up once and receives
//   the reduced buffer once, pipelined in `chunks` chunks over chunks+1 steps, so on large buffers
//   algbw = min(per-GPU link bandwidth x efficiency, nvls_port_rate) x chunks / (chunks + 1). An H100 has 18
//   NVLink4 x 25 GB/s x 0.8 = 360 GB/s to the switch; nccl.md's 8x H100 NVLS all-reduce is algbw ~275 GB/s
//   (busbw ~480 = 275 x 1.75), so the switch, not the link, is the limit: 275 x 9/8 = 309 -> 310 GB/s.
// - tree_below: NCCL uses trees for small and medium all-reduces across nodes and rings for large ones; where
//   it switches depends on its cost model and the scale. With these lowerings on 1,024 ranks, one NIC each
//   (tree: chunks + 2·10 - 1 = 27 steps, each sending up to 2S/chunks per rank; ring: 2·1023 steps of 3.8 us),
//   time_tree ~ 6.75 S/B + 0.1 ms and time_ring ~ 2 S/B + 7.8 ms cross at S ~ 1.6 ms x B: ~40 MB on HDR (24
//   GB/s), ~75 MB on NDR (47 GB/s). 64 MiB sits in that range and keeps Megatron's 25 MB gradient buckets on
//   trees across nodes, as NCCL does at scale. One size for every scale is a simplification (NCCL decides per
//   call from its model).
#include "sim/collective.hpp"

namespace dtsim::sim {

using namespace dtsim::literals;

const CollectiveTuning& collective_tuning() {
  static const CollectiveTuning tuning{
      .ring_latency = microseconds(8.4),
      .tree_latency = microseconds(8.4),
      .nvls_latency = microseconds(24.0),
      .step_latency = microseconds(3.4 - 0.6),
      .chunks = 8,
      .nvls_port_rate = gigabytes_per_second(310.0),
      .tree_below = 64_MiB,
      .source = "NCCL tuning model (src/graph/tuning.cc via calibration/nccl.md): base latency Ring/Tree Simple "
                "8.4 us, NVLS Simple 23-25 us; per step NCCL's Simple NVLink hop 3.4 us minus the link's own "
                "0.6 us; chunks = NCCL_STEPS (8); NVLS port rate fitted on 8x H100 NVLS all-reduce algbw ~275 GB/s "
                "(busbw ~480, nccl.md); tree below 64 MiB (tree/ring crossover of these lowerings on 1,024 ranks, HDR to NDR)"};
  return tuning;
}

}  // namespace dtsim::sim
