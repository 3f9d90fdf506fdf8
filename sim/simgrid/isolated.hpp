// run_isolated: one SimGrid simulation per child process (isolated.cpp). Part of the SimGrid engine's public
// interface (simgrid_engine.hpp includes it).
#pragma once

#include <functional>
#include <string>

namespace dtsim::sim {

// Runs `work` in a forked child and returns what it returned (any bytes). An exception in the child comes back
// as the same message: InputError as InputError, anything else as std::runtime_error.
std::string run_isolated(const std::function<std::string()>& work);

}  // namespace dtsim::sim
