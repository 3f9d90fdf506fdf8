// Internal to sim/: the one step every collective algorithm is made of, the two ways of combining schedules, and
// the algorithm builders (collective_algorithms.cpp). lower() (collective.cpp) picks a builder from its table.
//
// A builder describes traffic only: "rank a sends b bytes to rank c in step k"; whether the receiver reduces
// the chunk into its buffer or copies it is the algorithm's meaning, not a cost (reductions run at GPU memory
// bandwidth and are not modelled). The step rule (collective.hpp) is the "wait".
#pragma once

#include <utility>
#include <vector>

#include "sim/collectives/collective.hpp"

namespace dtsim::sim::detail {

using Ranks = std::vector<int>;   // group ranks taking part, in the order the algorithm walks them

// Transfers in steps 0..steps-1, every step holding at least one transfer.
struct Schedule {
  std::vector<Transfer> transfers;
  int steps = 0;
};

// The one step: in step `step`, `t.src` sends `t.bytes` to `t.dst` (t.step is overwritten).
void send(Schedule& s, int step, Transfer t);
void send(Schedule& s, int step, int src, int dst, Bytes bytes);
// `second` runs after `first`: its steps are numbered after first's.
Schedule then(Schedule first, const Schedule& second);
// `a` and `b` run at the same time, on the same step numbers (disjoint sub-groups of a hierarchical phase).
Schedule beside(Schedule a, const Schedule& b);

// What a builder is asked for: `bytes` (the buffer as nccl-tests counts it) over `ranks`.
struct Request {
  Ranks ranks;
  Bytes bytes;
  const GroupLayout* layout = nullptr;
  const CollectiveTuning* tuning = nullptr;

  [[nodiscard]] int size() const { return static_cast<int>(ranks.size()); }
  [[nodiscard]] Request with(Ranks r, Bytes b) const { return {std::move(r), b, layout, tuning}; }
};
using Builder = Schedule (*)(const Request&);

// all-reduce as reduce-scatter then all-gather: one composition for every algorithm that has both halves.
template <Builder ReduceScatter, Builder AllGather>
Schedule reduce_scatter_then_all_gather(const Request& r) {
  return then(ReduceScatter(r), AllGather(r));
}

// One step of the ring reduce-scatter (and all-gather): every step of those moves the same transfers.
Schedule ring_step(const Request& r);
Schedule ring_reduce_scatter(const Request& r);
Schedule ring_all_gather(const Request& r);
Schedule chain_broadcast(const Request& r);
Schedule direct_exchange(const Request& r);   // reduce-scatter, all-gather and all-to-all: S/n to every peer
Schedule direct_broadcast(const Request& r);
Schedule halving_reduce_scatter(const Request& r);
Schedule doubling_all_gather(const Request& r);
Schedule tree_all_reduce(const Request& r);
Schedule tree_broadcast(const Request& r);
Schedule nvls_all_reduce(const Request& r);
Schedule hierarchical_reduce_scatter(const Request& r);
Schedule hierarchical_all_gather(const Request& r);

// The request's ranks grouped by machine: machines in ascending id, ranks in request order.
std::vector<Ranks> ranks_by_machine(const Request& r);

}  // namespace dtsim::sim::detail
