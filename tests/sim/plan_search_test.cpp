// The plan search (sim/search/plan_search.hpp): the space it enumerates, counted by hand; a toy cluster whose
// best plan is known by hand; pruning by memory and the nearest plan when nothing fits; the screened step time
// against the full play.
#include <doctest/doctest.h>

#include <algorithm>

#include "sim/analytic/analytic_costs.hpp"
#include "sim/search/plan_search.hpp"
#include "topology/error.hpp"
#include "topology/builders.hpp"
#include "workloads/gpt_job.hpp"

using namespace dtsim;
using namespace dtsim::sim::search;
using workloads::Recompute;
using workloads::Workload;

namespace {

// The choice made a workload with the generator's own checks (what `dtsim plan` does through the scenario loader).
Made make_from(Workload base, const PlanChoice& c, int gpus) {
  base.plan.tp = c.tp;
  base.plan.pp = c.pp;
  base.plan.dp = gpus / (c.tp * c.pp);
  base.plan.vpp = c.vpp;
  base.plan.zero = c.zero;
  base.training->micro_batch = c.micro_batch;
  base.training->recompute = c.recompute;
  base.training->sequence_parallel = c.sequence_parallel;
  try {
    workloads::check_plan(base, gpus);
    return {base, {}, std::nullopt};
  } catch (const InputError& e) {
    return {std::nullopt, std::string(e.key()), std::nullopt};
  }
}

const topology::GpuSpec& a100() { return topology::find_gpu("a100-sxm4-80gb"); }

// One NVSwitch node of 8 A100s and the analytic engine's costs on it (which refer to its topology: not movable).
struct EightA100 {
  topology::BuiltTopology cluster =
      topology::build_cluster(topology::default_cluster("a100-sxm4-80gb", topology::IntraKind::NvSwitch, 1, 8));
  sim::CommCosts costs = sim::analytic_costs(cluster.topology, sim::Algorithm::Auto, false, topology::Routing::Single, 0);
};

}  // namespace

TEST_CASE("plan search: a torchtitan job chooses among none, per-op and full recomputation") {
  Workload w = test::gpt_job(1, 1, 4, 8);
  CHECK(default_space(w, 4, 4, {}).recompute == std::vector<Recompute>{Recompute::None, Recompute::Full});   // 2021
  w.training->framework = workloads::Framework::MegatronCore;
  CHECK(default_space(w, 4, 4, {}).recompute ==
        std::vector<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full});
  workloads::apply_framework(*w.training, workloads::Framework::Torchtitan);
  // The test model's biased GELU block is no Llama block: per-op checkpointing is not offered (check_plan would
  // refuse every such plan); a bias-free gated one gets it.
  CHECK(default_space(w, 4, 4, {}).recompute == std::vector<Recompute>{Recompute::None, Recompute::Full});
  w.model.activation = workloads::Activation::Swiglu;
  w.model.bias = false;
  CHECK(default_space(w, 4, 4, {}).recompute == std::vector<Recompute>{Recompute::None, Recompute::Op, Recompute::Full});
}

TEST_CASE("plan search: a torchtitan plan that fits with per-op recomputation is not timed again with full") {
  const EightA100 node;
  const auto& costs = node.costs;
  Workload w = test::gpt_job(1, 1, 8, 16, 16);
  test::set_width(w, 4096, 32, 8, 14336);
  w.model.activation = workloads::Activation::Swiglu;
  w.model.bias = false;
  w.model.seq_length = 8192;
  workloads::apply_framework(*w.training, workloads::Framework::Torchtitan);
  Fixed fixed;
  fixed.tp = 1;
  fixed.pp = 1;
  const auto r = search(default_space(w, 8, 8, fixed), [&](const PlanChoice& c) { return make_from(w, c, 8); }, a100(), costs);
  const auto key = [](const PlanChoice& c) { return std::make_tuple(c.tp, c.pp, c.vpp, c.zero, c.micro_batch, c.sequence_parallel); };
  std::size_t with_op = 0;
  for (const auto& c : r.ranked) {
    if (c.choice.recompute == Recompute::Op) ++with_op;
    if (c.choice.recompute != Recompute::Full) continue;
    for (const auto& other : r.ranked) CHECK_FALSE((key(other.choice) == key(c.choice) && other.choice.recompute != Recompute::Full));
  }
  CHECK(with_op > 0);
  CHECK(r.pruned.at(std::string(kRecomputesMore)) > 0);
}

