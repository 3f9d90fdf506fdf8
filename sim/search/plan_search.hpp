// The plan search: every parallel plan of a model on a cluster within what the scenario fixes, the ones that do
// not fit in memory dropped (counted by reason), the rest timed on the analytic engine and ranked.
//
//   space (tp x pp x vpp x zero x micro-batch x recompute x sequence parallelism)
//     -> make(choice): the resolved workload, or why the choice is not a plan (the loader's own checks)
//     -> plan_memory: does it fit?           (cheap: every candidate; once a micro-batch does not fit, the larger
//                                              ones of the same plan are counted as not fitting, unbuilt)
//     -> screen_step: the analytic engine     (the fitting ones; a few micro-batches, the rest extrapolated)
//     -> ranked by step time; the caller confirms the best on the SimGrid engine
//
// screen_step plays the step with the pipeline's micro-batches cut to two counts m1 < m2 (multiples of pp past its
// warm-up) and extrapolates linearly to the real count m: past the warm-up a 1F1B or interleaved schedule adds the
// same time per pp micro-batches, and the step's end (the last gradient reductions, the optimizer) does not
// depend on m. Tested against the full play (tests/sim/plan_search_test.cpp).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/catalog.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/plan.hpp"

namespace dtsim::sim::search {

// One point of the space: what the search varies.
struct PlanChoice {
  int tp = 1;
  int pp = 1;
  int vpp = 1;
  int zero = 0;
  int micro_batch = 1;
  workloads::Recompute recompute = workloads::Recompute::None;
  bool sequence_parallel = false;
  std::array<workloads::Axis, 3> order{workloads::Axis::Tp, workloads::Axis::Dp, workloads::Axis::Pp};   // innermost first
  friend bool operator==(const PlanChoice&, const PlanChoice&) = default;
};

// The values each dimension may take (a dimension the scenario fixes has one), and what decides which
// combinations are plans at all: the GPUs, the model's layers, the global batch.
// Virtual stages per pipeline rank the search tries at most (auto tries deeper equal splits too).
inline constexpr int kMostChunks = 8;

struct SearchSpace {
  std::vector<int> tp, pp, vpp, zero, micro_batch;
  std::vector<workloads::Recompute> recompute;
  std::vector<bool> sequence_parallel;
  std::vector<std::array<workloads::Axis, 3>> order;   // rank orders, tried where they place ranks differently
  int gpus = 1;
  int gpus_per_node = 1;
  int layers = 1;
  int global_batch = 1;
  int cp = 1;   // context parallelism, not searched: dp = gpus / (tp pp cp)
  bool fsdp = false;   // PyTorch FSDP, not searched: its ZeRO-3 runs under pipeline parallelism (DeepSpeed's does not)
  // The software, whose pipeline schedules decide which interleavings run (workloads::framework_interleaves).
  workloads::Framework framework = workloads::Framework::MegatronCore;
};

// What a scenario fixes (nullopt: searched).
struct Fixed {
  std::optional<int> tp, pp, vpp, zero, micro_batch;
  std::optional<workloads::Recompute> recompute;
  std::optional<bool> sequence_parallel;
  std::optional<std::array<workloads::Axis, 3>> order;
};

// Every degree that can split `w`'s model on `gpus` GPUs, `gpus_per_node` to a machine: tp divides a machine and
// the heads, pp divides the GPUs (at most one stage a layer; uneven stages as stage_layers spreads them), dp =
// gpus / (tp pp) is what remains; vpp up to 8 chunks while every chunk holds a layer (pp x vpp <= layers,
// the remainder spread as stage_layers does);
// zero 0 to 3; micro-batches of 1, 2, 4, ... that divide the global batch's share of a replica; every recompute;
// sequence parallelism both ways where tp > 1; rank orders tp-dp-pp (Megatron's) and tp-pp-dp (TP groups stay in a
// machine; what shares the rest of the machine, data-parallel peers or pipeline stages, is the choice). Choices
// that are not plans are left to `make` to refuse.
SearchSpace default_space(const workloads::Workload& w, int gpus, int gpus_per_node, const Fixed& fixed);

// The reason counted when a plan does not fit in memory.
inline constexpr std::string_view kDoesNotFit = "does not fit in GPU memory";
// The reason counted when a plan fits but the same plan fits with less recomputation (never slower, never more
// energy): it is not timed. It fits: the count of fitting plans includes it.
inline constexpr std::string_view kRecomputesMore = "fits, but recomputes more than the same plan that fits with less";

// The candidates of `space`, in a fixed order (tp, pp, vpp, zero, micro-batch, recompute, sequence parallelism):
// tp x pp divides the GPUs, pp at most the layers, vpp > 1 only with pp > 1, pp x vpp <= layers and a micro-batch count
// per replica that pp divides, zero > 0 only with data parallelism (unless zero is fixed) and zero 2 and 3 only without a pipeline (the
// loader's rules, workloads/plan.cpp: applied here so that the search does not build what it must refuse), the
// micro-batch divides a replica's share of the global batch, sequence parallelism only with tp > 1, an order other
// than the first only where it places ranks differently (pp > 1, dp > 1 and more than one TP group to a machine).
std::vector<PlanChoice> enumerate(const SearchSpace& space);

// A choice made a workload, or the one-line reason it is not a plan.
struct Made {
  std::optional<workloads::Workload> workload;
  std::string why_not;
  std::optional<workloads::MemoryPlan> memory;   // set: the workload's memory plan (else plan_memory on the GPU)
};
using MakeFn = std::function<Made(const PlanChoice&)>;

struct Candidate {
  PlanChoice choice;
  workloads::Workload workload;
  workloads::MemoryPlan memory;
  Seconds analytic_step;
  Joules gpu_energy;   // the GPUs' energy over the analytic step (results/energy.hpp)
  double score = 0;    // what the search ranks by, lowest first
};

// What a candidate is ranked by, from its analytic step time and its GPUs' energy over it (default: the time). It
// must not fall when a step does more work (the search skips plans that only recompute more).
using ScoreFn = std::function<double(Seconds step, Joules gpu_energy)>;

struct SearchResult {
  std::size_t candidates = 0;                  // enumerated
  std::map<std::string, std::size_t> pruned;   // reason -> candidates dropped for it
  std::vector<Candidate> ranked;               // fitting, best score first, ties in space order
  std::optional<Candidate> nearest;            // nothing fits: the valid plan that misses memory by the least
};

// A candidate's step graph; none: workloads::generate_step on the search's GPU (a mixed cluster gives its own:
// drivers/mixed.hpp).
using GraphFn = std::function<workloads::StepGraph(const workloads::Workload&)>;

// Searches `space`; `costs` times the collectives and sends of every candidate (one cluster, its topology);
// `score` ranks them (none: by step time).
SearchResult search(const SearchSpace& space, const MakeFn& make, const topology::GpuSpec& gpu, const CommCosts& costs,
                    const ScoreFn& score = {}, const GraphFn& graph = {});

// The analytic step time of `w` on `gpu` with `costs`, and its GPUs' energy, the micro-batches past two pipeline
// rounds extrapolated.
struct Screened {
  Seconds step;
  Joules gpu_energy;
};
Screened screen(const workloads::Workload& w, const topology::GpuSpec& gpu, const CommCosts& costs,
                const GraphFn& graph = {});
inline Seconds screen_step(const workloads::Workload& w, const topology::GpuSpec& gpu, const CommCosts& costs) {
  return screen(w, gpu, costs).step;
}

}  // namespace dtsim::sim::search
