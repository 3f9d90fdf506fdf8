// The host's side of a training step: the time the CPU thread driving a GPU takes to issue a layer pass, where
// the GPU cannot run ahead of it.
//
// A framework in eager mode (PyTorch without CUDA graphs) issues every kernel from Python: the host runs ahead of
// the GPU and hides its own time as long as nothing makes it wait. An MoE layer does: Megatron-Core's token
// dispatchers copy the routing's counts to the host every layer pass (the all-to-all dispatcher's split sizes and
// the grouped GEMM's rows per expert, `tensor.cpu()`: NVIDIA/Megatron-LM issue 1598 and pull request 3496, "the
// AlltoAll dispatcher and GroupedGEMM rely on CPU-resident tensors ... host synchronizations"; DeepEP and
// HybridEP, the received token count: pull requests 5258 and 6999). The host then waits for the GPU, and the GPU
// for the host: a layer pass lasts at least the host's time to issue it (HostOp).
//
// The host's time per MoE layer pass (Megatron-Core with Transformer Engine, eager):
//  - backward over forward 1.75: Transformer Engine's grouped MLP op measured 1.2 ms of CPU time forward and
//    2.1 ms backward (NVIDIA/TransformerEngine issue 2897, 2026-04, GB200), the one split measured;
//  - forward kMoeHostForward, fitted on one row: Megatron-Bridge 26.04.01's Qwen3-30B-A3B on 16 H100 (EP 16,
//    HybridEP, fp8; scenarios/validation/moe-h100.yaml, qwen3-30b-16), the other six rows of that table checked
//    against it. It agrees with what NVIDIA measured around it: its CUDA-graph guide finds launch-bound mid-sized
//    MoE pretraining 15-25 % faster with the attention, the router and the dispatcher's preprocessing graphed
//    (Megatron-Bridge docs/training/cuda-graphs.md; its Qwen3-30B-A3B run, TP 2, PP 2, EP 4: 623 to 484 ms an
//    iteration); and on the all-to-all dispatcher, whose exchange keeps the GPU busier than the host, the same
//    graphs gained nothing (Megatron-Bridge pull request 3868: 41.36 s eager, 42.00 s graphed).
//  - a recompute pass the forward's time when it reruns the dispatch (the whole layer recomputed), else none:
//    recomputing norms, activations or attention reruns nothing that waits on the host.
// A pass lasts max(its GPU time, its host time): what follows it waits for both. Dense layers get none: nothing
// makes their host wait, so it runs ahead (a model small enough for its host to be the bound over a whole step is
// not modelled). CUDA graphs over a whole MoE layer (sync-free dispatch, 2026) would remove it; dtsim has no such
// knob.
#pragma once

#include "topology/units.hpp"
#include "workloads/kernels.hpp"

namespace dtsim::workloads {

inline constexpr Seconds kMoeHostForward{3.26e-3};        // 3.26 ms, fitted (above)
inline constexpr double kHostBackwardRatio = 2.1 / 1.2;     // NVIDIA/TransformerEngine issue 2897

// The host's time to issue one MoE layer pass `pass`; a recompute pass's only when it `dispatches` (reruns the
// token exchange).
Seconds moe_host_time(Pass pass, bool dispatches);

}  // namespace dtsim::workloads
