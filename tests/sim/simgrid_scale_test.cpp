// The SimGrid engine's scale shortcuts (DESIGN.md "Scale"): collective memoization, aggregated flows and
// symmetry across TP ranks. Each is checked against the fully expanded simulation (every shortcut off) on a
// case with real contention, where it must change the step time by less than 1 %, and on a case where its
// assumption does not hold, where it must refuse to apply.
#include <numeric>

#include "sim/scale_support.hpp"

using namespace simgrid_support;
using namespace scale_support;
using dtsim::test::gpt_job;

TEST_CASE("scale: every shortcut together keeps the fully expanded step time on contended data-parallel rings") {
  const auto g = contended_job();
  const auto topo = contended_fabric();
  const auto full = play(g, topo, {});
  const auto fast = play(g, topo, {true, true, true});
  MESSAGE("step time expanded ", full.step, " s, with every shortcut ", fast.step, " s (", fast.memoized,
          " collectives memoized, ", fast.aggregated, " aggregated, symmetric ", fast.symmetric, ")");
  CHECK(fast.symmetric);
  CHECK(fast.memoized > 0);
  CHECK(fast.aggregated > 0);
  CHECK(deviation(fast, full) < 0.01);
}

TEST_CASE("scale: memoization replays isolated TP groups, one played collective per plan and sub-topology") {
  const auto g = contended_job();
  const auto topo = contended_fabric();
  const auto off = play(g, topo, {});
  const auto on = play(g, topo, {true, false, false});
  MESSAGE("memo off ", off.step, " s, on ", on.step, " s; ", on.memoized, " replayed from ", on.shapes,
          " played apart; ", on.refused, " refused");
  CHECK(on.memoized > 0);
  CHECK(on.refused > 0);   // the DP groups share the fabric: played in full
  // 8 TP groups on 4 alike nodes run a handful of distinct collectives: each is played once, not once per group
  CHECK(on.shapes > 0);
  CHECK(on.shapes < 8);
  check_same_timing(on, off);
}

TEST_CASE("scale: aggregated flows keep the stepped rings' step time within 1 percent under contention") {
  const auto g = contended_job();
  const auto topo = contended_fabric();
  const auto off = play(g, topo, {});
  const auto on = play(g, topo, {false, true, false});
  MESSAGE("aggregation off ", off.step, " s, on ", on.step, " s (", on.aggregated, " collectives), deviation ",
          deviation(on, off));
  CHECK(on.aggregated > 0);
  CHECK(deviation(on, off) < 0.01);
}

