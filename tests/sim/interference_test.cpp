// What overlapped communication takes from compute (sim/analytic/interference.hpp): the delay of each compute op
// against the closed form, worked out by hand, and the step timed again with the communication keeping its duration.
#include <doctest/doctest.h>

#include "sim/analytic/interference.hpp"
#include "topology/builders.hpp"
#include "workloads/gpt_job.hpp"

using namespace dtsim;
using namespace dtsim::workloads;

namespace {

ComputeOp compute(double ms, double streaming_ms) {
  return ComputeOp{Scope::Layer, std::nullopt, Pass::Backward, 0, 0, {}, {}, Seconds(ms * 1e-3), Seconds(streaming_ms * 1e-3)};
}

// Two A100s on an NVSwitch, data-parallel: a GEMM-bound op A (0-10 ms), a streaming op B (10-20 ms), and a
// gradient all-reduce of `bytes` from 5 to 15 ms beside them.
StepGraph two_ops_and_an_all_reduce(double bytes) {
  const Workload w = test::gpt_job(1, 1, 2, 2);
  RankClass c{0, {0, 1}, {}};
  c.ops = {{compute(10, 0), {}},
           {compute(10, 10), {0}},
           {CollectiveOp{CollectiveKind::AllReduce, Group::Dp, Bytes(bytes), CommPurpose::DataParallelGrads, 0, 0}, {}}};
  return StepGraph{w, Placement(w.plan), Granularity::Layer, 1, {c}};
}

struct Case {
  topology::Topology topo = topology::build_cluster(topology::default_cluster("a100-sxm4-80gb",
                                                                               topology::IntraKind::NvSwitch, 1, 2)).topology;
  StepGraph g;
  sim::Timeline t;
  explicit Case(double bytes) : g(two_ops_and_an_all_reduce(bytes)) {
    sim::ClassTimeline ct{{{Seconds(0), Seconds(0.010)}, {Seconds(0.010), Seconds(0.020)}, {Seconds(0.005), Seconds(0.015)}},
                          Seconds(0.020), Seconds(0.020), Seconds(0)};
    t.classes = {ct};
    t.step_time = Seconds(0.020);
  }
};

}  // namespace

TEST_CASE("interference: an all-reduce beside a GEMM takes its NCCL blocks' SMs, beside a streaming kernel its HBM") {
  const Case k(4e9);   // 4 GB in 10 ms: 400 GB/s on the wire, 1,200 GB/s of HBM
  const auto& gpu = topology::find_gpu("a100-sxm4-80gb");
  topology::Router router(k.topo);
  const auto& op = std::get<CollectiveOp>(k.g.classes[0].ops[2].body);
  // NVSwitch route: 12 NVLink3 links x 25 GB/s x 0.767 = 230 GB/s, 20 GB/s a channel: 12 rings, doubled: 24 blocks.
  REQUIRE(sim::collective_blocks(k.g, 0, op, k.topo, router) == 24);
  const double sm = 24.0 / 108;
  const double hbm = 3 * 4e9 / 0.010 / 2039e9;
  const auto lost = sim::interference(k.g, k.t, k.topo, gpu);
  CHECK(lost[0][0].value() == doctest::Approx(0.005 * sm / (1 - sm)));
  CHECK(lost[0][1].value() == doctest::Approx(0.005 * hbm / (1 - hbm)));
  CHECK(lost[0][2].value() == 0);
  // Timed again: A ends later, B follows it and is longer by its own loss; the all-reduce keeps its 10 ms.
  const sim::Timeline again = sim::with_interference(k.g, k.t, k.topo, gpu);
  const double a_end = 0.010 + lost[0][0].value();
  CHECK(again.classes[0].ops[0].end.value() == doctest::Approx(a_end));
  CHECK(again.step_time.value() == doctest::Approx(a_end + 0.010 + lost[0][1].value()));
  CHECK(again.classes[0].interference.value() == doctest::Approx(lost[0][0].value() + lost[0][1].value()));
  CHECK((again.classes[0].ops[2].end - again.classes[0].ops[2].start).value() == doctest::Approx(0.010));
}

TEST_CASE("interference: nothing overlapping, or a GPU without an SM count, leaves the step as played") {
  Case k(4e9);
  k.t.classes[0].ops[2] = {Seconds(0.020), Seconds(0.030)};   // after the compute
  k.t.step_time = k.t.classes[0].end = Seconds(0.030);
  const auto& gpu = topology::find_gpu("a100-sxm4-80gb");
  CHECK(sim::with_interference(k.g, k.t, k.topo, gpu).step_time == k.t.step_time);
  const Case overlapped(4e9);
  topology::GpuSpec unknown = gpu;
  unknown.sms = 0;
  CHECK(sim::with_interference(overlapped.g, overlapped.t, overlapped.topo, unknown).step_time == overlapped.t.step_time);
}

TEST_CASE("interference: timed again, a rank's collectives that overlapped on one group (lanes) keep their ends") {
  // A0 0-2, A 2-10, all-reduce X after A0 2-12, all-reduce Y after A0 played as lanes from 8 to 14 (its lanes
  // began before X's last lane ended), B after Y 14-20. Timed again, Y adds to the group's busy time only what
  // it added (12 to 14), so B still starts at 14 and the step still ends at 20, A lengthened or not.
  const auto topo = topology::build_cluster(topology::default_cluster("a100-sxm4-80gb", topology::IntraKind::NvSwitch,
                                                                      1, 2)).topology;
  const Workload w = test::gpt_job(1, 1, 2, 2);
  const auto all_reduce = [] {
    return CollectiveOp{CollectiveKind::AllReduce, Group::Dp, Bytes(1e9), CommPurpose::DataParallelGrads, 0, 0};
  };
  RankClass c{0, {0, 1}, {}};
  c.ops = {{compute(2, 0), {}}, {compute(8, 0), {0}}, {all_reduce(), {0}}, {all_reduce(), {0}}, {compute(6, 0), {3}}};
  const StepGraph g{w, Placement(w.plan), Granularity::Layer, 1, {c}};
  sim::Timeline t;
  t.classes = {sim::ClassTimeline{{{Seconds(0), Seconds(0.002)},
                                   {Seconds(0.002), Seconds(0.010)},
                                   {Seconds(0.002), Seconds(0.012)},
                                   {Seconds(0.008), Seconds(0.014)},
                                   {Seconds(0.014), Seconds(0.020)}},
                                  Seconds(0.020), Seconds(0.016), Seconds(0)}};
  t.step_time = Seconds(0.020);
  const auto again = sim::with_interference(g, t, topo, topology::find_gpu("a100-sxm4-80gb"));
  CHECK(again.classes[0].interference.value() > 0);
  CHECK(again.classes[0].ops[1].end.value() > 0.010);
  CHECK(again.classes[0].ops[3].end.value() == doctest::Approx(0.014));
  CHECK(again.step_time.value() == doctest::Approx(0.020));
}
