// The SimGrid engine on step graphs and lowered collectives, against the analytic engine and closed forms.
// Every simulation runs in its own child process (run_isolated): SimGrid allows one engine per process.
#include "sim/simgrid_support.hpp"

using namespace simgrid_support;
using dtsim::test::gpt_job;

namespace {

// Closed-form costs on a contention-free topology where every GPU pair is `hops` links of one class apart.
sim::CommCosts ring_costs(const topology::Link& link, int hops, Seconds latency, Seconds step_latency) {
  const double bw = rate(link), hop = hops * link.latency.value();
  return {[=](const workloads::CollectiveOp& op, const std::vector<int>& group) {
            return Seconds(ring_time(op.bytes.value(), static_cast<int>(group.size()), latency.value(),
                                     step_latency.value(), hop, bw));
          },
          [=](const workloads::SendOp& s, int, int) { return Seconds(s.bytes.value() / bw + hop); }};
}

// step time, each class's end, then rank 0's ops (start, end).
std::vector<double> summary(const sim::Timeline& t) {
  std::vector<double> out{t.step_time.value()};
  for (const auto& c : t.classes) out.push_back(c.end.value());
  for (const auto& o : t.classes.front().ops) {
    out.push_back(o.start.value());
    out.push_back(o.end.value());
  }
  return out;
}

void compare(const std::vector<double>& simgrid, const std::vector<double>& analytic) {
  REQUIRE(simgrid.size() == analytic.size());
  double worst = 0;
  for (std::size_t i = 0; i < simgrid.size(); ++i)
    if (analytic[i] != 0.0) worst = std::max(worst, std::abs(simgrid[i] / analytic[i] - 1));
  MESSAGE("largest relative deviation from the analytic engine over ", simgrid.size(), " values: ", worst);
  for (std::size_t i = 0; i < simgrid.size(); ++i) {
    CAPTURE(i);
    if (analytic[i] == 0.0)
      CHECK(simgrid[i] == 0.0);
    else
      CHECK(simgrid[i] == near(analytic[i]));
  }
}

void check_against_analytic(const workloads::StepGraph& g, const topology::Topology& topo, int hops) {
  const Seconds lat = microseconds(7), step = microseconds(0.5);
  const auto analytic = sim::play_analytic(g, ring_costs(topo.link(0), hops, lat, step));
  const auto simgrid = isolated([&] {
    const auto t = sim::flow::play_graph(g, topo, sim::SimgridOptions{}, ring_lowering(lat, step));
    std::vector<double> out = summary(t);
    // rank 0's own timeline is the class's when rank 0 ends last (every rank alike here)
    for (const auto& o : t.ranks.front().ops) out.push_back(o.end.value());
    return out;
  });
  std::vector<double> expected = summary(analytic);
  for (const auto& o : analytic.classes.front().ops) expected.push_back(o.end.value());
  compare(simgrid, expected);
  CHECK(analytic.step_time > Seconds(0));
}

}  // namespace

TEST_CASE("simgrid: a 4-stage pipeline on a full mesh plays as the analytic engine with closed-form costs") {
  auto g = workloads::generate_step(gpt_job(1, 4, 1, 8, 8), topology::find_gpu("a100-sxm4-80gb"));
  check_against_analytic(g, built(IntraKind::FullMesh, 4), 1);
}

TEST_CASE("simgrid: a TP-8 stage on an NVSwitch plays as the analytic engine with closed-form costs") {
  auto g = workloads::generate_step(gpt_job(8, 1, 1, 4, 2), topology::find_gpu("a100-sxm4-80gb"));
  check_against_analytic(g, built(IntraKind::NvSwitch, 8), 2);
}

