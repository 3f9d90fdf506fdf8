// The knobs a scenario leaves to `auto` (Scenario::auto_keys: training.micro_batch, parallelism.vpp,
// training.recompute), chosen as a competent engineer chooses them for the scenario's framework: the plan search
// (sim/search/) restricted to those knobs, every other key as the scenario gives it or its framework derives it,
// the fastest plan on the analytic engine among those that fit in memory, ties to the framework's default (the
// first in the search's order: micro-batch 1, no interleaving, no recomputation). When none fits, the choice that
// misses memory by the least, so that the run reports by how much.
#pragma once

#include "sim/cli/scenario.hpp"

namespace dtsim::cli {

// `s` with its auto knobs chosen (Scenario::auto_chosen says what; auto_keys is then empty). A scenario with none
// left is returned as it is. InputError (located) when its cluster cannot be built.
Scenario resolve_auto(Scenario s);

// The interleaving depths auto tries on `pp` stages of `layers` layers: the search's 1 to 8, and every depth
// that gives each virtual stage the same whole number of layers (one layer a chunk included), as Megatron-Core's
// --num-layers-per-virtual-pipeline-stage requires.
std::vector<int> auto_vpp_choices(int layers, int pp);

}  // namespace dtsim::cli
