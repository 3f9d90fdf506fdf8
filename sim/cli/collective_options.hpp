// `dtsim collective`'s command line: its options on a CLI11 app, and their values checked and turned into what
// the command times. Shared by the program (main.cpp) and the command-line fuzz target (tests/fuzz/).
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/cli/commands.hpp"
#include "topology/cluster.hpp"

namespace dtsim::cli {

// Adds the `collective` subcommand to `app`, its options writing into `args`.
CLI::App* add_collective_command(CLI::App& app, CollectiveArgs& args);

// The parsed options, checked: InputError naming the flag for any value the command cannot run.
struct CollectiveRequest {
  workloads::CollectiveKind kind;
  sim::Algorithm algorithm;
  topology::ClusterSpec cluster;
  std::vector<Bytes> sizes;
  std::string type;   // nccl-tests' datatype name, and its size
  int type_bytes = 0;
  std::string redop;  // "none" for the collectives that do not reduce
  int root = -1;      // broadcast's root; -1 otherwise
};
CollectiveRequest check_collective(const CollectiveArgs& args);

}  // namespace dtsim::cli
