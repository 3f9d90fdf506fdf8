// Shared by the SimGrid engine's test binaries: results out of child processes, small topologies, closed forms.
#pragma once

#include <doctest/doctest.h>
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "sim/analytic/analytic_engine.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "sim/simgrid/simgrid_platform.hpp"
#include "sim/simgrid/simgrid_player.hpp"
#include "topology/builders.hpp"
#include "topology/error.hpp"
#include "topology/routing.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using topology::IntraKind;
using topology::NodeId;
using workloads::CollectiveKind;
#include "workloads/gpt_job.hpp"

namespace simgrid_support {

inline constexpr double kTight = 1e-6;   // relative tolerance of the analytic cross-checks

// Relative closeness (doctest::Approx adds an absolute 1e-6 by default: far too loose for microseconds).
doctest::Approx near(double expected) { return doctest::Approx(expected).epsilon(kTight).scale(0); }

// ---- results out of the child process -------------------------------------------------------------------------

inline std::string pack(const std::vector<double>& v) {
  std::string s(v.size() * sizeof(double), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

inline std::vector<double> unpack(const std::string& s) {
  std::vector<double> v(s.size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(double));
  return v;
}

inline std::vector<double> isolated(const std::function<std::vector<double>()>& work) {
  return unpack(sim::run_isolated([&] { return pack(work()); }));
}

// ---- topologies ----------------------------------------------------------------------------------------------

inline topology::Link make(NodeId a, NodeId b, BytesPerSecond bw, Seconds lat, double eff) {
  return topology::Link{a, b, bw, lat, eff, "custom", false, false, {}};
}

inline NodeId gpu(topology::Topology& t, int i) {
  return t.add_node(topology::Node{topology::NodeKind::Gpu, "gpu" + std::to_string(i), 0, std::nullopt});
}

// gpu0 ─── gpu1: 25 GB/s per direction, 1 us, efficiency 0.8
inline topology::Topology two_gpus() {
  topology::Topology t;
  gpu(t, 0);
  gpu(t, 1);
  t.add_link(make(0, 1, gigabytes_per_second(25), microseconds(1), 0.8));
  return t;
}

inline topology::Topology built(IntraKind intra, int gpus, std::string_view gpu_name = "a100-sxm4-80gb") {
  return topology::build_cluster(topology::default_cluster(gpu_name, intra, 1, gpus)).topology;
}

// Recorded transfers' count, bytes and summed durations.
inline std::array<double, 3> transfer_totals(const sim::Timeline& t) {
  double bytes = 0, busy = 0;
  for (const auto& r : t.transfers) {
    bytes += r.bytes.value();
    busy += (r.end - r.start).value();
  }
  return {static_cast<double>(t.transfers.size()), bytes, busy};
}

// `nodes` NVSwitch nodes of `gpus` A100s on one switch, with `nics` NICs per node (0: one per GPU).
inline topology::Topology nodes_on_a_switch(int nodes, int gpus, int nics) {
  auto spec = topology::default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, nodes, gpus);
  spec.inter = topology::InterKind::Switch;
  spec.nics_per_node = nics;
  return topology::build_cluster(spec).topology;
}

double rate(const topology::Link& l) { return (l.bandwidth * l.efficiency).value(); }

// ---- hand-built lowerings (the step rule of collective.hpp) -------------------------------------------------

// Ring all-reduce: 2(n-1) steps, rank i sends S/n to rank i+1 in each.
inline sim::Lowered ring_allreduce(Bytes bytes, int n, Seconds latency, Seconds step_latency) {
  sim::Lowered l;
  l.steps = 2 * (n - 1);
  l.latency = latency;
  l.step_latency = step_latency;
  for (int step = 0; step < l.steps; ++step)
    for (int i = 0; i < n; ++i) l.transfers.push_back(sim::Transfer{i, (i + 1) % n, bytes / n, step, -1, {}});
  return l;
}

inline sim::flow::LowerFn ring_lowering(Seconds latency, Seconds step_latency) {
  return [=](CollectiveKind, Bytes bytes, const sim::GroupLayout& layout) {
    return ring_allreduce(bytes, static_cast<int>(layout.machine.size()), latency, step_latency);
  };
}

// The ring's closed form without contention: every step moves S/n over a path of latency `hop` at `rate`.
inline double ring_time(double bytes, int n, double latency, double step_latency, double hop, double bw) {
  return latency + 2.0 * (n - 1) * (hop + step_latency) + 2.0 * (n - 1) / n * bytes / bw;
}

inline std::vector<int> first_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

inline sim::GroupLayout one_machine(int n) { return sim::GroupLayout{std::vector<int>(static_cast<std::size_t>(n), 0), false}; }

}  // namespace simgrid_support
