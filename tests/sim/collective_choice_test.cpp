// Collective lowering across algorithms: the names, the catalog's tuning, auto's choice of algorithm, what each
// algorithm refuses, base and per-step latencies, nccl-tests' bus factors, a group of one, determinism. The
// schedules of each algorithm are in collective_test.cpp.
#include <doctest/doctest.h>

#include "sim/collective_support.hpp"

using namespace collective_support;

namespace {

// Each value's name parses back to it, and the names joined are the list the errors print.
template <class Values, class Parse>
void check_names(const Values& values, std::string_view listed, Parse parse) {
  std::vector<std::string> names;
  for (auto v : values) {
    CHECK(parse(to_string(v)) == v);
    names.emplace_back(to_string(v));
  }
  CHECK(fmt::format("{}", fmt::join(names, ", ")) == listed);
}

}  // namespace

TEST_CASE("collective: algorithm names round-trip, unknown names are refused") {
  check_names(kAlgorithms, kAlgorithmNames, parse_algorithm);
  CHECK(fmt::format("{}", Algorithm::HalvingDoubling) == "halving-doubling");
  CHECK_FALSE(parse_algorithm("Ring").has_value());
  CHECK_FALSE(parse_algorithm("recursive-doubling").has_value());
}

TEST_CASE("collective: protocol names round-trip, unknown names are refused") {
  check_names(std::array{Protocol::Auto, Protocol::LL, Protocol::LL128, Protocol::Simple}, kProtocolNames,
              parse_protocol);
  CHECK(fmt::format("{}", Protocol::LL128) == "ll128");
  CHECK_FALSE(parse_protocol("LL").has_value());
  CHECK_FALSE(parse_protocol("ll64").has_value());
}

TEST_CASE("collective: tuning: NCCL's latencies per protocol, a ring step over NVLink costs NCCL's per-hop figure") {
  const CollectiveTuning& t = collective_tuning();
  CHECK(close(to_microseconds(t.ll.ring_latency), 6.6));
  CHECK(close(to_microseconds(t.ll128.ring_latency), 14.0));
  CHECK(close(to_microseconds(t.simple.ring_latency), 8.4));
  CHECK(close(to_microseconds(t.ll.tree_latency), 6.8));
  CHECK(close(to_microseconds(t.ll128.tree_latency), 14.0));
  CHECK(close(to_microseconds(t.simple.tree_latency), 8.4));
  CHECK(to_microseconds(t.nvls_latency) >= 23.0);
  CHECK(to_microseconds(t.nvls_latency) <= 25.0);
  for (const char* link : {"nvlink3", "nvlink4"}) {
    const Seconds hop = topology::find_link(link).latency;
    CHECK(close(to_microseconds(t.ll.step_latency + hop), 0.6));
    CHECK(close(to_microseconds(t.ll128.step_latency + hop), 1.9));
    CHECK(close(to_microseconds(t.simple.step_latency + hop), 3.4));
  }
  CHECK(t.ll.efficiency == 0.5);
  CHECK(t.ll128.efficiency == 120.0 / 128.0);
  CHECK(t.simple.efficiency == 1.0);
  CHECK(&t.of(Protocol::LL) == &t.ll);
  CHECK(&t.of(Protocol::LL128) == &t.ll128);
  CHECK(&t.of(Protocol::Simple) == &t.simple);
  CHECK(t.choice_bandwidth == 20_GBps);
  CHECK(t.chunks == 8);
  CHECK(t.tree_below == 64_MiB);
  CHECK_FALSE(t.source.empty());
}

