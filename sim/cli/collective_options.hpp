// `dtsim collective`'s command line: its options on a CLI11 app (their checks are drivers::check_collective).
// Shared by the program (main.cpp) and the command-line fuzz target (tests/fuzz/).
#pragma once

#include <CLI/CLI.hpp>

#include "sim/cli/commands.hpp"

namespace dtsim::cli {

// Adds the `collective` subcommand to `app`, its options writing into `args`.
CLI::App* add_collective_command(CLI::App& app, CollectiveArgs& args);

}  // namespace dtsim::cli