// Megatron-Core's three recomputations (Megatron-LM 2021, the workload's bare default, has two: none and full).
static Workload core_job(int tp, int pp, int dp, int global_batch) {
  Workload w = test::gpt_job(tp, pp, dp, global_batch);
  w.training->framework = workloads::Framework::MegatronCore;
  return w;
}

TEST_CASE("plan search: the space of 4 GPUs, 8 layers and a batch of 8, counted by hand") {
  const Workload w = core_job(1, 1, 4, 8);
  const SearchSpace s = default_space(w, 4, 4, {});
  CHECK(s.tp == std::vector<int>{1, 2, 4});
  CHECK(s.pp == std::vector<int>{1, 2, 4});
  CHECK(s.micro_batch == std::vector<int>{1, 2, 4, 8});
  const auto all = enumerate(s);
  // (tp, pp) with dp = 4 / (tp pp): (1,1,4) (1,2,2) (1,4,1) (2,1,2) (2,2,1) (4,1,1).
  // vpp while pp x vpp <= 8 layers: pp 1 -> 1; pp 2 -> 1, 2, 3, 4; pp 4 -> 1, 2; vpp > 1 only where pp divides
  // the micro-batches per replica, 8 / (dp mb). zero: 4 values with dp > 1 and pp 1, 0 and 1 with pp > 1, else 0.
  // Micro-batches dividing 8 / dp: dp 4 -> 1, 2; dp 2 -> 1, 2, 4; dp 1 -> 1, 2, 4, 8. Recompute 3 ways; sequence
  // parallelism 2 ways where tp > 1.
  //   (1,1,4): 1 x 4 x 2 x 3 = 24
  //   (1,2,2): (vpp 1: mb 1, 2, 4; vpp 2-4: mb 1, 2 -> 3 + 3 x 2 = 9) x zero 2 x 3 x 2 rank orders = 108 (the only
  //            split with pp > 1, dp > 1 and more than one TP group to a machine: tp-dp-pp and tp-pp-dp differ)
  //   (1,4,1): (vpp 1: 4 mbs; vpp 2: mb 1, 2 -> 6) x 3 = 18
  //   (2,1,2): 1 x 4 x 3 x 3 x 2 = 72
  //   (2,2,1): (vpp 1: 4 mbs; vpp 2-4: mb 1, 2, 4 -> 4 + 9 = 13) x 3 x 2 = 78
  //   (4,1,1): 1 x 1 x 4 x 3 x 2 = 24
  CHECK(all.size() == 24 + 108 + 18 + 72 + 78 + 24);
  for (const auto& c : all) {
    const int dp = 4 / (c.tp * c.pp);
    CHECK((c.vpp == 1 || (c.pp > 1 && c.pp * c.vpp <= 8)));
    CHECK((c.zero == 0 || dp > 1));
    CHECK((c.zero < 2 || c.pp == 1));
    CHECK((c.order == PlanChoice{}.order || (c.tp == 1 && c.pp == 2)));
    CHECK((c.vpp == 1 || (8 / (dp * c.micro_batch)) % c.pp == 0));
    CHECK((!c.sequence_parallel || c.tp > 1));
    CHECK(8 % (dp * c.micro_batch) == 0);
  }
  // What the scenario fixes has one value.
  Fixed fixed;
  fixed.tp = 2;
  fixed.recompute = Recompute::Full;
  const auto some = enumerate(default_space(w, 4, 4, fixed));
  CHECK(some.size() == (72 + 78) / 3);
  CHECK(std::ranges::all_of(some, [](const PlanChoice& c) { return c.tp == 2 && c.recompute == Recompute::Full; }));
}

