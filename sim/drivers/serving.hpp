// `dtsim run` on an `inference:` scenario (serving.cpp).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"
#include <string>
#include <vector>
#include "topology/topology.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::drivers {

// What a serving pass's play gives: its time, each class's compute time, how the network was timed.
struct PassTiming {
  double time_s = 0;
  std::vector<double> compute_busy_s;   // parallel to the graph's classes
  std::string network_model;
  std::string trace;                    // its Perfetto trace (results/trace.hpp) when asked for, else empty
};
// How the scenario's engine plays one graph on the built topology (SimGrid initialises once per process: the
// caller plays each pass in its own).
using PlayServing = std::function<PassTiming(const workloads::StepGraph&, const topology::Topology&, bool trace)>;

// The serving result object (DESIGN.md: ttft_s, tpot_s, tokens_per_s, tokens_per_s_per_gpu, max_batch_that_fits;
// with phases {prefill, decode} each with its time, FLOPs, bytes, intensity and roofline regime, and memory).
// With `trace_path`, the batch's prefill and one decode step after it are written there as one Perfetto trace.
nlohmann::json simulate_serving(const scenario::Scenario& s, const PlayServing& play, const std::string& trace_path = "");

// The served stream of `inference.requests` on the built cluster `topo` (serving_stream.cpp): adds to `row`
// DESIGN.md's p50/p99 fields, `throughput_tokens_per_s` and a `stream` object (with `disaggregation` when the
// scenario splits prefill and decode).
void serve_stream(const scenario::Scenario& s, const topology::Topology& topo, nlohmann::json& row);

// What `tokens_per_s` output tokens cost a million at `usd_per_hour` (a static batch's rate, or a stream's served).
double usd_per_million_tokens(double usd_per_hour, double tokens_per_s);

// The KV blocks a replica of `s`'s stream has room for beside its weights and decode workspace (what the stream
// uses unless inference.scheduler.kv_blocks is given); InputError when there is none.
long long stream_kv_blocks_that_fit(const scenario::Scenario& s);

}  // namespace dtsim::drivers
