// What an engine returns: when each op started and ended, per rank class (and per rank for engines that expand
// ranks), the transfers that crossed the network, and the step time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "topology/units.hpp"

namespace dtsim::sim {

struct OpTime {
  Seconds start;
  Seconds end;
};

struct ClassTimeline {
  std::vector<OpTime> ops;     // parallel to RankClass::ops: the class's slowest rank (the one that ends last)
  Seconds end;                 // when the class's last op ended
  Seconds compute_busy;        // sum of its compute ops' durations
  Seconds interference{};      // compute time its ops lost to the communication beside them
                               // (sim/analytic/interference.hpp)
};

// One rank's ops (parallel to its class's op list); filled by engines that play every rank.
struct RankTimeline {
  int rank = 0;
  std::vector<OpTime> ops;
  int same_as = -1;   // >= 0: the rank ran the timeline of rank `same_as` (symmetry), and `ops` is empty
};

// One network transfer as played (a collective's step transfer or a pipeline send), for link-load counters.
struct TransferRecord {
  topology::NodeId src = 0;
  topology::NodeId dst = 0;
  Bytes bytes;
  Seconds start;
  Seconds end;
};

struct Timeline {
  std::vector<ClassTimeline> classes;   // parallel to StepGraph::classes
  std::vector<RankTimeline> ranks;      // empty for the analytic engine
  std::vector<TransferRecord> transfers;   // empty unless the engine was asked to record them
  Seconds step_time;                    // the latest end over all classes
  std::string network_model;            // how communication was timed, for the output
  // SimGrid collective memoization (SimgridOptions::memoize): collectives replayed from the cache, and
  // collectives played in full because their group instance shares a link with other traffic.
  std::size_t memoized_collectives = 0;
  std::size_t memo_refused_collectives = 0;
  std::size_t memo_shapes = 0;   // collectives played apart, one per (plan, sub-topology) of isolated groups
  // Collectives played with aggregated flows (SimgridOptions::aggregate).
  std::size_t aggregated_collectives = 0;
  // Symmetry across TP ranks (SimgridOptions::symmetry): what was played, or why it did not apply.
  std::string symmetry;
};

}  // namespace dtsim::sim
