// Helpers shared by the collective lowering tests (collective_test.cpp per algorithm, collective_choice_test.cpp
// across them) and the timing tests against closed forms and nccl.md (collective_timing_test.cpp): layouts,
// per-rank totals, and a contention-free playback of the step rule.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/collectives/collective.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"

namespace collective_support {

using namespace dtsim;
using namespace dtsim::sim;
using namespace dtsim::literals;
using workloads::CollectiveKind;

inline constexpr double kExact = 1e-12;
inline constexpr std::array kKinds = {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                                      CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                                      CollectiveKind::Broadcast};
inline constexpr std::array kAlgorithms = {Algorithm::Auto,   Algorithm::Ring,
                                           Algorithm::Tree,   Algorithm::Direct,
                                           Algorithm::HalvingDoubling,
                                           Algorithm::Nvls,   Algorithm::Hierarchical};

inline bool close(double got, double want, double tolerance = kExact) {
  return std::abs(got - want) <= tolerance * std::max(1.0, std::abs(want));
}

inline GroupLayout on_machines(std::vector<int> machine, bool nvls = false) { return {std::move(machine), nvls}; }

// n ranks on one machine (id 0).
inline GroupLayout one_machine(int n, bool nvls = false) {
  return on_machines(std::vector<int>(static_cast<std::size_t>(n), 0), nvls);
}

// `machines` machines of `per_machine` consecutive ranks each.
inline GroupLayout blocks(int machines, int per_machine) {
  std::vector<int> m;
  for (int r = 0; r < machines * per_machine; ++r) m.push_back(r / per_machine);
  return on_machines(std::move(m));
}

// Bytes each rank sends and receives, in units of the buffer S.
struct Totals {
  std::vector<double> sent;
  std::vector<double> received;
};

inline Totals totals(const Lowered& l, int n, Bytes s) {
  Totals t{std::vector<double>(static_cast<std::size_t>(n)), std::vector<double>(static_cast<std::size_t>(n))};
  for (const Transfer& x : l.transfers) {
    if (x.src != kSwitch) t.sent[static_cast<std::size_t>(x.src)] += x.bytes / s;
    if (x.dst != kSwitch) t.received[static_cast<std::size_t>(x.dst)] += x.bytes / s;
  }
  return t;
}

// Every rank sends and receives exactly `share` of the buffer.
inline void check_every_rank_moves(const Lowered& l, int n, double share) {
  const Totals t = totals(l, n, 1_GiB);
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(close(t.sent[static_cast<std::size_t>(r)], share));
    CHECK(close(t.received[static_cast<std::size_t>(r)], share));
  }
}

inline Lowered lower_on(CollectiveKind kind, const GroupLayout& g, Algorithm a, Bytes s = 1_GiB) {
  return lower(kind, s, g, a);
}

// An endpoint: a group rank, or the switch of a machine.
using Endpoint = std::pair<int, int>;
inline Endpoint source(const Transfer& t) { return {t.src, t.src == kSwitch ? t.machine : -1}; }
inline Endpoint destination(const Transfer& t) { return {t.dst, t.dst == kSwitch ? t.machine : -1}; }

// For k > 0, the sender of a step-k transfer has some step k-1 transfer into or out of it: the step rule then
// chains the steps at every rank (true of ring, direct, halving-doubling, hierarchical, NVLS and the chain).
inline bool every_step_waits_at_its_sender(const Lowered& l) {
  std::set<std::tuple<int, int, int>> touched;   // (step, endpoint)
  for (const Transfer& t : l.transfers) {
    touched.emplace(t.step, source(t).first, source(t).second);
    touched.emplace(t.step, destination(t).first, destination(t).second);
  }
  return std::ranges::all_of(l.transfers, [&](const Transfer& t) {
    return t.step == 0 || touched.contains({t.step - 1, source(t).first, source(t).second});
  });
}

// Contention-free playback of the step rule: a transfer of step k from endpoint e starts `step_latency` after
// the later of the collective's start (`latency`) and the end of every step k-1 transfer into or out of e; it
// lasts `hop` + bytes / min(bandwidth, its rate cap). Exact when no two transfers of a step share a link
// direction (each rank one link per direction, or its own port on a switch).
inline Seconds play(const Lowered& l, BytesPerSecond bandwidth, Seconds hop) {
  std::map<Endpoint, Seconds> previous;   // per endpoint, the end of its transfers of the previous step
  Seconds end = l.latency;
  for (int step = 0; step < l.steps; ++step) {
    std::map<Endpoint, Seconds> current;
    for (const Transfer& t : l.transfers) {
      if (t.step != step) continue;
      const auto waited = previous.find(source(t));
      const Seconds start = std::max(l.latency, waited == previous.end() ? Seconds(0) : waited->second);
      const BytesPerSecond rate = t.rate ? std::min(bandwidth, *t.rate) : bandwidth;
      const Seconds done = start + l.step_latency + hop + t.bytes / rate;
      for (const Endpoint& e : {source(t), destination(t)}) current[e] = std::max(current[e], done);
      end = std::max(end, done);
    }
    previous = std::move(current);
  }
  return end;
}

// The operations each algorithm implements (auto implements all): stated here independently of the library.
inline bool implements(Algorithm a, CollectiveKind kind) {
  using K = CollectiveKind;
  switch (a) {
    case Algorithm::Auto:
    case Algorithm::Direct: return true;
    case Algorithm::Ring: return kind != K::AllToAll;
    case Algorithm::Tree: return kind == K::AllReduce || kind == K::Broadcast;
    case Algorithm::HalvingDoubling:
    case Algorithm::Hierarchical: return kind == K::AllReduce || kind == K::AllGather || kind == K::ReduceScatter;
    case Algorithm::Nvls: return kind == K::AllReduce;
  }
  return false;
}

// The InputError `f` throws, if it throws one.
template <class F>
inline std::optional<InputError> input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  return std::nullopt;
}

inline int log2_of(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace collective_support
