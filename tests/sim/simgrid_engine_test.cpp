// The SimGrid engine against closed forms, on contention-free cases and on cases whose sharing is textbook.
// Every simulation runs in its own child process (run_isolated): SimGrid allows one engine per process.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "sim/analytic_engine.hpp"
#include "sim/simgrid_engine.hpp"
#include "sim/simgrid_platform.hpp"
#include "sim/simgrid_player.hpp"
#include "topology/builders.hpp"
#include "topology/error.hpp"
#include "topology/routing.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using topology::IntraKind;
using topology::NodeId;
using workloads::CollectiveKind;

namespace {

constexpr double kTight = 1e-6;   // relative tolerance of the analytic cross-checks

// Relative closeness (doctest::Approx adds an absolute 1e-6 by default: far too loose for microseconds).
doctest::Approx near(double expected) { return doctest::Approx(expected).epsilon(kTight).scale(0); }

// ---- results out of the child process -------------------------------------------------------------------------

std::string pack(const std::vector<double>& v) {
  std::string s(v.size() * sizeof(double), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::vector<double> unpack(const std::string& s) {
  std::vector<double> v(s.size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(double));
  return v;
}

std::vector<double> isolated(const std::function<std::vector<double>()>& work) {
  return unpack(sim::run_isolated([&] { return pack(work()); }));
}

// ---- topologies ----------------------------------------------------------------------------------------------

topology::Link make(NodeId a, NodeId b, BytesPerSecond bw, Seconds lat, double eff) {
  return topology::Link{a, b, bw, lat, eff, "custom"};
}

NodeId gpu(topology::Topology& t, int i) {
  return t.add_node(topology::Node{topology::NodeKind::Gpu, "gpu" + std::to_string(i), 0, std::nullopt});
}

// gpu0 ─── gpu1: 25 GB/s per direction, 1 us, efficiency 0.8
topology::Topology two_gpus() {
  topology::Topology t;
  gpu(t, 0);
  gpu(t, 1);
  t.add_link(make(0, 1, gigabytes_per_second(25), microseconds(1), 0.8));
  return t;
}

topology::Topology built(IntraKind intra, int gpus, std::string_view gpu_name = "a100-sxm4-80gb") {
  return topology::build_cluster(topology::default_cluster(gpu_name, intra, 1, gpus)).topology;
}

double rate(const topology::Link& l) { return (l.bandwidth * l.efficiency).value(); }

// ---- hand-built lowerings (the step rule of collective.hpp) -------------------------------------------------

// Ring all-reduce: 2(n-1) steps, rank i sends S/n to rank i+1 in each.
sim::Lowered ring_allreduce(Bytes bytes, int n, Seconds latency, Seconds step_latency) {
  sim::Lowered l;
  l.steps = 2 * (n - 1);
  l.latency = latency;
  l.step_latency = step_latency;
  for (int step = 0; step < l.steps; ++step)
    for (int i = 0; i < n; ++i) l.transfers.push_back(sim::Transfer{i, (i + 1) % n, bytes / n, step, -1, {}});
  return l;
}

sim::flow::LowerFn ring_lowering(Seconds latency, Seconds step_latency) {
  return [=](CollectiveKind, Bytes bytes, const sim::GroupLayout& layout) {
    return ring_allreduce(bytes, static_cast<int>(layout.machine.size()), latency, step_latency);
  };
}

// The ring's closed form without contention: every step moves S/n over a path of latency `hop` at `rate`.
double ring_time(double bytes, int n, double latency, double step_latency, double hop, double bw) {
  return latency + 2.0 * (n - 1) * (hop + step_latency) + 2.0 * (n - 1) / n * bytes / bw;
}

std::vector<int> first_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

sim::GroupLayout one_machine(int n) { return sim::GroupLayout{std::vector<int>(static_cast<std::size_t>(n), 0), false}; }

}  // namespace

// ---- run_isolated ---------------------------------------------------------------------------------------------

TEST_CASE("simgrid: run_isolated returns the child's bytes and its errors") {
  CHECK(sim::run_isolated([] { return std::string("a\0b", 3); }) == std::string("a\0b", 3));
  CHECK(sim::run_isolated([] { return std::string(1 << 20, 'x'); }).size() == (1u << 20));   // more than a pipe holds
  try {
    sim::run_isolated([]() -> std::string {
      throw InputError("cluster.gpu", "h900", "unknown GPU", "a100-sxm4-80gb, h100-sxm5-80gb", "s.yaml:3");
    });
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(e.key() == "cluster.gpu");
    CHECK(e.value() == "h900");
    CHECK(e.reason() == "unknown GPU");
    CHECK(e.allowed() == "a100-sxm4-80gb, h100-sxm5-80gb");
    CHECK(e.location() == "s.yaml:3");
    CHECK(std::string(e.what()) == "s.yaml:3: cluster.gpu: unknown GPU 'h900' (allowed: a100-sxm4-80gb, h100-sxm5-80gb)");
  }
  CHECK_THROWS_WITH_AS(sim::run_isolated([]() -> std::string { throw std::logic_error("broken"); }), "broken",
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(sim::run_isolated([]() -> std::string { std::raise(SIGKILL); return {}; }),
                       "simulation process died: signal 9", std::runtime_error);
}

// ---- the platform and the network model ----------------------------------------------------------------------

TEST_CASE("simgrid: one transfer takes latency + size / (bandwidth x efficiency)") {
  const auto t = isolated([] {
    const auto topo = two_gpus();
    sim::flow::RouteNeeds needs;
    needs.add(0, 1);
    sim::flow::Simulation sim(topo, needs, false);
    std::vector<double> out;
    sim.transfer(0, 1, Bytes(1e9), [&](Seconds start, Seconds end) { out = {start.value(), end.value()}; });
    sim.run();
    return out;
  });
  REQUIRE(t.size() == 2);
  CHECK(t[0] == 0.0);
  CHECK(t[1] == near(1e-6 + 1e9 / 20e9));
}

TEST_CASE("simgrid: two flows in one direction share the link and opposite directions do not interfere") {
  const auto t = isolated([] {
    const auto topo = two_gpus();
    sim::flow::RouteNeeds needs;
    needs.add(0, 1);
    needs.add(1, 0);
    sim::flow::Simulation sim(topo, needs, false);
    std::vector<double> out(4);
    const std::array<std::pair<NodeId, NodeId>, 3> flows{{{0, 1}, {0, 1}, {1, 0}}};
    for (std::size_t i = 0; i < flows.size(); ++i)
      sim.transfer(flows[i].first, flows[i].second, Bytes(1e9), [&out, i](Seconds, Seconds end) { out[i] = end.value(); });
    sim.after(Seconds(1.0), [&] {   // alone again: one flow 1 -> 0
      sim.transfer(1, 0, Bytes(1e9), [&out, &sim](Seconds start, Seconds end) { out[3] = (end - start).value(); });
    });
    sim.run();
    return out;
  });
  CHECK(t[0] == near(1e-6 + 2e9 / 20e9));
  CHECK(t[1] == near(1e-6 + 2e9 / 20e9));
  CHECK(t[2] == near(1e-6 + 1e9 / 20e9));   // the other half of the split-duplex link
  CHECK(t[3] == near(1e-6 + 1e9 / 20e9));
}

TEST_CASE("simgrid: a rate cap limits one transfer and compute ops and delays take their duration") {
  const auto t = isolated([] {
    const auto topo = two_gpus();
    sim::flow::RouteNeeds needs;
    needs.add(0, 1, gigabytes_per_second(5));
    sim::flow::Simulation sim(topo, needs, false);
    std::vector<double> out(4);
    sim.transfer(0, 1, Bytes(1e9), [&](Seconds, Seconds end) { out[0] = end.value(); });
    sim.compute(0, microseconds(3.5), [&](Seconds, Seconds end) { out[1] = end.value(); });
    sim.compute(1, Seconds(0), [&](Seconds, Seconds end) { out[2] = end.value(); });
    sim.after(microseconds(2.25), [&] { out[3] = sim.now().value(); });
    sim.run();
    return out;
  });
  CHECK(t[0] == near(1e-6 + 1e9 / 5e9));
  CHECK(t[1] == near(3.5e-6));
  CHECK(t[2] == 0.0);
  CHECK(t[3] == near(2.25e-6));
}

TEST_CASE("simgrid: the star's hub limits the traffic through it to its capacity") {
  // 8 GPUs send to their neighbour through the hub at once: each link direction carries one flow, the hub all 8.
  const int n = 8;
  const auto topo = built(IntraKind::Star, n);
  const NodeId hub = *topo.find_node("hub");
  const double capacity = topo.node(hub).capacity->value();
  const double bytes = 1e9;
  const auto t = isolated([&] {
    sim::flow::RouteNeeds needs;
    for (int i = 0; i < n; ++i) needs.add(topo.gpus()[static_cast<std::size_t>(i)], topo.gpus()[static_cast<std::size_t>((i + 1) % n)]);
    sim::flow::Simulation sim(topo, needs, false);
    std::vector<double> out(n);
    for (int i = 0; i < n; ++i)
      sim.transfer(topo.gpus()[static_cast<std::size_t>(i)], topo.gpus()[static_cast<std::size_t>((i + 1) % n)],
                   Bytes(bytes), [&out, i](Seconds, Seconds end) { out[static_cast<std::size_t>(i)] = end.value(); });
    sim.run();
    return out;
  });
  const double hop = topo.link(0).latency.value();
  REQUIRE(capacity / n < rate(topo.link(0)));   // the hub, not the links, is the bottleneck
  for (double end : t) CHECK(end == near(2 * hop + bytes / (capacity / n)));
}

// ---- collectives (hand-built lowerings) --------------------------------------------------------------------------

TEST_CASE("simgrid: hand-lowered ring all-reduce on an 8-GPU ring or NVSwitch or star hub matches its closed form") {
  const int n = 8;
  const double bytes = 1 << 30, lat = 20e-6, step = 1.5e-6;
  for (IntraKind intra : {IntraKind::Ring, IntraKind::NvSwitch, IntraKind::Star}) {
    CAPTURE(topology::to_string(intra));
    const auto topo = built(intra, n);
    const auto t = isolated([&] {
      const auto times = sim::flow::time_lowered(CollectiveKind::AllReduce, {Bytes(bytes), Bytes(bytes)},
                                                 first_ranks(n), topo, one_machine(n),
                                                 ring_lowering(Seconds(lat), Seconds(step)), false);
      return std::vector<double>{times[0].value(), times[1].value()};
    });
    const topology::Link& l = topo.link(0);
    const double hops = intra == IntraKind::Ring ? 1 : 2;
    double bw = rate(l);
    if (intra == IntraKind::Star) bw = std::min(bw, topo.node(*topo.find_node("hub")).capacity->value() / n);
    const double expected = ring_time(bytes, n, lat, step, hops * l.latency.value(), bw);
    CHECK(t[0] == near(expected));
    CHECK(t[1] == near(expected));   // the second one, after the first: same time
  }
}

TEST_CASE("simgrid: a step waits for the endpoint's step before (in and out) then step_latency") {
  // A chain 0 -> 1 -> 2 -> 3 (steps 0, 1, 2), then 0 -> 3 and 3 -> 1 in step 3. Rank 0 has no step-2 transfer:
  // its step-3 send starts with the collective (latency + step_latency); rank 3 received in step 2: its send
  // waits for that.
  const auto topo = built(IntraKind::FullMesh, 4);
  const double lat = 5e-6, step = 2e-6, size = 1e8;
  sim::Lowered l;
  l.latency = Seconds(lat);
  l.step_latency = Seconds(step);
  l.steps = 4;
  l.transfers = {{0, 1, Bytes(size), 0, -1, {}}, {1, 2, Bytes(size), 1, -1, {}}, {2, 3, Bytes(size), 2, -1, {}},
                 {0, 3, Bytes(size), 3, -1, {}}, {3, 1, Bytes(size), 3, -1, {}}};
  const auto t = isolated([&] {
    auto lower = [&](CollectiveKind, Bytes, const sim::GroupLayout&) { return l; };
    return std::vector<double>{sim::flow::time_lowered(CollectiveKind::Broadcast, {Bytes(size)}, first_ranks(4), topo,
                                                       one_machine(4), lower, false)[0].value()};
  });
  const double one = step + topo.link(0).latency.value() + size / rate(topo.link(0));
  CHECK(t[0] == near(lat + 4 * one));   // 0 -> 3 ends at lat + one, 3 -> 1 at lat + 4 one
}

// ---- StepGraph: SimGrid against the analytic engine -------------------------------------------------------------

namespace {

// A GPT-shaped model (as in tests/workloads/step_graph_test.cpp).
workloads::Workload gpt_job(int tp, int pp, int dp, int global_batch, int layers) {
  workloads::Workload w;
  w.model.name = "gpt-test";
  w.model.layers = layers;
  w.model.hidden = 2048;
  w.model.heads = 16;
  w.model.kv_heads = 16;
  w.model.ffn_hidden = 8192;
  w.model.vocab = 51200;
  w.model.seq_length = 2048;
  w.training = workloads::training_defaults(topology::Precision::Bf16);
  w.training->global_batch = global_batch;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  workloads::check_plan(w, tp * pp * dp);
  return w;
}

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
  auto compute = [](double ms) { return ComputeOp{Scope::Layer, std::nullopt, Pass::Forward, 0, 0, {}, {}, Seconds(ms * 1e-3)}; };
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
                                             sim::Algorithm::Ring);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - t0;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return std::vector<double>{times[0].value(), wall.count(), static_cast<double>(usage.ru_maxrss) / 1024};
  });
  return FatTreeRun{out[0], out[1], out[2]};
}

}  // namespace

// Nodes of 8 A100s on an NVSwitch, one NIC per GPU, a leaf-spine fabric. The ring's hops never share a link
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
    const sim::Lowered l = sim::lower(CollectiveKind::AllReduce, size, layout, sim::Algorithm::Ring);
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