TEST_CASE("collective: an algorithm that cannot run on the group is refused, naming simulation.collective_algo") {
  struct Refusal {
    Algorithm algorithm;
    CollectiveKind kind;
    GroupLayout layout;
    std::string reason;
  };
  const std::vector<Refusal> refusals = {
      {Algorithm::Nvls, CollectiveKind::AllReduce, one_machine(8, false), "NVSwitch"},
      {Algorithm::Nvls, CollectiveKind::AllReduce, on_machines({0, 0, 1, 1}, true), "not modelled"},
      {Algorithm::Nvls, CollectiveKind::AllGather, one_machine(8, true), "all-gather is not implemented"},
      {Algorithm::HalvingDoubling, CollectiveKind::AllReduce, one_machine(6), "6 ranks is not a power of two"},
      {Algorithm::HalvingDoubling, CollectiveKind::Broadcast, one_machine(8), "broadcast is not implemented"},
      {Algorithm::Hierarchical, CollectiveKind::AllReduce, on_machines({0, 0, 0, 1}), "unequal numbers"},
      {Algorithm::Hierarchical, CollectiveKind::AllToAll, blocks(2, 2), "all-to-all is not implemented"},
      {Algorithm::Tree, CollectiveKind::AllToAll, blocks(4, 1), "all-to-all is not implemented"},
      {Algorithm::Tree, CollectiveKind::ReduceScatter, blocks(4, 1), "reduce-scatter is not implemented"},
      {Algorithm::Ring, CollectiveKind::AllToAll, one_machine(4), "all-to-all is not implemented"},
  };
  for (const Refusal& r : refusals) {
    CAPTURE(to_string(r.algorithm));
    CAPTURE(workloads::to_string(r.kind));
    const auto e = input_error([&] { (void)lower(r.kind, 1_MiB, r.layout, r.algorithm); });
    REQUIRE(e.has_value());
    CHECK(e->key() == "simulation.collective_algo");
    CHECK(e->value() == to_string(r.algorithm));
    CHECK(e->reason().find(r.reason) != std::string::npos);
    CHECK(e->allowed().starts_with("auto"));
    CHECK(e->allowed().find(to_string(r.algorithm)) == std::string::npos);
  }
  // The alternatives offered are those that implement the operation.
  const auto e = input_error([] { (void)lower(CollectiveKind::AllToAll, 1_MiB, blocks(4, 1), Algorithm::Tree); });
  REQUIRE(e.has_value());
  CHECK(e->allowed() == "auto, direct");
  CHECK(std::string(e->what()) == "simulation.collective_algo: all-to-all is not implemented by 'tree' (allowed: "
                                  "auto, direct)");
}

TEST_CASE("collective: each algorithm implements its operations and refuses the others") {
  for (Algorithm a : kAlgorithms)
    for (CollectiveKind kind : kKinds) {
      CAPTURE(to_string(a));
      CAPTURE(workloads::to_string(kind));
      const GroupLayout g = a == Algorithm::Nvls ? one_machine(8, true) : blocks(2, 4);
      const auto e = input_error([&] { (void)lower_on(kind, g, a); });
      CHECK(e.has_value() != implements(a, kind));
    }
}

TEST_CASE("collective: auto picks what NCCL would") {
  const CollectiveTuning& t = collective_tuning();
  const auto pick = [](CollectiveKind kind, Bytes s, const GroupLayout& g) {
    return lower(kind, s, g, Algorithm::Auto).algorithm;
  };
  const GroupLayout nvswitch = one_machine(8, true);
  const GroupLayout plain = one_machine(8, false);
  GroupLayout cluster = blocks(4, 8);
  CHECK(pick(CollectiveKind::AllToAll, 1_MiB, nvswitch) == Algorithm::Direct);
  CHECK(pick(CollectiveKind::AllToAll, 1_GiB, cluster) == Algorithm::Direct);
  CHECK(pick(CollectiveKind::AllReduce, 1_GiB, nvswitch) == Algorithm::Nvls);
  CHECK(pick(CollectiveKind::AllReduce, 1_MiB, nvswitch) == Algorithm::Nvls);
  CHECK(pick(CollectiveKind::AllReduce, 1_GiB, plain) == Algorithm::Ring);
  GroupLayout mesh = plain;   // every pair linked: a ring would leave most links idle
  mesh.direct_links = true;
  CHECK(pick(CollectiveKind::AllReduce, 1_GiB, mesh) == Algorithm::Direct);
  CHECK(pick(CollectiveKind::AllGather, 1_MiB, mesh) == Algorithm::Direct);
  CHECK(pick(CollectiveKind::Broadcast, 1_MiB, mesh) == Algorithm::Ring);
  const Bytes at4 = t.tree_below * (3.0 / 1023.0);   // the crossover scales with machines - 1
  CHECK(pick(CollectiveKind::AllReduce, 64_KiB, cluster) == Algorithm::Tree);
  CHECK(pick(CollectiveKind::AllReduce, at4 - Bytes(1), cluster) == Algorithm::Tree);
  CHECK(pick(CollectiveKind::AllReduce, at4, cluster) == Algorithm::Ring);
  CHECK(pick(CollectiveKind::AllReduce, 1_MiB, cluster) == Algorithm::Ring);
  CHECK(pick(CollectiveKind::AllReduce, t.tree_below - Bytes(1), blocks(1024, 1)) == Algorithm::Tree);
  CHECK(pick(CollectiveKind::AllReduce, t.tree_below, blocks(1024, 1)) == Algorithm::Ring);
  cluster.nvls = true;   // NVLS across machines (NVLS+tree) is not modelled: tree or ring
  CHECK(pick(CollectiveKind::AllReduce, 64_KiB, cluster) == Algorithm::Tree);
  CHECK(pick(CollectiveKind::AllReduce, 1_GiB, cluster) == Algorithm::Ring);
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::Broadcast}) {
    CHECK(pick(kind, 1_MiB, nvswitch) == Algorithm::Ring);
    CHECK(pick(kind, 1_MiB, cluster) == Algorithm::Ring);
  }
  // auto lowers exactly as the algorithm it resolves to.
  const Lowered a = lower(CollectiveKind::AllReduce, 64_KiB, cluster, Algorithm::Auto);
  const Lowered tree = lower(CollectiveKind::AllReduce, 64_KiB, cluster, Algorithm::Tree);
  CHECK(a.transfers.size() == tree.transfers.size());
  CHECK(a.steps == tree.steps);
  CHECK(a.latency == tree.latency);
}

