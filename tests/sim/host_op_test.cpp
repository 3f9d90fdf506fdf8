// Host ops (workloads::HostOp) on both engines: the host thread runs its ops one at a time beside the compute
// stream, and what waits for one starts after it; the SimGrid engine plays them as the analytic engine does,
// with its scale shortcuts on or off.
#include "sim/simgrid_support.hpp"

#include "sim/analytic/analytic_costs.hpp"

using namespace simgrid_support;

namespace {

std::vector<double> starts_and_ends(const sim::Timeline& t) {
  std::vector<double> out{t.step_time.value()};
  for (const auto& o : t.classes.front().ops) {
    out.push_back(o.start.value());
    out.push_back(o.end.value());
  }
  return out;
}

// Qwen3-30B-A3B's layer shape, 2 layers, 8-way expert parallel on one 8-GPU H100 NVSwitch board, two micro-batches
// of 2048 tokens each: its MoE layer passes compute for less than the host's time to issue them
// (workloads/host_model.hpp).
workloads::Workload small_experts() {
  workloads::Workload w;
  w.model = workloads::find_model("qwen3-30b-a3b");
  w.model.layers = 2;
  w.model.seq_length = 2048;
  w.training = workloads::training_defaults(topology::Precision::Bf16);
  workloads::apply_framework(*w.training, workloads::Framework::MegatronCore);
  w.training->global_batch = 16;
  w.training->micro_batch = 1;
  w.plan.dp = 8;
  w.plan.ep = 8;
  workloads::check_plan(w, 8);
  return w;
}

// `g` without its host ops: what waited for one waits for what it waited for.
workloads::StepGraph without_host(workloads::StepGraph g) {
  for (auto& c : g.classes) {
    std::vector<workloads::Op> kept;
    std::vector<std::vector<std::uint32_t>> becomes(c.ops.size());   // per old op: the kept ops it stands for
    for (std::size_t i = 0; i < c.ops.size(); ++i) {
      std::vector<std::uint32_t> deps;
      for (const auto d : c.ops[i].deps) deps.insert(deps.end(), becomes[d].begin(), becomes[d].end());
      if (std::holds_alternative<workloads::HostOp>(c.ops[i].body)) {
        becomes[i] = deps;
        continue;
      }
      becomes[i] = {static_cast<std::uint32_t>(kept.size())};
      kept.push_back({c.ops[i].body, deps});
    }
    c.ops = std::move(kept);
  }
  return g;
}

}  // namespace

TEST_CASE("host ops: one at a time on the host thread beside the compute stream, and what waits for one starts after it") {
  using namespace workloads;
  const Workload w = dtsim::test::gpt_job(2, 1, 1, 2, 2);
  auto compute = [](double ms) {
    return ComputeOp{Scope::Layer, std::nullopt, Pass::Forward, 0, 0, {}, {}, Seconds(ms * 1e-3), Seconds(0)};
  };
  auto host = [](double ms) { return HostOp{Pass::Forward, 0, 0, Seconds(ms * 1e-3)}; };
  RankClass c{0, {0, 1}, {}};
  c.ops = {{compute(1), {}},    // [0, 1]
           {host(3), {}},       // [0, 3]: beside it
           {compute(1), {1}},   // [3, 4]: after the host op
           {host(2), {2}},      // [4, 6]: the host thread's next, once its dep ends
           {compute(0.5), {3}}, // [6, 6.5]
           {compute(1), {0}}};  // [6.5, 7.5]: ready at 1 ms, after the stream's previous op
  const StepGraph g{w, Placement(w.plan), Granularity::Layer, 1, {c}};
  const auto analytic = sim::play_analytic(g, sim::free_communication());
  const std::vector<double> expected{7.5e-3, 0, 1e-3, 0, 3e-3, 3e-3, 4e-3, 4e-3, 6e-3, 6e-3, 6.5e-3, 6.5e-3, 7.5e-3};
  const auto got = starts_and_ends(analytic);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
  // The host ops are no compute: the stream's busy time is its compute ops'.
  CHECK(analytic.classes.front().compute_busy.value() == doctest::Approx(3.5e-3));
  const auto simgrid = isolated([&] {
    return starts_and_ends(sim::flow::play_graph(g, built(IntraKind::NvSwitch, 2), sim::SimgridOptions{},
                                                 ring_lowering(Seconds(0), Seconds(0))));
  });
  REQUIRE(simgrid.size() == expected.size());
  for (std::size_t i = 0; i < simgrid.size(); ++i) {
    CAPTURE(i);
    CHECK(simgrid[i] == doctest::Approx(expected[i]).epsilon(1e-9));
  }
}

TEST_CASE("host ops: a host-bound MoE step plays alike on both engines, with the SimGrid shortcuts on or off") {
  const auto g = workloads::generate_step(small_experts(), topology::find_gpu("h100-sxm5-80gb"));
  const auto topo = built(IntraKind::NvSwitch, 8, "h100-sxm5-80gb");
  const auto analytic = sim::play_analytic(g, sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Ecmp));
  Seconds host;
  for (const auto& op : g.classes.front().ops)
    if (const auto* h = std::get_if<workloads::HostOp>(&op.body)) host += h->duration;
  CHECK(host.value() > 0);
  // Host-bound: the step takes more than the host ops' chain alone, and without them it would be shorter by a
  // good part of the host's time.
  const auto costs = sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Ecmp);
  const Seconds unbound = sim::play_analytic(without_host(g), costs).step_time;
  CHECK(analytic.step_time > host);
  CHECK(analytic.step_time > unbound + host * 0.2);
  const auto step = [&](bool shortcuts) {
    return isolated([&] {
      sim::SimgridOptions options;
      options.memoize = options.aggregate = options.symmetry = shortcuts;
      return std::vector<double>{sim::play_simgrid(g, topo, options).step_time.value()};
    }).front();
  };
  const double on = step(true), off = step(false);
  CHECK(on == doctest::Approx(off).epsilon(1e-6));
  CHECK(on == doctest::Approx(analytic.step_time.value()).epsilon(0.03));
}
