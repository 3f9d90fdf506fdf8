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

// `g` with a host op before each layer compute op, `factor` times its duration, which the op waits for.
workloads::StepGraph with_host_ops(workloads::StepGraph g, double factor) {
  for (auto& c : g.classes) {
    std::vector<workloads::Op> out;
    std::vector<std::uint32_t> index(c.ops.size());
    for (std::size_t i = 0; i < c.ops.size(); ++i) {
      workloads::Op op = c.ops[i];
      for (auto& d : op.deps) d = index[d];
      if (const auto* k = std::get_if<workloads::ComputeOp>(&op.body); k && k->scope == workloads::Scope::Layer) {
        out.push_back({workloads::HostOp{k->pass, k->layer, k->micro_batch, k->duration * factor}, op.deps});
        op.deps.push_back(static_cast<std::uint32_t>(out.size() - 1));
      }
      index[i] = static_cast<std::uint32_t>(out.size());
      out.push_back(std::move(op));
    }
    c.ops = std::move(out);
  }
  return g;
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
           {host(1), {}},       // [3, 4]: ready at 0, after the host thread's previous op
           {compute(1), {1}},   // [3, 4]: after the first host op
           {host(2), {3}},      // [4, 6]: the host thread's next, once its dep ends
           {compute(0.5), {4}}, // [6, 6.5]
           {compute(1), {0}}};  // [6.5, 7.5]: ready at 1 ms, after the stream's previous op
  const StepGraph g{w, Placement(w.plan), Granularity::Layer, 1, {c}};
  const auto analytic = sim::play_analytic(g, sim::free_communication());
  const std::vector<double> expected{7.5e-3, 0, 1e-3, 0, 3e-3, 3e-3, 4e-3, 3e-3, 4e-3, 4e-3, 6e-3, 6e-3, 6.5e-3, 6.5e-3, 7.5e-3};
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
  // TP 1, and TP 2 with 8-way expert parallelism.
  for (const int tp : {1, 2}) {
    CAPTURE(tp);
    workloads::Workload w = small_experts();
    w.plan.tp = tp;
    w.plan.dp = 8 / tp;
    w.plan.etp = 1;
    w.training->sequence_parallel = tp > 1;
    workloads::check_plan(w, 8);
    const auto g = workloads::generate_step(w, topology::find_gpu("h100-sxm5-80gb"));
    const auto topo = built(IntraKind::NvSwitch, 8, "h100-sxm5-80gb");
    const auto costs = sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Ecmp);
    const auto analytic = sim::play_analytic(g, costs);
    Seconds host;
    for (const auto& op : g.classes.front().ops)
      if (const auto* h = std::get_if<workloads::HostOp>(&op.body)) host += h->duration;
    CHECK(host.value() > 0);
    // Host-bound: the step takes more than the host ops' chain alone, and without them it would be shorter by a
    // good part of the host's time.
    const Seconds unbound = sim::play_analytic(workloads::without_host_ops(g), costs).step_time;
    CHECK(analytic.step_time > host);
    CHECK(analytic.step_time > unbound + host * 0.2);
    const auto played = [&](bool shortcuts) {
      return isolated([&] {
        sim::SimgridOptions options;
        options.memoize = options.aggregate = options.symmetry = shortcuts;
        return std::vector<double>{sim::play_simgrid(g, topo, options).step_time.value()};
      }).front();
    };
    const double on = played(true), off = played(false);
    CHECK(on == doctest::Approx(off).epsilon(1e-6));
    CHECK(on == doctest::Approx(analytic.step_time.value()).epsilon(0.03));
  }
}

TEST_CASE("host ops: the symmetry shortcut's lanes play them as the full run does") {
  // The lanes case of simgrid_scale_test (tp 4 over two NICs a node: routes do not map along TP), every layer
  // compute op behind a host op half again as long: the images' lanes keep the full run's step and class ends.
  const auto topo = nodes_on_a_switch(2, 4, 2);
  const auto g = with_host_ops(workloads::generate_step(dtsim::test::gpt_job(4, 1, 2, 8, 2),
                                                        topology::find_gpu("a100-sxm4-80gb")),
                               1.5);
  const auto run = [&](bool symmetry) {
    return isolated([&] {
      sim::SimgridOptions options;
      options.memoize = options.aggregate = false;
      options.symmetry = symmetry;
      const auto t = sim::play_simgrid(g, topo, options);
      std::vector<double> out{t.step_time.value(), t.symmetry.find("as lanes") != std::string::npos ? 1.0 : 0.0};
      for (const auto& c : t.classes) out.push_back(c.end.value());
      return out;
    });
  };
  const auto on = run(true), off = run(false);
  CHECK(on[1] == 1.0);
  REQUIRE(on.size() == off.size());
  CHECK(on[0] == doctest::Approx(off[0]).epsilon(1e-9));
  for (std::size_t i = 2; i < on.size(); ++i) CHECK(on[i] == doctest::Approx(off[i]).epsilon(1e-9));
  // The host ops bind: the step is longer than the same graph's without them.
  const auto bare = isolated([&] {
    return std::vector<double>{
        sim::play_simgrid(workloads::without_host_ops(g), topo, sim::SimgridOptions{}).step_time.value()};
  });
  CHECK(on[0] > bare.front() * 1.2);
}
