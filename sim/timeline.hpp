// What an engine returns: when each op of each rank class started and ended, and the step time.
#pragma once

#include <vector>

#include "topology/units.hpp"

namespace dtsim::sim {

struct OpTime {
  Seconds start;
  Seconds end;
};

struct ClassTimeline {
  std::vector<OpTime> ops;     // parallel to RankClass::ops
  Seconds end;                 // when the class's last op ended
  Seconds compute_busy;        // sum of its compute ops' durations
};

struct Timeline {
  std::vector<ClassTimeline> classes;   // parallel to StepGraph::classes
  Seconds step_time;                    // the latest end over all classes
};

}  // namespace dtsim::sim