TEST_CASE("scale: aggregated flows are exact on a contention-free ring") {
  const auto g = workloads::generate_step(gpt_job(8, 1, 1, 4, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = built(IntraKind::NvSwitch, 8);
  const auto off = play(g, topo, {}, sim::Algorithm::Ring);
  const auto on = play(g, topo, {false, true, false}, sim::Algorithm::Ring);
  CHECK(on.aggregated > 0);
  CHECK(on.step == doctest::Approx(off.step).epsilon(1e-9).scale(0));
}

// Halving-doubling's steps pair different ranks: there is nothing to aggregate, and the simulation is the same
// one. (Data parallelism only, 16 ranks: no two-rank group, whose two steps would be alike.)
TEST_CASE("scale: aggregated flows refuse lowerings whose steps differ (halving-doubling)") {
  const auto g = workloads::generate_step(gpt_job(1, 1, 16, 16, 4), topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = contended_fabric();
  const auto off = play(g, topo, {}, sim::Algorithm::HalvingDoubling);
  const auto on = play(g, topo, {false, true, false}, sim::Algorithm::HalvingDoubling);
  CHECK(on.aggregated == 0);
  CHECK(on.step == off.step);
}

TEST_CASE("scale: aggregate_steps folds a ring's alike steps and nothing else") {
  using workloads::CollectiveKind;
  sim::GroupLayout layout;
  layout.machine = {0, 1, 2, 3};
  const Bytes size(1 << 20);
  const auto ring = sim::lower(CollectiveKind::AllReduce, size, layout, sim::Algorithm::Ring);
  const auto folded = sim::aggregate_steps(ring);
  REQUIRE(folded);
  CHECK(folded->steps == 1);
  CHECK(folded->transfers.size() == 4);
  double ring_bytes = 0, folded_bytes = 0;
  for (const auto& t : ring.transfers) ring_bytes += t.bytes.value();
  for (const auto& t : folded->transfers) folded_bytes += t.bytes.value();
  CHECK(folded_bytes == doctest::Approx(ring_bytes).epsilon(1e-12));
  CHECK(folded->latency == ring.latency);
  CHECK_FALSE(sim::aggregate_steps(sim::lower(CollectiveKind::AllReduce, size, layout, sim::Algorithm::HalvingDoubling)));
  CHECK_FALSE(sim::aggregate_steps(sim::lower(CollectiveKind::AllReduce, size, layout, sim::Algorithm::Tree)));
  sim::GroupLayout one;
  one.machine = {0};
  CHECK_FALSE(sim::aggregate_steps(sim::lower(CollectiveKind::AllReduce, size, one, sim::Algorithm::Ring)));
}

// PlanCache's compact form (with aggregation on): a ring kept as one step and a repeat count gives the same
// aggregate, the same contention-free time and the same tail as the full lowering, in 1/(n-1) of the transfers
// (each step: every rank's send in each channel's ring, the rings' shared edges inside a machine merged).
TEST_CASE("scale: a compact plan keeps one step of a ring and plays as the full lowering's aggregate") {
  using workloads::CollectiveKind;
  const auto topo = contended_fabric();
  std::vector<int> ranks(16);
  std::iota(ranks.begin(), ranks.end(), 0);
  const std::vector<topology::NodeId> gpus(topo.gpus().begin(), topo.gpus().end());
  const sim::GroupLayout layout = sim::group_layout(ranks, topo, false);
  const auto lower = [](CollectiveKind k, Bytes b, const sim::GroupLayout& l) {
    return sim::lower(k, b, l, sim::Algorithm::Ring);
  };
  sim::flow::PlanCache full(lower), compact(lower, true);
  for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    CAPTURE(kind);
    const auto a = full.get(kind, Bytes(64e6), layout);
    const auto c = compact.get(kind, Bytes(64e6), layout);
    const int steps = kind == CollectiveKind::AllGather ? 15 : 30;
    CHECK(a->repeats == 1);
    CHECK(c->repeats == steps);
    const std::size_t per_step = c->lowered.transfers.size();
    CHECK(per_step == 32);   // two channels (two GPUs a machine), every rank sending once in each
    CHECK(a->lowered.transfers.size() == per_step * static_cast<std::size_t>(steps));
    sim::PairPaths paths(topo, topology::Routing::Single);
    // The repeated step is timed until every endpoint advances alike, then extrapolated: equal to rounding.
    CHECK(sim::lowered_time(c->lowered, gpus, topo, paths, c->repeats).value() ==
          doctest::Approx(sim::lowered_time(a->lowered, gpus, topo, paths).value()).epsilon(1e-12));
    sim::flow::Aggregates of_full(topo, topology::Routing::Single), of_compact(topo, topology::Routing::Single);
    const auto x = of_full.of(a, gpus);
    const auto y = of_compact.of(c, gpus);
    REQUIRE(x);
    REQUIRE(y);
    CHECK(x->tail.value() == doctest::Approx(y->tail.value()).epsilon(1e-9));
    CHECK(x->tail > Seconds(0));
    REQUIRE(x->plan->lowered.transfers.size() == y->plan->lowered.transfers.size());
    for (std::size_t i = 0; i < x->plan->lowered.transfers.size(); ++i)
      CHECK(x->plan->lowered.transfers[i].bytes == y->plan->lowered.transfers[i].bytes);
  }
}

TEST_CASE("scale: symmetry plays one rank per TP group and keeps the step time of contended DP rings") {
  const auto g = contended_job();
  const auto topo = contended_fabric();
  const auto off = play(g, topo, {});
  const auto on = play(g, topo, {false, false, true});
  MESSAGE("symmetry off ", off.step, " s, on ", on.step, " s");
  CHECK(on.symmetric);
  check_same_timing(on, off);
}

// The trace's link counters: with symmetry, the played ranks' transfers are recorded with their images, so the
// transfers, their bytes and their busy time are those of the full run.
TEST_CASE("scale: symmetry records the transfers of the ranks it does not play") {
  const auto g = contended_job();
  const auto topo = contended_fabric();
  auto recorded = [&](bool symmetry) {
    return isolated([&] {
      sim::SimgridOptions options;
      options.record_transfers = true;
      options.aggregate = false;
      options.symmetry = symmetry;
      const auto totals = transfer_totals(sim::play_simgrid(g, topo, options));
      return std::vector<double>(totals.begin(), totals.end());
    });
  };
  const auto on = recorded(true);
  const auto off = recorded(false);
  CHECK(on[0] == off[0]);
  CHECK(on[1] == doctest::Approx(off[1]).epsilon(1e-12).scale(0));
  CHECK(on[2] == doctest::Approx(off[2]).epsilon(1e-9).scale(0));
}

TEST_CASE("scale: symmetry refuses TP groups that share links heavily with other traffic") {
  const auto g = workloads::generate_step(gpt_job(2, 1, 2, 8, 2), topology::find_gpu("a100-sxm4-80gb"));
  // One node of 4: the DP rings (tp 2, dp 2) run over the GPUs' NVSwitch links at full rate beside the TP pairs,
  // so no TP group is isolated.
  const auto topo = built(IntraKind::NvSwitch, 4);
  const auto off = play(g, topo, {});
  const auto on = play(g, topo, {false, false, true});
  CHECK_FALSE(on.symmetric);
  CHECK(on.step == off.step);
  const std::string why = sim::run_isolated([&] {
    sim::SimgridOptions options;
    options.memoize = false;
    options.aggregate = false;
    return sim::play_simgrid(g, topo, options).symmetry;
  });
  CHECK(why.find("shares a link with other traffic") != std::string::npos);
}

TEST_CASE("scale: TP groups sharing their links lightly are memoized and folded, within 1e-4 of the full run") {
  // 2 nodes of 4, one NIC per node: the DP rings (tp 2, dp 4) cross the node's NIC, and beside the TP pairs on
  // the NVSwitch links they run at its pace (a tenth of those links).
  const auto g = workloads::generate_step(gpt_job(2, 1, 4, 8, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = nodes_on_a_switch(2, 4, 1);
  const auto off = play(g, topo, {});
  const auto on = play(g, topo, {true, true, true});
  MESSAGE("every shortcut off ", off.step, " s, on ", on.step, " s");
  CHECK(on.symmetric);
  CHECK(on.memoized > 0);
  CHECK(deviation(on, off) < 1e-4);
}

TEST_CASE("scale: where routes do not map along TP, symmetry plays the images' traffic as lanes, exactly") {
  // Two NICs per node of four GPUs: GPUs 0-1 use NIC 0, GPUs 2-3 NIC 1. Moving a rank one place along its TP
  // group (tp 4) takes GPU 1 to GPU 2: a route through NIC 0 onto one through NIC 1, while GPU 0 to GPU 1 keeps
  // NIC 0. No one map of links carries every route onto its image: the images' DP rings are played as lanes.
  const auto topo = nodes_on_a_switch(2, 4, 2);
  const auto g = workloads::generate_step(gpt_job(4, 1, 2, 8, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto off = play(g, topo, {});
  const auto on = play(g, topo, {false, false, true});
  const std::string why = sim::run_isolated([&] {
    sim::SimgridOptions options;
    return sim::play_simgrid(g, topo, options).symmetry;
  });
  MESSAGE("symmetry: ", why);
  CHECK(on.symmetric);
  CHECK(why.find("as lanes") != std::string::npos);
  CHECK(why.find("do not map onto each other link by link") != std::string::npos);
  check_same_timing(on, off);
}

// Flow-hashed routes (ECMP) on the contended fat tree: pairs and their images along TP collide on spines by
// chance, so no map of links carries the routes onto each other; as lanes, the played ranks' DP rings and sends
// and their images' run on their own routes, each lane its own stream, and the step is the full run's.
TEST_CASE("scale: hashed routes (ECMP) keep symmetry as lanes: the full run's step, class ends and transfers") {
  // Gradient buckets of 2 MB: each lane's reductions queue behind its own previous ones.
  auto job = gpt_job(2, 2, 4, 16, 4);
  job.training->dp_bucket = Bytes(2e6);
  const auto g = workloads::generate_step(job, topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = contended_fabric();
  auto run = [&](bool symmetry) {
    return isolated([&] {
      sim::SimgridOptions options;
      options.routing = topology::Routing::Ecmp;
      options.record_transfers = true;
      options.symmetry = symmetry;
      const auto t = sim::play_simgrid(g, topo, options);
      const auto totals = transfer_totals(t);
      std::vector<double> out{t.step_time.value(), t.symmetry.find("as lanes") != std::string::npos ? 1.0 : 0.0};
      out.insert(out.end(), totals.begin(), totals.end());
      for (const auto& c : t.classes) out.push_back(c.end.value());
      return out;
    });
  };
  const auto on = run(true);
  const auto off = run(false);
  MESSAGE("ECMP: symmetry off ", off[0], " s, as lanes ", on[0], " s");
  CHECK(on[1] == 1.0);
  CHECK(off[1] == 0.0);
  REQUIRE(on.size() == off.size());
  CHECK(on[0] == doctest::Approx(off[0]).epsilon(1e-9).scale(0));
  CHECK(on[2] == off[2]);                                            // transfers
  CHECK(on[3] == doctest::Approx(off[3]).epsilon(1e-12).scale(0));   // their bytes
  CHECK(on[4] == doctest::Approx(off[4]).epsilon(1e-9).scale(0));    // their busy time
  for (std::size_t c = 5; c < on.size(); ++c) CHECK(on[c] == doctest::Approx(off[c]).epsilon(1e-9).scale(0));
  // Not a trivial agreement: the hash makes this step slower than D-mod-K's on the same fabric.
  const double dmodk = isolated([&] {
    sim::SimgridOptions options;
    options.routing = topology::Routing::DModK;
    return std::vector<double>{sim::play_simgrid(g, topo, options).step_time.value()};
  })[0];
  MESSAGE("D-mod-K ", dmodk, " s");
  CHECK(dmodk != doctest::Approx(on[0]).epsilon(1e-6));
}

// Lanes are exact only while every send starts at one time on all lanes. A hand-made two-stage step over the
// two-NIC nodes (whose routes do not map along TP): stage 0 sends, receives the backward, then sends again;
// stage 1 receives, computes, all-reduces over TP and sends back.
// With a TP all-reduce between that receive and the second send, lanes apply and equal the full run; without
// it the second send would start at each lane's own time, and symmetry refuses, saying why.
TEST_CASE("scale: lanes refuse a send that follows a transfer with no TP collective between, and apply with one") {
  using namespace workloads;
  const Workload w = gpt_job(4, 2, 1, 2, 2);
  auto compute = [](double ms) {
    return ComputeOp{Scope::Layer, std::nullopt, Pass::Forward, 0, 0, {}, {}, Seconds(ms * 1e-3), Seconds(0)};
  };
  const PipeTag f0{0, 0, Pass::Forward}, b0{0, 0, Pass::Backward}, f1{1, 0, Pass::Forward};
  const Bytes mb(8e6);
  const CollectiveOp tp_all_reduce{CollectiveKind::AllReduce, Group::Tp, Bytes(1e6), CommPurpose::TensorParallel, 0, 0};
  const auto graph = [&](bool resync) {
    RankClass first{0, {0, 1, 2, 3}, {}};
    first.ops = {{compute(1), {}}, {SendOp{1, mb, f0}, {0}}, {RecvOp{1, mb, b0}, {}}};
    if (resync) {
      first.ops.push_back({tp_all_reduce, {2}});
      first.ops.push_back({SendOp{1, mb, f1}, {3}});
    } else {
      first.ops.push_back({SendOp{1, mb, f1}, {2}});
    }
    RankClass second{1, {4, 5, 6, 7}, {}};   // its send back after a TP all-reduce in both variants
    second.ops = {{RecvOp{0, mb, f0}, {}}, {compute(2), {0}},
                  {tp_all_reduce, {1}},
                  {SendOp{0, mb, b0}, {2}}, {RecvOp{0, mb, f1}, {}}};
    return StepGraph{w, Placement(w.plan), Granularity::Layer, 1, {first, second}};
  };
  const auto topo = nodes_on_a_switch(2, 4, 2);
  const auto why = [&](const StepGraph& g) {
    return sim::run_isolated([&] { return sim::play_simgrid(g, topo, sim::SimgridOptions{}).symmetry; });
  };
  const auto unsynced = graph(false);
  const std::string refused = why(unsynced);
  MESSAGE("without a TP collective: ", refused);
  CHECK(refused.rfind("not applied", 0) == 0);
  CHECK(refused.find("stage 0's op 3 (a send or collective) may start at different times") != std::string::npos);
  CHECK(play(unsynced, topo, {false, false, true}).step == play(unsynced, topo, {}).step);
  const auto synced = graph(true);
  const std::string applied = why(synced);
  MESSAGE("with one: ", applied);
  CHECK(applied.find("as lanes") != std::string::npos);
  check_same_timing(play(synced, topo, {false, false, true}), play(synced, topo, {}));
}

TEST_CASE("scale: coarse compute ops (one per layer pass) keep the kernel-level step time within 1 percent") {
  const auto topo = contended_fabric();
  auto job = gpt_job(2, 2, 4, 16, 4);
  const auto gpu = topology::find_gpu("a100-sxm4-80gb");
  // ZeRO 0, then ZeRO-3, whose per-module gathers and reduce-scatters overlap compute inside each layer pass.
  for (const int zero : {0, 3}) {
    CAPTURE(zero);
    job.plan.zero = zero;
    const auto layer = play(workloads::generate_step(job, gpu, {workloads::Granularity::Layer}), topo, {});
    const auto kernel = play(workloads::generate_step(job, gpu, {workloads::Granularity::Kernel}), topo, {});
    MESSAGE("zero ", zero, ": layer ops ", layer.step, " s, kernel ops ", kernel.step, " s, deviation ",
            deviation(layer, kernel));
    CHECK(deviation(layer, kernel) < 0.01);
  }
}

// Issue 22: a mixture of experts' all-to-alls, inside a node (8-way) and across the contended fabric (16-way,
// order tp-pp-dp strides the group over the nodes), under every shortcut and fully expanded.
TEST_CASE("scale: an MoE step's all-to-alls keep the fully expanded step time, inside a node and across the fabric") {
  const auto topo = contended_fabric();
  for (const int ep : {2, 8}) {
    workloads::Workload w;
    w.model = workloads::find_model("mixtral-8x7b");
    w.model.layers = 2;
    w.model.seq_length = 1024;
    w.model.experts = 16;
    w.training = workloads::training_defaults(topology::Precision::Bf16);
    w.training->global_batch = 16;
    w.plan.dp = 16;
    w.plan.ep = ep;
    w.plan.zero = 1;
    w.plan.order = *workloads::parse_order("tp-pp-dp");
    w.gpus_per_node = 2;
    workloads::check_plan(w, 16);
    const auto g = workloads::generate_step(w, topology::find_gpu("a100-sxm4-80gb"));
    const auto full = play(g, topo, {});
    const auto fast = play(g, topo, {true, true, true});
    MESSAGE("ep ", ep, ": expanded ", full.step, " s, shortcuts ", fast.step, " s");
    CHECK(deviation(fast, full) < 0.01);
  }
}