TEST_CASE("simgrid: zero-byte sends and collectives and a one-member group play as the analytic engine") {
  using namespace workloads;
  Workload w = gpt_job(2, 2, 1, 2, 2);
  const PipeTag tag{0, 0, Pass::Forward};
  auto compute = [](double ms) { return ComputeOp{Scope::Layer, std::nullopt, Pass::Forward, 0, 0, {}, {}, Seconds(ms * 1e-3), Seconds(0)}; };
  auto all_reduce = [](Group g, double bytes) {
    return CollectiveOp{CollectiveKind::AllReduce, g, Bytes(bytes), CommPurpose::TensorParallel, 0, 0};
  };
  RankClass first{0, {0, 1}, {}};
  first.ops = {{compute(1), {}}, {SendOp{1, Bytes(0), tag}, {0}}, {all_reduce(Group::Dp, 0), {0}},
               {all_reduce(Group::Tp, 1 << 20), {2}}, {compute(0), {3}}};
  RankClass second{1, {2, 3}, {}};
  second.ops = {{RecvOp{0, Bytes(0), tag}, {}}, {compute(2), {0}}, {all_reduce(Group::Tp, 0), {1}}};
  const StepGraph g{w, Placement(w.plan), Granularity::Layer, 1, {first, second}};
  check_against_analytic(g, built(IntraKind::FullMesh, 4), 1);
}

