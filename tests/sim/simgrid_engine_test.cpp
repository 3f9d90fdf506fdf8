// The SimGrid engine against closed forms: transfers, sharing, capacities, the collective step rule.
// Every simulation runs in its own child process (run_isolated): SimGrid allows one engine per process.
#include "sim/simgrid_support.hpp"

using namespace simgrid_support;

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
    sim::flow::RouteResources routes(topo, topology::Routing::Single);
    sim::flow::Simulation sim(topo, needs, routes);
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
    sim::flow::RouteResources routes(topo, topology::Routing::Single);
    sim::flow::Simulation sim(topo, needs, routes);
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

// SimGrid's max-min solver shares a link in inverse proportion to each flow's route latency (its sharing
// penalty, CM02); dtsim's platform gives every flow the same penalty, so a flow from far away gets its half.
TEST_CASE("simgrid: flows of different route latencies share a bottleneck equally (max-min, not RTT-weighted)") {
  // gpu0 (1 us) and gpu1 (100 us) both send 1 GB to gpu2 through a switch; the switch-to-gpu2 link is the
  // bottleneck. Fair: both end together, after 2 GB at its rate. RTT-weighted: gpu0's ends at about half of that.
  const auto t = isolated([] {
    topology::Topology topo;
    gpu(topo, 0);
    gpu(topo, 1);
    gpu(topo, 2);
    const NodeId sw = topo.add_node(topology::Node{topology::NodeKind::Switch, "sw", -1, std::nullopt});
    topo.add_link(make(0, sw, gigabytes_per_second(100), microseconds(1), 1.0));
    topo.add_link(make(1, sw, gigabytes_per_second(100), microseconds(100), 1.0));
    topo.add_link(make(sw, 2, gigabytes_per_second(10), microseconds(1), 1.0));
    sim::flow::RouteNeeds needs;
    needs.add(0, 2);
    needs.add(1, 2);
    sim::flow::RouteResources routes(topo, topology::Routing::Single);
    sim::flow::Simulation sim(topo, needs, routes);
    std::vector<double> out(2);
    for (NodeId src : {NodeId{0}, NodeId{1}})
      sim.transfer(src, 2, Bytes(1e9), [&out, src](Seconds, Seconds end) { out[src] = end.value(); });
    sim.run();
    return out;
  });
  REQUIRE(t.size() == 2);
  // gpu0 moves alone at 10 GB/s from 2 us to 101 us (0.99 MB); then both at 5 GB/s until gpu0's is done; the rest
  // of gpu1's alone: gpu0 ends at 101 us + (1e9 - 0.99e6) / 5e9, gpu1 at 2 us + 2e9 / 10e9.
  CHECK(t[0] == near(101e-6 + (1e9 - 10e9 * 99e-6) / 5e9));
  CHECK(t[1] == near(2e-6 + 2e9 / 10e9));
}

TEST_CASE("simgrid: a rate cap limits one transfer and compute ops and delays take their duration") {
  const auto t = isolated([] {
    const auto topo = two_gpus();
    sim::flow::RouteNeeds needs;
    needs.add(0, 1, gigabytes_per_second(5));
    sim::flow::RouteResources routes(topo, topology::Routing::Single);
    sim::flow::Simulation sim(topo, needs, routes);
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
    sim::flow::RouteResources routes(topo, topology::Routing::Single);
    sim::flow::Simulation sim(topo, needs, routes);
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

// Concurrent flows on a fat tree of 16 one-GPU machines (4 leaves of 4 NICs, 4 spines, each uplink one NIC's
// rate): their end times under `routing`.
std::vector<double> fat_tree_flows(topology::Routing routing, const std::vector<std::pair<int, int>>& flows) {
  auto spec = topology::default_cluster("a100-pcie-80gb", IntraKind::Pcie, 16, 1);
  spec.inter = topology::InterKind::FatTree;
  spec.fabric.leaf_ports = 4;
  const auto topo = topology::build_cluster(spec).topology;
  return isolated([&] {
    const auto& g = topo.gpus();
    sim::flow::RouteNeeds needs;
    for (const auto& [s, d] : flows) needs.add(g[static_cast<std::size_t>(s)], g[static_cast<std::size_t>(d)]);
    sim::flow::RouteResources routes(topo, routing);
    sim::flow::Simulation sim(topo, needs, routes);
    std::vector<double> out(flows.size());
    for (std::size_t i = 0; i < flows.size(); ++i)
      sim.transfer(g[static_cast<std::size_t>(flows[i].first)], g[static_cast<std::size_t>(flows[i].second)],
                   Bytes(1e9), [&out, i](Seconds, Seconds end) { out[i] = end.value(); });
    sim.run();
    return out;
  });
}

TEST_CASE("simgrid: routing on a fat tree: single piles flows on one spine, D-mod-K and adaptive spread them") {
  using topology::Routing;
  const double alone = fat_tree_flows(Routing::Single, {{0, 4}})[0];
  // Leaf 0 to leaf 1, four flows: single sends all four through spine0 (a quarter of an uplink each); D-mod-K
  // gives the four destination ports four spines; adaptive spreads them over the trunk of four uplinks.
  const std::vector<std::pair<int, int>> across{{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  for (double end : fat_tree_flows(Routing::Single, across)) CHECK(end == doctest::Approx(4 * alone).epsilon(1e-3));
  for (Routing r : {Routing::DModK, Routing::Adaptive})
    for (double end : fat_tree_flows(r, across)) CHECK(end == near(alone));
  // Two flows to port 0 of two other leaves: D-mod-K sends both through spine0 (the destinations' first digit
  // is the same), adaptive through the trunk, at full rate each.
  const std::vector<std::pair<int, int>> same_port{{0, 4}, {1, 8}};
  for (double end : fat_tree_flows(Routing::DModK, same_port)) CHECK(end == doctest::Approx(2 * alone).epsilon(1e-3));
  for (double end : fat_tree_flows(Routing::Adaptive, same_port)) CHECK(end == near(alone));
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
                                                 ring_lowering(Seconds(lat), Seconds(step)), topology::Routing::Single);
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
                                                       one_machine(4), lower, topology::Routing::Single)[0].value()};
  });
  const double one = step + topo.link(0).latency.value() + size / rate(topo.link(0));
  CHECK(t[0] == near(lat + 4 * one));   // 0 -> 3 ends at lat + one, 3 -> 1 at lat + 4 one
}

// ---- StepGraph: SimGrid against the analytic engine -------------------------------------------------------------

