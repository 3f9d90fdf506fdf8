// What overlapped communication takes from the compute it runs beside. An NCCL kernel occupies one SM per block
// (one block per channel, never sharing an SM with a compute kernel: NCCL's user guide, NCCL_MAX_CTAS; NVIDIA/nccl
// #689) and moves about three bytes of HBM traffic per byte it sends (store to the peer's FIFO, read it back,
// read and write the user buffers: NVIDIA/nccl #1428's maintainer, "at least 2x ... it can be 3x", and the ring
// code's count). So while a collective or a pipeline send runs, the compute kernels beside it run on the SMs it
// leaves and share HBM with it:
//
//   delta = overlap x [ (1 - m) (s_sm - 1) + m (max(s_sm, s_mem) - 1) ],  s_sm = N / (N - C),
//                                                                        s_mem = B / (B - 3 x wire rate)
//
// for a compute op overlapped for `overlap` seconds by a collective of C blocks, on a GPU of N SMs and HBM
// bandwidth B, m the share of the op's time in streaming (HBM-bound) kernels, and the collective sending its
// wire bytes over its duration. Overlaps with several collectives add. The blocks C are NCCL's channels, two per
// ring of the search: 2 x round(per-GPU bandwidth / 20 GB/s) inside a machine (NCCL's per-channel NVLink rate,
// SM80_NVLINK_BW; 24 at most, as NCCL logs show on A100 and H100 NVSwitch boards; 2 over PCIe), 2 per NIC the
// machine's ranks leave through across machines (16 on a DGX with 8 NICs, 2 with one: NVIDIA/nccl #689), 16 for
// NVLS (nvls.cc), and for
// Transformer Engine's overlapped TP collectives its userbuffers' SMs (1 for the ring-exchange all-gather, 16
// for the others: transformer_engine/pytorch/module/base.py).
//
// Applied after the engine, first order: each compute op is lengthened by its delta, computed from the
// overlaps on its class's timeline, and the step is timed again by the StepGraph's rules with every
// communication op keeping the duration the engine gave it (its contention included); the contention is not
// played again at the shifted times.
#pragma once

#include "sim/timeline.hpp"
#include "topology/catalog.hpp"
#include "topology/routing.hpp"
#include "topology/topology.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim {

// NCCL blocks (SMs) a collective `op` of `rank` takes, on `topology` (`router`: its routes).
int collective_blocks(const workloads::StepGraph& g, int rank, const workloads::CollectiveOp& op,
                      const topology::Topology& topology, topology::Router& router);

// Per class, per op: the compute time each compute op loses to the communication overlapping it on `t` (zero
// for other ops).
std::vector<std::vector<Seconds>> interference(const workloads::StepGraph& g, const Timeline& t,
                                               const topology::Topology& topology, const topology::GpuSpec& gpu);

// `t` with every compute op lengthened by its interference and the step timed again (above); `t` itself when
// nothing overlaps. ClassTimeline::interference holds each class's total; each played rank's timeline becomes its
// class's (the ranks of a class differ only by the contention they met, which the classes' slowest rank holds).
Timeline with_interference(const workloads::StepGraph& g, Timeline t, const topology::Topology& topology,
                           const topology::GpuSpec& gpu);

}  // namespace dtsim::sim