TEST_CASE("simgrid: recorded transfers are every pipeline send and collective transfer with its nodes and bytes") {
  auto g = workloads::generate_step(gpt_job(1, 2, 1, 4, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = built(IntraKind::FullMesh, 2);
  const auto t = isolated([&] {
    sim::SimgridOptions options;
    options.record_transfers = true;
    options.aggregate = false;   // every step's transfers, as lowered
    const auto timeline = sim::flow::play_graph(g, topo, options, ring_lowering(Seconds(0), Seconds(0)));
    std::vector<double> out{static_cast<double>(timeline.transfers.size())};
    for (const auto& r : timeline.transfers) {
      out.push_back(r.src);
      out.push_back(r.dst);
      out.push_back(r.bytes.value());
      out.push_back((r.end - r.start).value());
    }
    return out;
  });
  std::size_t sends = 0, collectives = 0;
  for (const auto& c : g.classes)
    for (const auto& op : c.ops) {
      sends += std::holds_alternative<workloads::SendOp>(op.body);
      collectives += std::holds_alternative<workloads::CollectiveOp>(op.body);
    }
  CHECK(collectives == 2);                              // the tied embedding's all-reduce, on both stages
  REQUIRE(t[0] == static_cast<double>(sends + 2 * 2));   // one all-reduce over 2 ranks: 2 steps x 2 transfers
  const double bw = rate(topo.link(0)), hop = topo.link(0).latency.value();
  for (std::size_t i = 1; i < t.size(); i += 4) {
    CHECK(t[i] != t[i + 1]);
    CHECK(t[i + 3] == near(t[i + 2] / bw + hop));
  }
}

TEST_CASE("simgrid: a plan larger than the cluster is an input error") {
  auto g = workloads::generate_step(gpt_job(1, 4, 1, 8, 8), topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = built(IntraKind::FullMesh, 2);
  CHECK_THROWS_AS(isolated([&] {
                    sim::flow::play_graph(g, topo, {}, ring_lowering(Seconds(0), Seconds(0)));
                    return std::vector<double>{};
                  }),
                  InputError);
}

// ---- collectives lowered by sim::lower -------------------------------------------------------------------------

namespace {

// Contention-free playback of the step rule (collective.hpp) on `topo`, written independently of the engine: a
// transfer of step k from e starts step_latency after max(latency, the end of e's step k-1 transfers) and lasts
// its route's latency + bytes / (least bandwidth x efficiency on the route, or its rate cap when lower). Exact
// when no two transfers at once share a link direction.
double step_rule_time(const sim::Lowered& l, const topology::Topology& topo, const std::vector<NodeId>& gpus,
                      std::optional<NodeId> nvswitch = std::nullopt) {
  topology::Router router(topo);
  using Endpoint = std::pair<int, int>;
  auto endpoint = [](int rank, int machine) { return Endpoint{rank, rank == sim::kSwitch ? machine : -1}; };
  auto node = [&](int rank) { return rank == sim::kSwitch ? nvswitch.value() : gpus.at(static_cast<std::size_t>(rank)); };
  std::map<Endpoint, double> previous;
  double end = l.latency.value();
  for (int step = 0; step < l.steps; ++step) {
    std::map<Endpoint, double> current;
    for (const sim::Transfer& t : l.transfers) {
      if (t.step != step) continue;
      const Endpoint src = endpoint(t.src, t.machine), dst = endpoint(t.dst, t.machine);
      const auto waited = previous.find(src);
      const double start =
          std::max(l.latency.value(), waited == previous.end() ? 0.0 : waited->second) + l.step_latency.value();
      const auto route = router.route(node(t.src), node(t.dst));
      double bw = t.rate ? t.rate->value() : 1e300;
      for (const auto& hop : route.hops) bw = std::min(bw, rate(topo.link(hop.link)));
      const double done = start + route.latency.value() + t.bytes.value() / bw;
      current[src] = std::max(current[src], done);
      current[dst] = std::max(current[dst], done);
      end = std::max(end, done);
    }
    previous = std::move(current);
  }
  return end;
}

std::vector<NodeId> first_gpus(const topology::Topology& topo, int n) {
  return {topo.gpus().begin(), topo.gpus().begin() + n};
}

std::vector<double> timed(CollectiveKind kind, const std::vector<Bytes>& sizes, int n, const topology::Topology& topo,
                          const sim::GroupLayout& layout, sim::Algorithm algorithm) {
  return isolated([&] {
    std::vector<double> out;
    for (Seconds t : sim::time_collectives(kind, sizes, first_ranks(n), topo, layout, algorithm)) out.push_back(t.value());
    return out;
  });
}

}  // namespace

TEST_CASE("simgrid: ring all-reduce lowered by sim::lower matches the closed form on a ring and an NVSwitch") {
  const int n = 8;
  const std::vector<Bytes> sizes{Bytes(1 << 30), Bytes(1 << 24)};   // one after the other: the clock keeps running
  for (IntraKind intra : {IntraKind::Ring, IntraKind::NvSwitch}) {
    CAPTURE(topology::to_string(intra));
    const auto topo = built(intra, n);
    const auto t = timed(CollectiveKind::AllReduce, sizes, n, topo, one_machine(n), sim::Algorithm::Ring);
    const topology::Link& link = topo.link(0);
    const double hop = (intra == IntraKind::Ring ? 1 : 2) * link.latency.value();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const sim::Lowered l = sim::lower(CollectiveKind::AllReduce, sizes[i], one_machine(n), sim::Algorithm::Ring);
      REQUIRE(l.steps == 2 * (n - 1));
      const double closed = ring_time(sizes[i].value(), n, l.latency.value(), l.step_latency.value(), hop, rate(link));
      CHECK(t[i] == near(closed));
      CHECK(t[i] == near(step_rule_time(l, topo, first_gpus(topo, n))));
    }
  }
}

TEST_CASE("simgrid: x8 slots slow a PCIe all-reduce, and bridges across the sockets are walked by the ring search") {
  // 4 A100 PCIe on one socket, two per PCIe switch: the x16 slots (31.5 GB/s x 0.8) bound the ring; at x8 they
  // give half, so the 256 MiB all-reduce takes about twice as long.
  const std::vector<Bytes> size{Bytes(256 << 20)};
  const auto time_on = [&](const topology::ClusterSpec& spec) {
    const auto b = topology::build_cluster(spec);
    std::vector<int> ranks = first_ranks(spec.gpus());
    return timed(CollectiveKind::AllReduce, size, spec.gpus(), b.topology,
                 sim::group_layout(ranks, b.topology, false), sim::Algorithm::Auto)[0];
  };
  topology::ClusterSpec box = topology::default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 4);
  const double x16 = time_on(box);
  box.pcie.slot_lanes = 8;
  const double x8 = time_on(box);
  CHECK(x8 / x16 == doctest::Approx(2.0).epsilon(0.02));
  // Two GPUs per socket on their own root ports: the ring crosses the 12.7 GB/s socket link; bridged across the
  // sockets (0 = 2, 1 = 3), the ring search walks 0 1 3 2 and never crosses it.
  topology::ClusterSpec sockets = topology::default_cluster("a100-pcie-80gb", IntraKind::Pcie, 1, 4);
  sockets.pcie.gpus_per_switch = 1;
  sockets.pcie.sockets = 2;
  const double plain = time_on(sockets);
  sockets.pcie.bridges = {{0, 2}, {1, 3}};
  const double bridged = time_on(sockets);
  const double wire = 2.0 * 3 / 4 * (256 << 20);   // bytes each ring edge carries
  CHECK(plain == doctest::Approx(wire / (10e9 * 28 / 22)).epsilon(0.05));
  CHECK(bridged == doctest::Approx(wire / (31.5e9 * 0.8)).epsilon(0.05));
}

TEST_CASE("simgrid: ring all-reduce through the star's hub runs at the hub's capacity shared by all") {
  const int n = 8;
  const auto topo = built(IntraKind::Star, n);
  const Bytes size(1 << 30);
  const auto t = timed(CollectiveKind::AllReduce, {size}, n, topo, one_machine(n), sim::Algorithm::Ring);
  const sim::Lowered l = sim::lower(CollectiveKind::AllReduce, size, one_machine(n), sim::Algorithm::Ring);
  const double hub = topo.node(*topo.find_node("hub")).capacity->value() / n;
  REQUIRE(hub < rate(topo.link(0)));
  CHECK(t[0] == near(ring_time(size.value(), n, l.latency.value(), l.step_latency.value(),
                               2 * topo.link(0).latency.value(), hub)));
}

TEST_CASE("simgrid: NVLS all-reduce on an H100 NVSwitch is bounded by the switch's port rate") {
  const int n = 8;
  const auto topo = built(IntraKind::NvSwitch, n, "h100-sxm5-80gb");
  const sim::GroupLayout layout{std::vector<int>(n, 0), true};
  const std::vector<Bytes> sizes{Bytes(1 << 20), Bytes(1 << 30)};
  const auto t = timed(CollectiveKind::AllReduce, sizes, n, topo, layout, sim::Algorithm::Nvls);
  const auto& tuning = sim::collective_tuning();
  const double port = std::min(rate(topo.link(0)), tuning.nvls_port_rate.value());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const sim::Lowered l = sim::lower(CollectiveKind::AllReduce, sizes[i], layout, sim::Algorithm::Nvls);
    CHECK(t[i] == near(step_rule_time(l, topo, first_gpus(topo, n), *topo.find_node("nvswitch"))));
    const double algbw = sizes[i].value() / t[i];
    CHECK(algbw < tuning.nvls_port_rate.value());
    MESSAGE("NVLS ", sizes[i].value(), " B: algbw ", algbw / 1e9, " GB/s (port rate ", tuning.nvls_port_rate.value() / 1e9, ")");
  }
  // Large buffers: chunks up, then down, pipelined over chunks + 1 steps at the port's rate.
  const double k = tuning.chunks;
  CHECK(sizes[1].value() / t[1] == doctest::Approx(port * k / (k + 1)).epsilon(0.01));
}

