// What the subcommands share: loading the scenario of the arguments, the drivers they call, writing files.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/files.hpp"
#include "sim/cli/commands.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/run.hpp"
#include "topology/error.hpp"

namespace dtsim::cli {

std::vector<scenario::Scenario> load(const ScenarioArgs& args, bool keep_invalid_points = false);

// A sweep's default output directory: `out/<scenario name>/`, the name without the point's suffix.
std::string default_out(const scenario::Scenario& s);

}  // namespace dtsim::cli
