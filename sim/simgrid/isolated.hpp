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

// While a simulation runs past a second, run_isolated draws a progress line on standard error when it is a
// terminal: the share of the step's ops played and the time left at that pace. A process whose terminal has
// another owner (a sweep's worker, under the sweep's own progress bar) calls this first to draw none.
void no_progress_line();

}  // namespace dtsim::sim