TEST_CASE("simgrid: auto on an NVLS machine runs ring LL on small all-reduces and NVLS on large ones, the faster of the two") {
  // NCCL's tuner (src/graph/tuning.cc) takes the least predicted time over algorithms: on 8 H100 a ring with LL
  // (6.6 us + 14 hops of 0.6 us) undercuts NVLS's 25 us floor until the buffer is a few hundred KB.
  const int n = 8;
  const auto topo = built(IntraKind::NvSwitch, n, "h100-sxm5-80gb");
  const sim::GroupLayout layout = sim::group_layout(first_ranks(n), topo, true);
  REQUIRE(layout.switch_path_rate.value() > 0.0);
  const std::vector<Bytes> sizes{Bytes(8), Bytes(64 << 10), Bytes(4 << 20), Bytes(1 << 30)};
  const auto automatic = timed(CollectiveKind::AllReduce, sizes, n, topo, layout, sim::Algorithm::Auto);
  const auto ring = timed(CollectiveKind::AllReduce, sizes, n, topo, layout, sim::Algorithm::Ring);
  const auto nvls = timed(CollectiveKind::AllReduce, sizes, n, topo, layout, sim::Algorithm::Nvls);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(sizes[i].value());
    CHECK(automatic[i] <= std::min(ring[i], nvls[i]) * (1.0 + 1e-9));
  }
  const auto picked = [&](Bytes s) { return sim::lower(CollectiveKind::AllReduce, s, layout, sim::Algorithm::Auto); };
  CHECK(picked(sizes[0]).algorithm == sim::Algorithm::Ring);
  CHECK(picked(sizes[0]).protocol == sim::Protocol::LL);
  CHECK(picked(sizes[1]).algorithm == sim::Algorithm::Ring);
  CHECK(picked(sizes[2]).algorithm == sim::Algorithm::Nvls);
  CHECK(picked(sizes[3]).algorithm == sim::Algorithm::Nvls);
  CHECK(automatic[0] == doctest::Approx(15.0e-6).epsilon(0.01));   // NCCL's ring LL estimate on 8 ranks
  CHECK(automatic[0] < nvls[0] - 5.0e-6);
  // A protocol NVLS does not run leaves the ring; without the switch path, auto keeps NVLS.
  CHECK(sim::lower(CollectiveKind::AllReduce, sizes[3], layout, sim::Algorithm::Auto, sim::Protocol::LL128).algorithm ==
        sim::Algorithm::Ring);
  sim::GroupLayout unknown = layout;
  unknown.switch_path_rate = BytesPerSecond(0);
  CHECK(sim::lower(CollectiveKind::AllReduce, sizes[0], unknown, sim::Algorithm::Auto).algorithm == sim::Algorithm::Nvls);
}

