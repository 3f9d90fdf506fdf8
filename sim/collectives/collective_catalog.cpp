// Protocol constants of the collective algorithms, as data, with their sources (calibration/nccl.md).
//
// - Protocols (ll, ll128, simple): NCCL's base latencies (src/graph/tuning.cc via nccl.md), ring {LL 6.6, LL128
//   14.0, Simple 8.4} us, tree {6.8, 14.0, 8.4} us. The ring, direct, halving-doubling and hierarchical lowerings
//   pay the ring figure.
// - step_latency per protocol: NCCL's ring per-hop latency over NVLink, {LL 0.6, LL128 1.9, Simple 3.4} us
//   (nccl.md), minus the link's own hop latency, which the topology's links already carry (NVLink 0.6 us, link
//   catalog): {0, 1.3, 2.8} us, so one ring step over NVLink costs NCCL's per-hop figure. Over PCIe (1 us per
//   hop) a step then costs {1.0, 2.3, 3.8} us where NCCL says {1.0, 2.5, 5.7}: one constant per protocol for
//   every link family, as the engines have one per step; PCIe collectives are bandwidth-bound far sooner than
//   that gap matters. Trees use the ring's per-step figures (nccl.md lists NCCL's ring per-hop only).
// - efficiency: payload per byte on the wire. LL stores 4 data bytes with a 4-byte flag in each 8-byte word
//   (nccl.md: LL moves 50 % payload); LL128 carries 120 useful bytes per 128-byte line (NCCL source,
//   src/include/device.h: NCCL_LL128_DATAELEMS = NCCL_LL128_LINEELEMS - 1, 15 of 16 8-byte elements);
//   Simple moves the full line rate (its own overhead is in the links' fitted efficiency). lower() divides each
//   transfer's bytes by it; nccl-tests' busbw still counts the buffer.
// - choice_bandwidth: auto's protocol estimate needs a per-rank bandwidth that lower() does not know (it sees
//   the group's layout, not its links); 20 GB/s is one NVLink3 link's effective rate (nccl.md: 25 GB/s line
//   rate, ~20 effective), the rate of one NCCL channel on one link. On 8 ranks, ring all-reduce (14 steps,
//   W = 1.75 S per rank) then picks LL below ~313 KB (6.6 + 3.5 S/B = 32.2 + 1.87 S/B), LL128 up to ~2.6 MB
//   (32.2 + 1.87 S/B = 47.6 + 1.75 S/B) and Simple above. NCCL's selection also caps LL's bandwidth low (about
//   30-40 % of the bus); that cap is not modelled, the efficiency alone penalises LL.
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
#include "sim/collectives/collective.hpp"

namespace dtsim::sim {

using namespace dtsim::literals;

const CollectiveTuning& collective_tuning() {
  static const CollectiveTuning tuning{
      .ll = {.ring_latency = microseconds(6.6),
             .tree_latency = microseconds(6.8),
             .step_latency = microseconds(0.6 - 0.6),
             .efficiency = 0.5},
      .ll128 = {.ring_latency = microseconds(14.0),
                .tree_latency = microseconds(14.0),
                .step_latency = microseconds(1.9 - 0.6),
                .efficiency = 120.0 / 128.0},
      .simple = {.ring_latency = microseconds(8.4),
                 .tree_latency = microseconds(8.4),
                 .step_latency = microseconds(3.4 - 0.6),
                 .efficiency = 1.0},
      .nvls_latency = microseconds(24.0),
      .choice_bandwidth = gigabytes_per_second(20.0),
      .chunks = 8,
      .nvls_port_rate = gigabytes_per_second(310.0),
      .tree_below = 64_MiB,
      .source = "NCCL tuning model (src/graph/tuning.cc via calibration/nccl.md): base latency Ring {LL 6.6, "
                "LL128 14.0, Simple 8.4} us, Tree {6.8, 14.0, 8.4} us, NVLS Simple 23-25 us; per step NCCL's NVLink "
                "ring hop {0.6, 1.9, 3.4} us minus the link's own 0.6 us; payload efficiency LL 1/2 (nccl.md), "
                "LL128 120/128 (NCCL LL128 lines); auto's estimate at 20 GB/s per rank (one NVLink3 link, nccl.md); chunks = NCCL_STEPS (8); NVLS port rate fitted on 8x H100 NVLS all-reduce algbw ~275 GB/s "
                "(busbw ~480, nccl.md); tree below 64 MiB (tree/ring crossover of these lowerings on 1,024 ranks, HDR to NDR)"};
  return tuning;
}

CollectiveTuning collective_tuning(int max_channels) {
  CollectiveTuning tuning = collective_tuning();
  tuning.max_channels = max_channels;
  return tuning;
}

}  // namespace dtsim::sim
