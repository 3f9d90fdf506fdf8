// The SimGrid engine's memo of repeated collectives (SimgridOptions::memoize): where it replays a collective it
// keeps the step time and the recorded transfers of the full play, and it refuses groups whose links carry heavy
// other traffic. Every simulation runs in its own child process (run_isolated).
#include "sim/simgrid_support.hpp"

using namespace simgrid_support;
using dtsim::test::gpt_job;

namespace {

// step time, memoized collectives, refused collectives, recorded transfers, their bytes and summed durations.
std::vector<double> memo_run(const workloads::StepGraph& g, const topology::Topology& topo, bool memoize,
                             bool record = false) {
  return isolated([&] {
    sim::SimgridOptions options;
    options.memoize = memoize;
    options.record_transfers = record;
    const auto t = sim::play_simgrid(g, topo, options);
    const auto [count, bytes, busy] = transfer_totals(t);
    return std::vector<double>{t.step_time.value(), static_cast<double>(t.memoized_collectives),
                               static_cast<double>(t.memo_refused_collectives), count, bytes, busy};
  });
}

}  // namespace

// One node of 4: the DP rings (tp 2, dp 2) run over the GPUs' NVSwitch links at their full rate, beside the TP
// pairs: more than kLightShare of those links, so no TP group is memoized.
TEST_CASE("simgrid: memo refuses groups whose links carry heavy other traffic (DP rings on the NVSwitch)") {
  const auto topo = built(IntraKind::NvSwitch, 4);
  const auto g = workloads::generate_step(gpt_job(2, 1, 2, 8, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto on = memo_run(g, topo, true);
  const auto off = memo_run(g, topo, false);
  MESSAGE("step time memo on ", on[0], " s, off ", off[0], " s; refused ", on[2]);
  CHECK(on[0] == doctest::Approx(off[0]).epsilon(0.01).scale(0));
  CHECK(on[0] == off[0]);   // nothing replayed: the very same simulation
  CHECK(on[1] == 0);
  CHECK(on[2] > 0);
  CHECK(off[1] == 0);
  CHECK(off[2] == 0);
}

// 2 nodes of 4, one NIC per node: the DP rings (tp 2, dp 4) cross the NIC, so on the GPUs' NVSwitch links beside
// the TP pairs they run at the NIC's pace, a tenth of those links: light sharing, memoized. What the memo leaves
// out (the TP pairs slowed while a DP ring's NVLink hop runs) leaves the step time the same to 6 digits here.
TEST_CASE("simgrid: memo replays TP groups sharing their links lightly (DP rings paced by a NIC), to 1e-4") {
  const auto topo = nodes_on_a_switch(2, 4, 1);
  const auto g = workloads::generate_step(gpt_job(2, 1, 4, 8, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto on = memo_run(g, topo, true);
  const auto off = memo_run(g, topo, false);
  MESSAGE("step time memo on ", on[0], " s, off ", off[0], " s; memoized ", on[1], ", refused ", on[2]);
  CHECK(on[0] == doctest::Approx(off[0]).epsilon(1e-4).scale(0));
  CHECK(on[1] > 0);
}

// TP=8 on one NVSwitch node, 4 micro-batches: the TP group is alone on its links, so its repeated collectives
// are replayed; the step time is the fully played one.
TEST_CASE("simgrid: memo replays the collectives of an isolated TP-8 group and keeps the step time") {
  const auto topo = built(IntraKind::NvSwitch, 8);
  const auto g = workloads::generate_step(gpt_job(8, 1, 1, 4, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto on = memo_run(g, topo, true);
  const auto off = memo_run(g, topo, false);
  MESSAGE("step time memo on ", on[0], " s, off ", off[0], " s; memoized ", on[1], " collectives");
  CHECK(on[0] == doctest::Approx(off[0]).epsilon(1e-9).scale(0));
  CHECK(on[1] > 0);
  CHECK(on[2] == 0);
}

// Recorded transfers (the trace's link counters) survive replay: the same transfers, bytes and busy time.
TEST_CASE("simgrid: memo replays the recorded transfers of the collective it reuses") {
  const auto topo = built(IntraKind::NvSwitch, 8);
  const auto g = workloads::generate_step(gpt_job(8, 1, 1, 4, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto on = memo_run(g, topo, true, true);
  const auto off = memo_run(g, topo, false, true);
  CHECK(on[1] > 0);
  CHECK(on[3] == off[3]);
  CHECK(on[4] == doctest::Approx(off[4]).epsilon(1e-12).scale(0));
  CHECK(on[5] == doctest::Approx(off[5]).epsilon(1e-9).scale(0));
}

// A pipeline: the sends between stages cross other links than the stages' TP groups (an NVSwitch node per
// stage), so TP collectives still replay, and the step time holds.
TEST_CASE("simgrid: memo with pipeline sends keeps the step time of the full play") {
  const auto topo = nodes_on_a_switch(2, 4, 0);   // a NIC per GPU
  const auto g = workloads::generate_step(gpt_job(4, 2, 1, 8, 4), topology::find_gpu("a100-sxm4-80gb"));
  const auto on = memo_run(g, topo, true);
  const auto off = memo_run(g, topo, false);
  MESSAGE("step time memo on ", on[0], " s, off ", off[0], " s; memoized ", on[1], ", refused ", on[2]);
  CHECK(on[0] == doctest::Approx(off[0]).epsilon(1e-9).scale(0));
}