namespace {

struct FatTreeRun {
  double simulated = 0;
  double wall_s = 0;     // in the simulation process: platform, run and timeline
  double peak_mib = 0;   // the simulation process's peak resident memory
};

FatTreeRun ring_on_fat_tree(const topology::Topology& topo, int gpus, Bytes size, const sim::GroupLayout& layout) {
  const auto out = isolated([&] {
    const auto t0 = std::chrono::steady_clock::now();
    const auto times = sim::time_collectives(CollectiveKind::AllReduce, {size}, first_ranks(gpus), topo, layout,
                                             sim::Algorithm::Ring, topology::Routing::Single, true, 1);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - t0;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return std::vector<double>{times[0].value(), wall.count(), static_cast<double>(usage.ru_maxrss) / 1024};
  });
  return FatTreeRun{out[0], out[1], out[2]};
}

}  // namespace

// Nodes of 8 A100s on an NVSwitch, one NIC per GPU, a leaf-spine fabric, one ring (max_channels 1: NCCL's
// channels would put eight flows on each leaf crossing, which without ECMP share spine0). The ring's hops never share a link
// direction (without ECMP the leaf crossings use spine0, in opposite directions), so every step of every endpoint
// waits for the same slowest hop: latency + 2(n-1)(step_latency + slowest hop's latency + S/n at its rate).
TEST_CASE("simgrid: 1 GiB ring all-reduce on 64- and 256-GPU fat trees matches the closed form") {
  for (int gpus : {64, 256}) {
    auto spec = topology::default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, gpus / 8, 8);
    spec.inter = topology::InterKind::FatTree;
    const auto topo = topology::build_cluster(spec).topology;
    sim::GroupLayout layout;
    for (NodeId g : topo.gpus()) layout.machine.push_back(topo.node(g).machine);
    const Bytes size(1 << 30);
    sim::CollectiveTuning one_ring = sim::collective_tuning();
    one_ring.max_channels = 1;
    const sim::Lowered l =
        sim::lower(CollectiveKind::AllReduce, size, layout, sim::Algorithm::Ring, sim::Protocol::Auto, one_ring);
    REQUIRE(l.transfers.size() == static_cast<std::size_t>(2 * (gpus - 1) * gpus));
    topology::Router router(topo);
    double slowest = 0;
    for (int i = 0; i < gpus; ++i) {
      const auto route = router.route(topo.gpus()[static_cast<std::size_t>(i)],
                                      topo.gpus()[static_cast<std::size_t>((i + 1) % gpus)]);
      double bw = 1e300;
      for (const auto& hop : route.hops) bw = std::min(bw, rate(topo.link(hop.link)));
      slowest = std::max(slowest, route.latency.value() + size.value() / gpus / bw);
    }
    const FatTreeRun run = ring_on_fat_tree(topo, gpus, size, layout);
    MESSAGE(gpus, " GPUs, ", l.transfers.size(), " transfers: simulated ", run.simulated, " s in ", run.wall_s,
            " s of wall time, peak ", run.peak_mib, " MiB");
    CHECK(run.simulated == near(l.latency.value() + 2.0 * (gpus - 1) * (l.step_latency.value() + slowest)));
    CHECK(run.simulated == near(step_rule_time(l, topo, first_gpus(topo, gpus))));
  }
}