TEST_CASE("collective: base and per-step latencies per algorithm and protocol") {
  const CollectiveTuning& t = collective_tuning();
  const GroupLayout g = blocks(2, 4);
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    CAPTURE(to_string(p));
    for (Algorithm a : {Algorithm::Ring, Algorithm::Direct, Algorithm::HalvingDoubling, Algorithm::Hierarchical}) {
      const Lowered l = lower(CollectiveKind::AllReduce, 1_MiB, g, a, p);
      CHECK(l.protocol == p);
      CHECK(l.latency == t.of(p).ring_latency);
      CHECK(l.step_latency == t.of(p).step_latency);
    }
    const Lowered tree = lower(CollectiveKind::AllReduce, 1_MiB, g, Algorithm::Tree, p);
    CHECK(tree.latency == t.of(p).tree_latency);
    CHECK(tree.step_latency == t.of(p).step_latency);
  }
  CHECK(lower_on(CollectiveKind::AllReduce, g, Algorithm::Tree).latency == t.simple.tree_latency);
  CollectiveTuning other = t;
  other.simple.ring_latency = 1.0_us;
  other.simple.step_latency = 2.0_us;
  const Lowered l = lower(CollectiveKind::AllReduce, 1_MiB, g, Algorithm::Ring, Protocol::Simple, other);
  CHECK(l.latency == 1.0_us);
  CHECK(l.step_latency == 2.0_us);
}

TEST_CASE("collective: bus factors as nccl-tests prints them, whatever the algorithm") {
  CHECK(close(bus_factor(CollectiveKind::AllReduce, 8), 1.75));
  CHECK(close(bus_factor(CollectiveKind::AllGather, 8), 0.875));
  CHECK(close(bus_factor(CollectiveKind::ReduceScatter, 8), 0.875));
  CHECK(close(bus_factor(CollectiveKind::AllToAll, 8), 0.875));
  CHECK(close(bus_factor(CollectiveKind::Broadcast, 8), 1.0));
  CHECK(close(bus_factor(CollectiveKind::AllReduce, 3), 4.0 / 3.0));
  CHECK(close(bus_factor(CollectiveKind::AllReduce, 1), 0.0));
}

TEST_CASE("collective: a group of one moves nothing") {
  const GroupLayout g = one_machine(1, true);
  for (Algorithm a : kAlgorithms)
    for (CollectiveKind kind : kKinds) {
      CAPTURE(to_string(a));
      CAPTURE(workloads::to_string(kind));
      if (!implements(a, kind)) continue;
      const Lowered l = lower_on(kind, g, a);
      CHECK(l.transfers.empty());
      CHECK(l.steps == 0);
      CHECK(l.latency == Seconds(0));
    }
}

TEST_CASE("collective: lowering is deterministic and in canonical order, fractional bytes are kept") {
  for (Algorithm a : kAlgorithms)
    for (CollectiveKind kind : kKinds) {
      CAPTURE(to_string(a));
      CAPTURE(workloads::to_string(kind));
      if (!implements(a, kind)) continue;
      const GroupLayout g = a == Algorithm::Nvls ? one_machine(8, true) : blocks(2, 4);
      const Lowered x = lower_on(kind, g, a, Bytes(1000));
      const Lowered y = lower_on(kind, g, a, Bytes(1000));
      REQUIRE(x.transfers.size() == y.transfers.size());
      CHECK(x.steps == y.steps);
      for (std::size_t i = 0; i < x.transfers.size(); ++i) {
        const Transfer& p = x.transfers[i];
        const Transfer& q = y.transfers[i];
        CHECK(std::tie(p.step, p.src, p.dst, p.machine, p.bytes, p.rate) ==
              std::tie(q.step, q.src, q.dst, q.machine, q.bytes, q.rate));
        if (i > 0) {
          const Transfer& o = x.transfers[i - 1];
          CHECK(std::tie(o.step, o.src, o.dst, o.machine) < std::tie(p.step, p.src, p.dst, p.machine));
        }
      }
    }
  const Lowered thirds =
      lower(CollectiveKind::ReduceScatter, Bytes(1000), one_machine(3), Algorithm::Ring, Protocol::Simple);
  for (const Transfer& t : thirds.transfers) CHECK(t.bytes.value() == 1000.0 / 3.0);
}
