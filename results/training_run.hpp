// A whole training run, not a perfect step times the step count: failures interrupt it, each costing a restart
// and the work since the last checkpoint, and checkpoints cost time of their own (DESIGN.md's `training_run`).
//
// The model is Daly's (2006) for a job that checkpoints every `interval` seconds of work and fails as a Poisson
// process of rate 1/M summed over the cluster's components: the expected wall time of `work` seconds of steps is
//   T = M e^(R/M) (e^((tau + delta)/M) - 1) work / tau,
// tau the work between checkpoints, delta the time a checkpoint stops training, R the time from a failure to
// training again (detection, restart, reading the checkpoint). The interval defaults to Daly's optimum.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "topology/units.hpp"

namespace dtsim::results {

// What a failure rate counts in: each GPU, each server (host), each NIC, each switch.
enum class FailureScope { Gpu, Node, Nic, Switch };
std::string_view to_string(FailureScope s);

// One class of interruption: its rate per component-hour, what component it counts, and where the rate comes from.
struct FailureClass {
  std::string component;
  double per_hour = 0;
  FailureScope scope = FailureScope::Gpu;
  std::string source;
  bool repair = true;   // the failure takes its server out until repaired (hardware); false: a restart clears it
};

// The default classes: Llama 3's 54-day snapshot on 16,384 H100 (Meta 2024, Table 5), each class's count over
// the component-hours of that cluster.
const std::vector<FailureClass>& default_failure_classes();

// How many of each component the cluster has.
struct ClusterCounts {
  int gpus = 0;
  int nodes = 0;
  int nics = 0;
  int switches = 0;
};

// The cluster's failure rate per hour: each class's rate times its component count; `repair_only`: of the classes
// that take a server out until repaired.
double failures_per_hour(const std::vector<FailureClass>& classes, const ClusterCounts& counts, bool repair_only = false);

// What a failure that takes a server out does to the job (`reliability.on_failure`):
//  - Restart: the job restarts from its last checkpoint on a healthy server; without `repair` the facility's pool
//    gives one at once (as the jobs of Llama 3 and MegaScale, which ran inside larger clusters), with `repair` the
//    job waits for its own server's repair before restarting;
//  - Spare: the job holds `spares` servers of its own and restarts on one; a repaired server returns to the spares;
//    with none free the job waits for the next repair;
//  - Shrink: the job restarts without the replicas the server held (`replicas_per_server` of its `dp`), running
//    narrower with the global batch kept; a repaired server rejoins at the next checkpoint, at the cost of another
//    restart.
enum class OnFailure { Restart, Spare, Shrink };
std::string_view to_string(OnFailure m);
struct Recovery {
  OnFailure mode = OnFailure::Restart;
  std::optional<Seconds> repair;   // how long a failed server is out
  int spares = 0;                  // servers
  int dp = 1;                      // data-parallel replicas
  double replicas_per_server = 1;  // replicas a server out stops (at least 1)
};

// Daly's (2006) optimum interval of work between checkpoints for a checkpoint cost `delta` and a mean time between
// failures `mtbf`: sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta for delta < 2M, else M.
// Young's (1974) first-order sqrt(2 delta M) is its limit for delta << M.
Seconds daly_interval(Seconds delta, Seconds mtbf);

struct RunInputs {
  Seconds work;                      // steps x step time
  double failures_per_hour = 0;      // 0: none
  Seconds checkpoint_block;          // what a checkpoint stops training for (the write, or the copy off the GPU)
  Seconds checkpoint_lag;            // an async checkpoint's write after the copy: a failure within it loses one more interval's worth
  Seconds restart;                   // detection and restart, reading the checkpoint included
  std::optional<Seconds> interval;   // work between checkpoints; nullopt: Daly's optimum
  double repair_failures_per_hour = 0;   // of failures_per_hour, those that take a server out
  Recovery recovery;
};

struct TrainingRun {
  double goodput = 1;                // work / wall time
  double interruptions = 0;          // expected failures over the run
  double interruptions_per_day = 0;
  Seconds interval;                  // work between checkpoints
  bool interval_auto = false;
  Seconds checkpoint;                // a checkpoint's blocking time
  double checkpoint_overhead = 0;    // share of wall time spent checkpointing
  Seconds lost_work;                 // work redone after failures, expected
  Seconds restarts;                  // time restarting, expected
  Seconds repair_wait;               // time waiting for a repair (no spare free, or no pool), expected
  Seconds shrink_loss;               // time lost to running narrower (shrink), expected
  Seconds wall;
};

// The expected run (Daly's closed form above); without failures the wall time is the work and its checkpoints.
// A failure's restart R is the mean over classes (Restart with `repair`: a server's repair added to the restart of
// the classes that take one out). Servers out for repair are an M/G/infinity queue: N ~ Poisson(a), a the rate of
// such failures times `repair`. Spare: servers fail only while the job runs, so it stops at spares + 1 out, an
// Erlang loss system (Erlang 1917): wall / (1 - B(spares + 1, a)). Shrink:
// it runs at E[max(0, 1 - N L / dp)] of its speed, and each repair's rejoin costs a restart.
TrainingRun expected_run(const RunInputs& in);

// One run drawn at random (seeded, reproducible byte for byte on one build): failures arrive as the Poisson process
// of `classes` scaled by `counts`, each costing the restart and the work since the last checkpoint; a failure during a
// restart starts it again; servers out wait their repair as `in.recovery` says. Its mean over many seeds is
// expected_run's wall time (Daly's form is exact for this process under Restart without repair).
struct SampledFailure {
  double at_s = 0;          // wall time of the failure
  std::string component;    // the class that failed
  double lost_s = 0;        // work since the last checkpoint, redone
};
struct SampledRun {
  unsigned long long seed = 0;
  Seconds wall;
  double goodput = 1;
  std::vector<SampledFailure> failures;
};
SampledRun sample_run(const RunInputs& in, const TrainingRun& expected, const std::vector<FailureClass>& classes,
                      const ClusterCounts& counts, unsigned long long seed);
// {seed, wall_days, goodput, interruptions, failures: [{at_days, component, lost_s}]}
nlohmann::json sampled_run_json(const SampledRun& s);

// DESIGN.md's `training_run`: {goodput, interruptions, interruptions_per_day, checkpoint_interval_s,
// checkpoint_interval_auto, checkpoint_s, checkpoint_overhead, lost_work_s, restart_s_total, wall_days, gpu_hours,
// total_usd, total_MWh}. The cluster is held, and priced and powered, for the whole wall time: `ideal_usd` and
// `ideal_MWh` (the perfect run's, from `cost` and `energy`; null when unpriced) are scaled by wall / work.
// `gpus`: the job's; `held_gpus`: with its spares, what is paid for and powered.
nlohmann::json training_run_json(const TrainingRun& r, const Recovery& recovery, int gpus, int held_gpus,
                                 std::optional<double> ideal_usd, std::optional<double> ideal_MWh);

}  // namespace dtsim::results
