// `dtsim graph`: what one training step holds (ops per rank class, collectives by kind and group, FLOPs) and
// how long its compute and pipeline schedule take with communication counted as free.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/timeline.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::results {

// {ranks, micro_batches, granularity, model_flops, hardware_flops, compute_only_step_s (communication free, the
//  host's waits in), bubble_fraction (the pipeline's share of it), host_wait_fraction (the host ops' share),
//  classes: [{stage, ranks, ops, compute_ops, sends, recvs, compute_s, host_ops, host_s,
//             collectives: [{kind, group, count, bytes}]}]}
nlohmann::json step_graph_json(const workloads::StepGraph& g, const sim::Timeline& compute_only);

std::string step_graph_table(const std::string& name, const workloads::StepGraph& g, const sim::Timeline& compute_only);

}  // namespace dtsim::results
