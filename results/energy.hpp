// Energy of a simulated step (issue: time, cost and energy to train). Per GPU, from its timeline: compute-bound
// kernel time at PowerModelSpec::compute_bound x TDP, memory-bound kernel time (ComputeOp::memory_time) at
// memory_bound x TDP (no less than idle), compute time lost to overlapped communication at the compute-bound
// draw, and the rest of the step (waiting on the network, the pipeline or the slowest rank) at the GPU's idle
// power with a context held. The server around the GPUs (CPUs, memory, fans, NICs) draws what makes the GPUs
// `gpu_share` of it; the network (switches, NICs, optics: the bill of materials) draws its power for the whole
// step; the facility multiplies the IT power by its PUE.
#pragma once

#include "sim/timeline.hpp"
#include "topology/catalog.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::results {

struct StepEnergy {
  Joules gpus;       // every GPU of the step
  Joules servers;    // the servers around them, GPUs apart
  Joules network;    // switches, NICs, optics
  Joules it;         // gpus + servers + network
  Joules facility;   // it x PUE
};

// The GPUs' energy over one step of `t` (every rank of every class, the step lasting t.step_time for all).
Joules gpu_step_energy(const workloads::StepGraph& g, const sim::Timeline& t, const topology::GpuSpec& gpu,
                       const topology::PowerModelSpec& model);

// The step's energy given its GPUs' share, the network's power in service, and the PUE.
StepEnergy step_energy(Joules gpus, Seconds step, Watts network, const topology::PowerModelSpec& model, double pue);

}  // namespace dtsim::results
