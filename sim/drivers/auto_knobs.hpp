// The knobs a scenario leaves to `auto` (Scenario::auto_keys: training.micro_batch, parallelism.vpp,
// training.recompute, training.offload_layers), chosen as a competent engineer chooses them for the scenario's framework: the plan search
// (sim/search/) restricted to those knobs, every other key as the scenario gives it or its framework derives it,
// the fastest plan on the analytic engine among those that fit in memory, ties to the framework's default (the
// first in the search's order: micro-batch 1, no interleaving, no recomputation). When none fits, the choice that
// misses memory by the least, so that the run reports by how much.
#pragma once

#include "sim/scenario/scenario.hpp"

namespace dtsim::drivers {

// `s` with its auto knobs chosen (Scenario::auto_chosen says what; auto_keys is then empty). A scenario with none
// left is returned as it is. InputError (located) when its cluster cannot be built.
scenario::Scenario resolve_auto(scenario::Scenario s);

// The interleaving depths auto tries on `pp` stages of `layers` layers under framework `f`: every depth that
// gives each virtual stage the same whole number of layers (one layer a chunk included), as Megatron's
// --num-layers-per-virtual-pipeline-stage requires (torchtitan: also the search's 1 to 8); none (1) where the
// framework has no interleaved schedule for the plan (DeepSpeed's pipeline engine; Megatron-LM 2021 and 2022 at two
// stages or fewer).
std::vector<int> auto_vpp_choices(int layers, int pp, workloads::Framework f);

}  // namespace dtsim::drivers
