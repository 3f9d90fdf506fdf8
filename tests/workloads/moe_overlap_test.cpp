// Megatron-Core's overlap_moe_expert_parallel_comm: one pass's token exchange travels while the other pass computes.
// When it is refused, the pipeline shapes it plays, and what it hides.
#include <doctest/doctest.h>

#include "workloads/gpt_job.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/kernels.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::h100;
using dtsim::test::moe_job;
using dtsim::test::plan_error;


TEST_CASE("overlap_moe_expert_parallel_comm: one more warm-up forward, then each forward and backward pair combined") {
  // 1F1B on 4 stages: stage 0 warms up with pp - 1 = 3 forwards, 4 with the overlap (Megatron's schedules.py).
  ParallelPlan p;
  p.pp = 4;
  const auto warmup = [](const std::vector<PipeStep>& order) {
    int n = 0;
    while (n < static_cast<int>(order.size()) && order[static_cast<std::size_t>(n)].pass == Pass::Forward) ++n;
    return n;
  };
  for (const int vpp : {1, 2}) {
    p.vpp = vpp;
    for (int stage = 0; stage < 4; ++stage) {
      CAPTURE(stage);
      const auto plain = schedule_order(p, 8, stage), early = schedule_order(p, 8, stage, 1);
      CHECK(warmup(early) == warmup(plain) + 1);
      CHECK(early.size() == plain.size());
      CHECK(peak_in_flight(early) == peak_in_flight(plain) + 1);
    }
  }
  // The memory plan holds the extra micro-batch: one more in flight.
  Workload w = moe_job(1, 4, 4, 4, 0, 8);
  w.plan.vpp = 2;
  w.training->global_batch = 32;   // 8 micro-batches a replica: more than the warm-up
  const int plain = plan_memory(w, h100()).in_flight_micro_batches;
  w.training->overlap_moe_expert_parallel_comm = true;
  CHECK(plan_memory(w, h100()).in_flight_micro_batches == plain + 1);
  CHECK(combined_steps(w));
}

TEST_CASE("overlap_moe_expert_parallel_comm: refused where Megatron-Core does not run it, one line naming the key") {
  const auto refused = [](Workload w, const std::string& part) {
    w.training->overlap_moe_expert_parallel_comm = true;
    const std::string e = plan_error(w, w.plan.gpus());
    CAPTURE(e);
    CHECK(e.rfind("training.overlap_moe_expert_parallel_comm: ", 0) == 0);
    CHECK(e.find(part) != std::string::npos);
  };
  refused(moe_job(1, 1, 16, 1), "parallelism.ep is 1");
  refused(moe_job(1, 4, 4, 4), "needs virtual stages");   // pp 4 without vpp
  Workload full = moe_job(1, 1, 16, 8);
  full.training->recompute = Recompute::Full;
  refused(full, "recompute: full");
  Workload dense = moe_job(1, 1, 16, 8);
  dense.model = find_model("llama2-7b");
  dense.plan.ep = 1;
  refused(dense, "has no experts");
}

TEST_CASE("overlap_moe_expert_parallel_comm: every pipeline shape plays without a deadlock, combined only in the steady state") {
  // Interleaved 1F1B with as many micro-batches as stages (all forwards, then all backwards: nothing to combine),
  // and with more; one stage. Each step graph is played to its end.
  for (const auto& [pp, vpp, batch] : std::vector<std::array<int, 3>>{{4, 2, 16}, {4, 2, 32}, {2, 4, 16}, {1, 1, 16}}) {
    CAPTURE(pp);
    CAPTURE(batch);
    Workload w = moe_job(1, pp, 16 / pp, 4, 0, 8);
    w.plan.vpp = vpp;
    w.training->global_batch = batch;
    w.training->overlap_moe_expert_parallel_comm = true;
    check_plan(w, 16);
    const StepGraph g = generate_step(w, h100());
    sim::CommCosts c = sim::free_communication();
    c.collective = [](const CollectiveOp& op, const std::vector<int>&) {
      return op.purpose == CommPurpose::ExpertParallel ? Seconds(1e-3) : Seconds(0);
    };
    c.transfer = [](const SendOp&, int, int) { return Seconds(1e-4); };
    CHECK(sim::play_analytic(g, c).step_time.value() > 0);
  }
}

TEST_CASE("overlap_moe_expert_parallel_comm: one pass's token exchange travels while the other pass computes") {
  // One stage, so every backward pairs with the next micro-batch's forward; exchanges that take as long as a
  // layer's compute, everything else free.
  Workload w = moe_job(1, 1, 16, 8);
  const auto exchange_costs = [](Seconds each) {
    sim::CommCosts c = sim::free_communication();
    c.collective = [each](const CollectiveOp& op, const std::vector<int>&) {
      return op.purpose == CommPurpose::ExpertParallel ? each : Seconds(0);
    };
    return c;
  };
  const StepGraph plain = generate_step(w, h100());
  w.training->overlap_moe_expert_parallel_comm = true;
  const StepGraph combined = generate_step(w, h100());
  const auto& ops = combined.classes[0].ops;
  REQUIRE(ops.size() == plain.classes[0].ops.size());   // the same ops, reordered
  // Every op still waits only on ops before it, and after a forward's exchange the next compute op in the list is
  // a backward's (of another micro-batch) at least once.
  bool interleaved = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (const auto d : ops[i].deps) CHECK(d < i);
    const auto* c = std::get_if<CollectiveOp>(&ops[i].body);
    if (c == nullptr || c->purpose != CommPurpose::ExpertParallel) continue;
    for (std::size_t j = i + 1; j < ops.size(); ++j)
      if (const auto* next = std::get_if<ComputeOp>(&ops[j].body)) {
        if (next->micro_batch != c->micro_batch) interleaved = true;
        break;
      }
  }
  CHECK(interleaved);
  // Free exchanges: the same step; costly ones: hidden in part under the other pass's compute.
  const Seconds zero = sim::play_analytic(plain, exchange_costs(Seconds(0))).step_time;
  CHECK(sim::play_analytic(combined, exchange_costs(Seconds(0))).step_time.value() == doctest::Approx(zero.value()));
  const Seconds each(0.5e-3);
  const double exposed = sim::play_analytic(plain, exchange_costs(each)).step_time.value();
  const double hidden = sim::play_analytic(combined, exchange_costs(each)).step_time.value();
  // 4 layers x 4 micro-batches x 4 exchanges, all exposed.
  CHECK(exposed == doctest::Approx(zero.value() + 64 * each.value()));
  // Combined: the first forward and the last backward run alone (their 2 x 4 layers x 2 exchanges exposed); every
  // other exchange travels under the paired pass's compute, which takes longer than it.
  CHECK(hidden == doctest::Approx(zero.value() + 16 * each.value()));
}
