// run_isolated: one SimGrid simulation per child process (isolated.cpp). Part of the SimGrid engine's public
// interface (simgrid_engine.hpp includes it).
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace dtsim::sim {

// The child ran past its limit and was ended (run_isolated's `limit_s`).
struct TimeLimitExceeded : std::runtime_error {
  explicit TimeLimitExceeded(double s) : std::runtime_error("the simulation ran past its time limit"), seconds(s) {}
  double seconds;
};

// Runs `work` in a forked child and returns what it returned (any bytes). An exception in the child comes back
// as the same message: InputError as InputError, anything else as std::runtime_error. With `limit_s`, a child
// still running that many seconds (wall clock) after it started is killed and TimeLimitExceeded thrown.
std::string run_isolated(const std::function<std::string()>& work, std::optional<double> limit_s = std::nullopt);

// How far a simulation in its child has got, reported about once a second from its second second on: the share
// of the step's ops played, the seconds since it started and its limit; then once `finished`, when it was reported.
struct SimulationProgress {
  double share = 0;
  double elapsed_s = 0;
  std::optional<double> limit_s;
  bool finished = false;
  bool requests = false;   // the share is of a served stream's requests (else of a step's ops)
};
using ProgressSink = std::function<void(const SimulationProgress&)>;

// Where run_isolated reports its progress: nowhere by default, since the library prints nothing. The program
// draws a line on a terminal; a process whose terminal has another owner (a sweep's worker, under the sweep's
// own progress bar) sets none. A simulation's child reports to its parent's sink, never its own.
void set_progress_sink(ProgressSink sink);

}  // namespace dtsim::sim