TEST_CASE("plan search: on a cluster where collectives cost a second and sends nothing, the best plan is known by hand") {
  // Any tensor or data parallelism (or a tied embedding across stages) pays a collective; a pipeline over all four
  // GPUs pays none. Interleaving halves its bubble where a stage has 2 layers (vpp 2), and recomputation only adds
  // compute: tp 1, pp 4, dp 1, vpp 2, zero 0, no recompute.
  Workload w = test::gpt_job(1, 1, 4, 8);
  w.model.tied_embeddings = false;
  sim::CommCosts costs;
  costs.collective = [](const workloads::CollectiveOp&, const std::vector<int>&) { return Seconds(1.0); };
  costs.transfer = [](const workloads::SendOp&, int, int) { return Seconds(0); };
  Fixed fixed;
  fixed.micro_batch = 1;
  const auto r = search(default_space(w, 4, 4, fixed), [&](const PlanChoice& c) { return make_from(w, c, 4); }, a100(), costs);
  REQUIRE(!r.ranked.empty());
  const PlanChoice best = r.ranked.front().choice;
  CHECK(best.tp == 1);
  CHECK(best.pp == 4);
  CHECK(best.vpp == 2);
  CHECK(best.zero == 0);
  CHECK(best.recompute == Recompute::None);
  // Every plan with a collective is at least a second slower.
  for (const auto& c : r.ranked)
    if (c.choice.tp > 1 || c.choice.pp < 4) CHECK(c.analytic_step.value() > r.ranked.front().analytic_step.value() + 1.0);
  CHECK(std::ranges::is_sorted(r.ranked, {}, &Candidate::analytic_step));
}

TEST_CASE("plan search: plans that do not fit are dropped and counted, and with none fitting the nearest is named") {
  // GPT-3 175B on 8 A100 80GB: 175e9 parameters x 16 B of mixed-precision Adam state is 2.8 TB, 350 GB a GPU even
  // fully sharded: nothing fits. On 64 GPUs (8 nodes) some plans do.
  const EightA100 node;
  const auto& costs = node.costs;
  Workload w = test::gpt_job(1, 1, 8, 64, 96);
  test::set_width(w, 12288, 96, 96, 4 * 12288);
  Fixed fixed;
  fixed.micro_batch = 1;
  fixed.recompute = Recompute::Full;
  const auto none = search(default_space(w, 8, 8, fixed), [&](const PlanChoice& c) { return make_from(w, c, 8); }, a100(), costs);
  CHECK(none.ranked.empty());
  REQUIRE(none.nearest.has_value());
  CHECK(none.nearest->memory.margin.value() < 0);
  CHECK(none.pruned.at(std::string(kDoesNotFit)) > 0);
  // The nearest misses by the least: no dropped plan comes closer.
  for (const auto& c : enumerate(default_space(w, 8, 8, fixed))) {
    const auto made = make_from(w, c, 8);
    if (made.workload) CHECK(workloads::plan_memory(*made.workload, a100()).margin.value() <= none.nearest->memory.margin.value());
  }
  // The candidates are accounted for: ranked + every pruned reason.
  std::size_t pruned = 0;
  for (const auto& [why, n] : none.pruned) pruned += n;
  CHECK(pruned == none.candidates);
}

TEST_CASE("plan search: the screened step (two pipeline rounds, extrapolated) matches the full play within 1 %") {
  const EightA100 node;
  const auto& costs = node.costs;
  for (const auto& [tp, pp, vpp] : {std::tuple{1, 4, 1}, std::tuple{2, 2, 2}, std::tuple{1, 2, 1}}) {
    CAPTURE(tp);
    CAPTURE(pp);
    Workload w = test::gpt_job(tp, pp, 8 / (tp * pp), 256);
    w.plan.vpp = vpp;
    workloads::check_plan(w, 8);
    const double full = sim::play_analytic(workloads::generate_step(w, a100()), costs).step_time.value();
    CHECK(screen_step(w, a100(), costs).value() == doctest::Approx(full).epsilon(0.01));
  }
}