namespace {

// Costs from the same lowering, played by the contention-free step rule on the first GPUs of `topo`.
sim::CommCosts lowered_costs(const topology::Topology& topo, sim::Algorithm algorithm, bool nvls) {
  return {[&topo, algorithm, nvls](const workloads::CollectiveOp& op, const std::vector<int>& group) {
            const int ranks = static_cast<int>(group.size());
            const sim::GroupLayout layout{std::vector<int>(static_cast<std::size_t>(ranks), 0), nvls, false};
            const auto l = sim::lower(op.kind, op.bytes, layout, algorithm);
            std::optional<NodeId> sw = topo.find_node("nvswitch");
            return Seconds(step_rule_time(l, topo, first_gpus(topo, ranks), sw));
          },
          [&topo](const workloads::SendOp& s, int, int) {
            return Seconds(s.bytes.value() / rate(topo.link(0)) + topo.link(0).latency.value());
          }};
}

void check_lowered(const workloads::StepGraph& g, const topology::Topology& topo, sim::Algorithm algorithm, bool nvls) {
  const auto analytic = sim::play_analytic(g, lowered_costs(topo, algorithm, nvls));
  const auto simgrid = isolated([&] {
    sim::SimgridOptions options;
    options.algorithm = algorithm;
    return summary(sim::play_simgrid(g, topo, options));
  });
  compare(simgrid, summary(analytic));
}

}  // namespace

TEST_CASE("simgrid: play_simgrid with sim::lower agrees with the analytic engine on contention-free plans") {
  const auto& a100 = topology::find_gpu("a100-sxm4-80gb");
  SUBCASE("tp=1 pp=4 on a full mesh (ring)") {
    check_lowered(workloads::generate_step(gpt_job(1, 4, 1, 8, 8), a100), built(IntraKind::FullMesh, 4),
                  sim::Algorithm::Ring, false);
  }
  SUBCASE("tp=8 on an NVSwitch (ring)") {
    check_lowered(workloads::generate_step(gpt_job(8, 1, 1, 4, 2), a100), built(IntraKind::NvSwitch, 8),
                  sim::Algorithm::Ring, false);
  }
  SUBCASE("tp=8 on an H100 NVSwitch (NVLS)") {
    const auto& h100 = topology::find_gpu("h100-sxm5-80gb");
    check_lowered(workloads::generate_step(gpt_job(8, 1, 1, 4, 2), h100), built(IntraKind::NvSwitch, 8, "h100-sxm5-80gb"),
                  sim::Algorithm::Nvls, true);
  }
}

TEST_CASE("simgrid: an algorithm the group cannot run is an input error from the simulation process") {
  const auto g = workloads::generate_step(gpt_job(8, 1, 1, 4, 2), topology::find_gpu("a100-sxm4-80gb"));
  const auto topo = built(IntraKind::NvSwitch, 8);   // NVLink3: no reduction in the switch
  sim::SimgridOptions options;
  options.algorithm = sim::Algorithm::Nvls;
  CHECK_THROWS_AS(isolated([&] {
                    sim::play_simgrid(g, topo, options);
                    return std::vector<double>{};
                  }),
                  InputError);
}
