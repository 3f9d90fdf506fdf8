// The subcommands of the `dtsim` program. Each returns the process exit status; errors in input surface as
// InputError and are turned into one line and status 2 by main().
#pragma once

#include <string>
#include <vector>

#include "sim/cli/scenario.hpp"

namespace dtsim::cli {

enum class Format { Table, Json };

struct ScenarioArgs {
  std::string file;                 // empty = the embedded default scenario
  std::vector<std::string> sets;    // "key=value"
  Format format = Format::Table;
};

int run_command(const ScenarioArgs& args);
int topo_command(const ScenarioArgs& args, const std::string& dot_file);
int catalog_command(Format format);
// The memory plan per GPU of each scenario document (DESIGN.md's `memory` object); needs a `model` section.
int memory_command(const ScenarioArgs& args);

// The step graph of each scenario document: ops per rank class, collectives, FLOPs, and the compute-only
// timeline; optionally as Graphviz DOT (`dot_file`), with one op per kernel when `kernels`.
int graph_command(const ScenarioArgs& args, const std::string& dot_file, bool kernels);

// "key=value" -> Override; throws InputError for a malformed one.
Override parse_set(const std::string& text);

}  // namespace dtsim::cli
