// The step graph's overlapped communication: TP collectives under Transformer Engine's ring, pipelined and bulk
// schedules (training.tp_comm_overlap, tp_backward_overlap), and the distributed optimizer's parameter all-gather
// at the next step's start (overlap_param_gather), each against its closed form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/gpt_job.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::a100;
using dtsim::test::gpt_job;

namespace {

// The TP collectives of the first forward (or backward) layer pass of rank class 0, with the compute ops around
// them, as (index, op) in list order.
std::vector<std::uint32_t> pass_ops(const StepGraph& g, Pass pass) {
  std::vector<std::uint32_t> out;
  const auto& ops = g.classes[0].ops;
  bool inside = false;   // the last compute op seen was of this pass of layer 0, micro-batch 0
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (const auto* c = std::get_if<ComputeOp>(&ops[i].body)) {
      inside = c->layer == 0 && c->micro_batch == 0 && c->pass == pass;
      if (inside) out.push_back(i);
    }
    if (const auto* k = std::get_if<CollectiveOp>(&ops[i].body); k && k->group == Group::Tp && k->layer == 0 && inside)
      out.push_back(i);
  }
  return out;
}

// Every TP collective takes bytes / rate: `rate` chooses between comm-bound and compute-bound.
sim::CommCosts tp_costs(double rate) {
  sim::CommCosts c = sim::free_communication();
  c.collective = [rate](const CollectiveOp& op, const std::vector<int>&) {
    return op.group == Group::Tp ? Seconds(op.bytes.value() / rate) : Seconds(0);
  };
  return c;
}

}  // namespace

// The overlapped TP schedules (step_graph.cpp's TpStyle) end where their closed forms say, with g a GEMM chunk's
// compute, G the whole GEMM, c and r a step's or chunk's communication, n = tp, s = kTpSplits:
//   ring (forward, all-gather before Q K V): (n - 1) chunks from the start, the last after the all-gather:
//     max((n - 1) g, C) + g with C = the all-gather;
//   pipelined (reduce-scatter after the projection): max(G + r, g + s r);
//   bulk (backward of MLP up, with SP): D beside the input's all-gather A, then the reduce-scatter R beside the
//     weight gradient W, R after A on the one communicator: max(A, D) + max(R, W).
TEST_CASE("TP overlap: the ring, pipelined and bulk schedules end at their closed forms, comm- or compute-bound") {
  auto w = gpt_job(8, 1, 1, 1, 2);
  w.training->sequence_parallel = true;
  w.training->tp_comm_overlap = true;
  w.training->tp_backward_overlap = true;
  const StepGraph g = generate_step(w, a100());
  const auto& ops = g.classes[0].ops;
  const auto dur = [&](std::uint32_t i) { return std::get<ComputeOp>(ops[i].body).duration.value(); };
  const auto bytes = [&](std::uint32_t i) { return std::get<CollectiveOp>(ops[i].body).bytes.value(); };
  const auto is_comm = [&](std::uint32_t i) { return std::holds_alternative<CollectiveOp>(ops[i].body); };
  const double n = 8, s = kTpSplits;
  const double act = 2048.0 * 2048 * 2;   // b s h in bf16
  for (const double rate : {1e10, 1e13}) {   // 20 MB/us-class links: comm-bound, then compute-bound
    CAPTURE(rate);
    const auto t = sim::play_analytic(g, tp_costs(rate));
    const auto& times = t.classes[0].ops;
    const auto fwd = pass_ops(g, Pass::Forward);
    // [norm] [AG] [QKV main] [QKV last] ...: the ring.
    REQUIRE(fwd.size() > 8);
    REQUIRE(is_comm(fwd[1]));
    CHECK(bytes(fwd[1]) == act);
    const std::uint32_t main = fwd[2], last = fwd[3];
    CHECK(dur(main) == doctest::Approx((n - 1) * dur(last)).epsilon(1e-12));
    const double ring = std::max(dur(main), act / rate) + dur(last);
    CHECK((times[last].end - times[main].start).value() == doctest::Approx(ring).epsilon(1e-12));
    // ... [attention] [proj first] [RS main] [proj rest] [RS last]: the pipeline.
    const std::uint32_t first = fwd[5], r_main = fwd[6], rest = fwd[7], r_last = fwd[8];
    REQUIRE(is_comm(r_main));
    REQUIRE(is_comm(r_last));
    CHECK(bytes(r_main) == doctest::Approx(act * (s - 1) / s));
    CHECK(bytes(r_last) == doctest::Approx(act / s));
    CHECK(dur(rest) == doctest::Approx((s - 1) * dur(first)).epsilon(1e-12));
    const double r = act / s / rate, G = s * dur(first);
    const double pipe = std::max(G + r, dur(first) + s * r);
    CHECK((times[r_last].end - times[first].start).value() == doctest::Approx(pipe).epsilon(1e-12));
    // Backward of MLP up: [.. act'] [A] [D] [R] [W].
    const auto bwd = pass_ops(g, Pass::Backward);
    const auto a = std::ranges::find_if(bwd, [&](std::uint32_t i) {
      return is_comm(i) && std::get<CollectiveOp>(ops[i].body).kind == CollectiveKind::AllGather && is_comm(i + 2) &&
             std::get<CollectiveOp>(ops[i + 2].body).kind == CollectiveKind::ReduceScatter;
    });
    REQUIRE(a != bwd.end());
    const std::uint32_t A = *a, D = *a + 1, R = *a + 2, W = *a + 3;
    REQUIRE(std::get<CollectiveOp>(ops[R].body).kind == CollectiveKind::ReduceScatter);
    CHECK(dur(D) == doctest::Approx(dur(W)).epsilon(0.2));   // equal FLOPs, their own shapes
    const double bulk = std::max(act / rate, dur(D)) + std::max(act / rate, dur(W));
    const double end = std::max(times[W].end.value(), times[R].end.value());
    CHECK(end - times[A].start.value() == doctest::Approx(bulk).epsilon(1e-12));
  }
  // Without the overlaps the same collectives sit on the critical path: where the GEMMs outlast them, the overlap
  // hides them (when communication dominates, the backward's second all-gather of the input costs instead; on
  // GEMMs of a few hundred rows a chunk runs below the whole GEMM's efficiency, and that costs too: here
  // micro-batch 4, 1,024-row chunks).
  w.training->global_batch = w.training->micro_batch = 4;
  auto plain = w;
  plain.training->tp_comm_overlap = false;
  plain.training->tp_backward_overlap = false;
  const auto slow = sim::play_analytic(generate_step(plain, a100()), tp_costs(1e12));
  const auto fast = sim::play_analytic(generate_step(w, a100()), tp_costs(1e12));
  CAPTURE(fast.step_time.value());
  CAPTURE(slow.step_time.value());
  CHECK(fast.step_time < slow.step_time);
}

