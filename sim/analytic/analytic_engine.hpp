// The analytic engine: plays a StepGraph with closed-form communication costs and no contention.
//
// Without contention every rank of a class behaves the same, so one representative per class is played.
// Rules (StepGraph's): compute ops one at a time in list order; communication ops on one group in list order;
// a collective starts when every member class has reached it; a recv ends when its send has arrived.
#pragma once

#include <functional>

#include "sim/timeline.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim {

struct CommCosts {
  // Duration of a collective over the ranks `group` (ascending), from its start: a function of the op's kind,
  // bytes, purpose and the group alone (play_analytic asks once per class and such key).
  std::function<Seconds(const workloads::CollectiveOp&, const std::vector<int>& group)> collective;
  // Duration of a point-to-point transfer from rank `from` to rank `to`, from the send's start to its arrival: a
  // function of its bytes and the two ranks alone.
  std::function<Seconds(const workloads::SendOp&, int from, int to)> transfer;
};

// Costs that are zero: the timeline of compute and dependencies alone (the pipeline bubble, for one).
CommCosts free_communication();

Timeline play_analytic(const workloads::StepGraph& graph, const CommCosts& costs);

// Every op's duration given by (class, op index): compute ops, collectives (from their start) and sends (from
// their start to their arrival); receives wait for their send as ever.
using OpDuration = std::function<Seconds(std::size_t cls, std::size_t op)>;

// The same rules with the durations given: a step re-timed with some ops lengthened (sim/analytic/interference.hpp).
Timeline replay_analytic(const workloads::StepGraph& graph, const OpDuration& duration);

}  // namespace dtsim::sim