TEST_CASE("overlap_param_gather: one all-gather per bucket at the step's start, each layer's first forward after its own") {
  auto w = gpt_job(1, 1, 4, 8, 8);
  w.plan.zero = 1;
  w.training->overlap_param_gather = true;
  w.training->dp_bucket = Bytes(2.0 * layer_parameters(w.model) * 4);   // two layers a bucket (fp32 gradients)
  const StepGraph g = generate_step(w, a100());
  const auto& ops = g.classes[0].ops;
  std::vector<std::uint32_t> gathers;
  for (std::uint32_t i = 0; i < ops.size(); ++i)
    if (const auto* k = std::get_if<CollectiveOp>(&ops[i].body); k && k->purpose == CommPurpose::ZeroParamGather) {
      gathers.push_back(i);
      CHECK(ops[i].deps.empty());   // at the start
    }
  // The embedding (109M parameters: more than a bucket alone), layers 0-1, 2-3, 4-5, 6-7, the final norm.
  CHECK(gathers.size() == 6);
  // Layer l's first forward waits for its bucket, later micro-batches do not.
  int waits = 0;
  for (const Op& op : ops)
    for (std::uint32_t d : op.deps)
      if (std::ranges::find(gathers, d) != gathers.end()) ++waits;
  CHECK(waits == 8 + 2);   // each layer's first pass, the embedding and the logits
  // No all-gather after the optimizer then; without the overlap, one after it.
  auto late = w;
  late.training->overlap_param_gather = false;
  const StepGraph without = generate_step(late, a100());   // held: a reference into the temporary dangled
  const auto& last = without.classes[0].ops.back();
  CHECK(std::get<CollectiveOp>(last.body).purpose == CommPurpose::ZeroParamGather);
  CHECK_FALSE(std::holds_alternative<CollectiveOp>(ops.back().body));
}
