// Collective lowering, per algorithm: bytes per rank against each algorithm's known optimum, step counts, NCCL's
// channels across machines, the step rule's chain. The names, auto's choice, refusals, latency accounting, bus
// factors and determinism are in collective_choice_test.cpp; timings against closed forms and nccl.md's figures,
// and the protocols, in collective_timing_test.cpp.
#include <doctest/doctest.h>

#include "sim/collective_support.hpp"

using namespace collective_support;

TEST_CASE("collective: ring reduce-scatter and all-gather: n-1 steps of S/n to the next rank") {
  for (int n : {2, 3, 5, 8}) {
    CAPTURE(n);
    for (CollectiveKind kind : {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
      const Lowered l = lower_on(kind, one_machine(n), Algorithm::Ring);
      CHECK(l.algorithm == Algorithm::Ring);
      CHECK(l.steps == n - 1);
      CHECK(l.transfers.size() == static_cast<std::size_t>(n * (n - 1)));
      check_every_rank_moves(l, n, (n - 1.0) / n);
      for (const Transfer& t : l.transfers) CHECK(t.dst == (t.src + 1) % n);
    }
  }
}

TEST_CASE("collective: ring all-reduce is the reduce-scatter followed by the all-gather") {
  for (int n : {2, 3, 4, 7, 8}) {
    CAPTURE(n);
    const GroupLayout g = one_machine(n);
    const Lowered ar = lower_on(CollectiveKind::AllReduce, g, Algorithm::Ring);
    const Lowered rs = lower_on(CollectiveKind::ReduceScatter, g, Algorithm::Ring);
    const Lowered ag = lower_on(CollectiveKind::AllGather, g, Algorithm::Ring);
    CHECK(ar.steps == 2 * (n - 1));
    check_every_rank_moves(ar, n, 2.0 * (n - 1) / n);
    REQUIRE(ar.transfers.size() == rs.transfers.size() + ag.transfers.size());
    for (std::size_t i = 0; i < ar.transfers.size(); ++i) {
      const bool first = i < rs.transfers.size();
      const Transfer& want = first ? rs.transfers[i] : ag.transfers[i - rs.transfers.size()];
      const Transfer& got = ar.transfers[i];
      CHECK(got.step == want.step + (first ? 0 : rs.steps));
      CHECK(std::tie(got.src, got.dst) == std::tie(want.src, want.dst));
      CHECK(got.bytes == want.bytes);
    }
  }
}

TEST_CASE("collective: ring broadcast: a chain from rank 0, chunk c crossing hop h in step c+h") {
  const int n = 5;
  const int k = collective_tuning().chunks;
  const Lowered l = lower_on(CollectiveKind::Broadcast, one_machine(n), Algorithm::Ring);
  CHECK(l.steps == k + n - 2);
  const Totals t = totals(l, n, 1_GiB);
  for (int r = 0; r < n; ++r) {
    CHECK(close(t.sent[static_cast<std::size_t>(r)], r + 1 < n ? 1.0 : 0.0));
    CHECK(close(t.received[static_cast<std::size_t>(r)], r > 0 ? 1.0 : 0.0));
  }
  for (const Transfer& x : l.transfers) {
    CHECK(x.dst == x.src + 1);
    CHECK(x.step - x.src >= 0);
    CHECK(x.step - x.src < k);
    CHECK(close(x.bytes / 1_GiB, 1.0 / k));
  }
}

TEST_CASE("collective: direct: one step of S/n to every peer, all-reduce in two") {
  const int n = 6;
  const GroupLayout g = blocks(2, 3);
  for (CollectiveKind kind : {CollectiveKind::AllToAll, CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    CAPTURE(workloads::to_string(kind));
    const Lowered l = lower_on(kind, g, Algorithm::Direct);
    CHECK(l.steps == 1);
    CHECK(l.transfers.size() == static_cast<std::size_t>(n * (n - 1)));
    check_every_rank_moves(l, n, (n - 1.0) / n);
  }
  const Lowered ar = lower_on(CollectiveKind::AllReduce, g, Algorithm::Direct);
  CHECK(ar.steps == 2);
  check_every_rank_moves(ar, n, 2.0 * (n - 1) / n);

  const Lowered b = lower_on(CollectiveKind::Broadcast, g, Algorithm::Direct);
  CHECK(b.steps == 1);
  const Totals t = totals(b, n, 1_GiB);
  CHECK(close(t.sent[0], n - 1.0));
  for (int r = 1; r < n; ++r) CHECK(close(t.received[static_cast<std::size_t>(r)], 1.0));
}

TEST_CASE("collective: halving-doubling: log2 n steps each way, exchanging with the partner at a power-of-two distance") {
  for (int n : {2, 4, 8, 16}) {
    CAPTURE(n);
    const int steps = log2_of(n);
    const GroupLayout g = one_machine(n);
    const Lowered rs = lower_on(CollectiveKind::ReduceScatter, g, Algorithm::HalvingDoubling);
    const Lowered ag = lower_on(CollectiveKind::AllGather, g, Algorithm::HalvingDoubling);
    const Lowered ar = lower_on(CollectiveKind::AllReduce, g, Algorithm::HalvingDoubling);
    CHECK(rs.steps == steps);
    CHECK(ag.steps == steps);
    CHECK(ar.steps == 2 * steps);
    check_every_rank_moves(rs, n, (n - 1.0) / n);
    check_every_rank_moves(ag, n, (n - 1.0) / n);
    check_every_rank_moves(ar, n, 2.0 * (n - 1) / n);
    CHECK(rs.transfers.size() == static_cast<std::size_t>(n * steps));
    for (const Transfer& t : rs.transfers) {   // halving: distance n/2^(j+1), S/2^(j+1)
      CHECK((t.src ^ t.dst) == n >> (t.step + 1));
      CHECK(close(t.bytes / 1_GiB, 1.0 / (1 << (t.step + 1))));
    }
    for (const Transfer& t : ag.transfers) {   // doubling: distance 2^j, S·2^j/n
      CHECK((t.src ^ t.dst) == 1 << t.step);
      CHECK(close(t.bytes / 1_GiB, static_cast<double>(1 << t.step) / n));
    }
  }
}

TEST_CASE("collective: tree all-reduce: NCCL's double binary tree, half the buffer each, pipelined") {
  const int k = collective_tuning().chunks;
  for (int n : {2, 3, 4, 5, 8, 13, 16, 64}) {
    CAPTURE(n);
    const Lowered l = lower_on(CollectiveKind::AllReduce, blocks(n, 1), Algorithm::Tree);
    const Totals t = totals(l, n, 1_GiB);
    // Each tree moves its half up and down each of its n-1 edges: 2 trees x 2 directions x (n-1) x S/2.
    double sent = 0;
    double received = 0;
    for (int r = 0; r < n; ++r) {
      CAPTURE(r);
      const auto i = static_cast<std::size_t>(r);
      sent += t.sent[i];
      received += t.received[i];
      // Interior in one tree (S/2 up, S/2 to each of two children), leaf in the other (S/2 up): at most 2S.
      CHECK(t.sent[i] <= 2.0 + kExact);
      CHECK(t.received[i] <= 2.0 + kExact);
      CHECK(t.sent[i] >= 1.0 - kExact);
    }
    CHECK(close(sent, 2.0 * (n - 1)));
    CHECK(close(received, 2.0 * (n - 1)));
    // chunks + 2 D - 1 steps, D the height of NCCL's tree: ceil(log2 n).
    CHECK(l.steps == k + 2 * log2_of(n) - 1);
    CHECK(l.latency == collective_tuning().simple.tree_latency);
  }
}

TEST_CASE("collective: tree all-reduce on two ranks: the buffer once each way, in chunks + 1 steps") {
  const Lowered l = lower_on(CollectiveKind::AllReduce, blocks(2, 1), Algorithm::Tree);
  const BytesPerSecond b = 20_GBps;
  const Seconds hop = 1.0_us;
  const Seconds want = 1_GiB / b + (collective_tuning().chunks + 1) * (hop + l.step_latency) + l.latency;
  CHECK(close(play(l, b, hop) / want, 1.0));
}

TEST_CASE("collective: tree broadcast: down NCCL's first tree from rank 0, every rank receiving the buffer once") {
  const int n = 8;
  const Lowered l = lower_on(CollectiveKind::Broadcast, blocks(n, 1), Algorithm::Tree);
  CHECK(l.steps == collective_tuning().chunks + log2_of(n) - 1);
  const Totals t = totals(l, n, 1_GiB);
  CHECK(close(t.received[0], 0.0));
  CHECK(close(t.sent[0], 1.0));   // NCCL's tree root has one child
  for (int r = 1; r < n; ++r) CHECK(close(t.received[static_cast<std::size_t>(r)], 1.0));
}

TEST_CASE("collective: nvls: every rank sends S up to its machine's switch and gets S back, capped at the port rate") {
  const CollectiveTuning& tuning = collective_tuning();
  const int n = 8;
  const Lowered l = lower_on(CollectiveKind::AllReduce, on_machines(std::vector<int>(n, 3), true), Algorithm::Nvls);
  CHECK(l.algorithm == Algorithm::Nvls);
  CHECK(l.steps == tuning.chunks + 1);
  CHECK(l.latency == tuning.nvls_latency);
  CHECK(l.step_latency == Seconds(0));
  check_every_rank_moves(l, n, 1.0);
  for (const Transfer& t : l.transfers) {
    CHECK((t.src == kSwitch) != (t.dst == kSwitch));
    CHECK(t.machine == 3);
    REQUIRE(t.rate.has_value());
    CHECK(*t.rate == tuning.nvls_port_rate);
    CHECK(t.step - (t.src == kSwitch ? 1 : 0) >= 0);
  }
}

namespace {

// The rings of a lowering across machines: for each step, the cross-machine transfers by sender.
std::map<int, std::vector<const Transfer*>> leaving(const Lowered& l, const GroupLayout& g, int step) {
  std::map<int, std::vector<const Transfer*>> out;
  for (const Transfer& t : l.transfers)
    if (t.step == step && g.machine[static_cast<std::size_t>(t.src)] != g.machine[static_cast<std::size_t>(t.dst)])
      out[t.src].push_back(&t);
  return out;
}

Lowered lower_channels(CollectiveKind kind, const GroupLayout& g, int max_channels) {
  CollectiveTuning tuning = collective_tuning();
  tuning.max_channels = max_channels;
  return lower(kind, 1_GiB, g, Algorithm::Ring, Protocol::Simple, tuning);
}

}  // namespace

TEST_CASE("collective: ring across machines: one channel per local rank, each leaving through its own GPU") {
  const int machines = 3;
  const int local = 4;
  const int n = machines * local;
  const GroupLayout g = blocks(machines, local);
  for (CollectiveKind kind : {CollectiveKind::ReduceScatter, CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    CAPTURE(workloads::to_string(kind));
    const Lowered l = lower_channels(kind, g, 0);
    const int phases = kind == CollectiveKind::AllReduce ? 2 : 1;
    CHECK(l.steps == phases * (n - 1));   // the channels run side by side: a ring's step count and latency
    check_every_rank_moves(l, n, phases * (n - 1.0) / n);
    for (int step = 0; step < l.steps; ++step) {
      CAPTURE(step);
      const auto out = leaving(l, g, step);
      CHECK(out.size() == static_cast<std::size_t>(n));   // every rank sends one ring's share off its machine
      for (const auto& [src, transfers] : out) {
        REQUIRE(transfers.size() == 1);
        CHECK(close(transfers.front()->bytes / 1_GiB, 1.0 / (local * n)));
      }
    }
  }
}

TEST_CASE("collective: ring across machines: max_channels caps the rings, 1 is the group's single ring") {
  const GroupLayout g = blocks(3, 4);
  const int n = 12;
  const Lowered single = lower_channels(CollectiveKind::AllGather, g, 1);
  for (int step = 0; step < single.steps; ++step) {
    const auto out = leaving(single, g, step);
    CHECK(out.size() == 3);   // machine m's last rank to machine m+1's first
    for (const auto& [src, transfers] : out) {
      CHECK(src % 4 == 3);
      CHECK(close(transfers.front()->bytes / 1_GiB, 1.0 / n));
    }
  }
  const Lowered two = lower_channels(CollectiveKind::AllGather, g, 2);
  check_every_rank_moves(two, n, (n - 1.0) / n);
  const auto out = leaving(two, g, 0);
  CHECK(out.size() == 6);   // two rings, starting at local 0 and 2: they leave from local 3 and 1
  for (const auto& [src, transfers] : out) {
    CHECK((src % 4 == 3 || src % 4 == 1));
    CHECK(close(transfers.front()->bytes / 1_GiB, 1.0 / (2 * n)));
  }
  // More channels than ranks per machine: one per rank.
  CHECK(lower_channels(CollectiveKind::AllGather, g, 8).transfers.size() ==
        lower_channels(CollectiveKind::AllGather, g, 0).transfers.size());
  // One rank per machine, or one machine: a single ring whatever the cap.
  for (const GroupLayout& one : {blocks(5, 1), one_machine(6)}) {
    const Lowered a = lower_channels(CollectiveKind::ReduceScatter, one, 0);
    const Lowered b = lower_channels(CollectiveKind::ReduceScatter, one, 1);
    CHECK(a.transfers.size() == b.transfers.size());
    CHECK(a.transfers.size() == static_cast<std::size_t>(one.machine.size() * (one.machine.size() - 1)));
  }
}

TEST_CASE("collective: hierarchical: ring inside machines, ring across them among equal local indices, ring inside again") {
  const int machines = 4;
  const int local = 3;
  const int n = machines * local;
  // Machines interleaved and numbered out of order: local index = position among the machine's ranks.
  std::vector<int> m;
  for (int r = 0; r < n; ++r) m.push_back(10 - r % machines);
  const GroupLayout g = on_machines(m);
  const Lowered ar = lower_on(CollectiveKind::AllReduce, g, Algorithm::Hierarchical);
  CHECK(ar.steps == 2 * (local - 1) + 2 * (machines - 1));
  check_every_rank_moves(ar, n, 2.0 * (n - 1) / n);
  const auto machine_of = [&](int r) { return m[static_cast<std::size_t>(r)]; };
  const auto local_of = [&](int r) { return r / machines; };
  for (const Transfer& t : ar.transfers) {
    CAPTURE(t.step);
    const bool inter = t.step >= local - 1 && t.step < local - 1 + 2 * (machines - 1);
    CHECK((machine_of(t.src) != machine_of(t.dst)) == inter);
    if (inter) CHECK(local_of(t.src) == local_of(t.dst));
    CHECK(close(t.bytes / 1_GiB, inter ? 1.0 / n : 1.0 / local));
  }
  for (CollectiveKind kind : {CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    const Lowered l = lower_on(kind, g, Algorithm::Hierarchical);
    CHECK(l.steps == (local - 1) + (machines - 1));
    check_every_rank_moves(l, n, (n - 1.0) / n);
  }
}

TEST_CASE("collective: hierarchical on one machine is the ring") {
  const GroupLayout g = one_machine(4);
  const Lowered h = lower_on(CollectiveKind::AllReduce, g, Algorithm::Hierarchical);
  const Lowered r = lower_on(CollectiveKind::AllReduce, g, Algorithm::Ring);
  REQUIRE(h.transfers.size() == r.transfers.size());
  for (std::size_t i = 0; i < h.transfers.size(); ++i) {
    CHECK(std::tie(h.transfers[i].step, h.transfers[i].src, h.transfers[i].dst) ==
          std::tie(r.transfers[i].step, r.transfers[i].src, r.transfers[i].dst));
    CHECK(h.transfers[i].bytes == r.transfers[i].bytes);
  }
}

TEST_CASE("collective: every step but the first waits at its sender on the previous one") {
  const std::vector<std::pair<Algorithm, GroupLayout>> cases = {
      {Algorithm::Ring, one_machine(5)},        {Algorithm::Direct, blocks(2, 3)},
      {Algorithm::HalvingDoubling, blocks(2, 4)}, {Algorithm::Hierarchical, blocks(3, 4)},
      {Algorithm::Hierarchical, blocks(4, 1)},  {Algorithm::Nvls, one_machine(8, true)}};
  for (const auto& [algorithm, g] : cases)
    for (CollectiveKind kind : kKinds) {
      CAPTURE(to_string(algorithm));
      CAPTURE(workloads::to_string(kind));
      if (!implements(algorithm, kind)) continue;
      const Lowered l = lower_on(kind, g, algorithm);
      CHECK(l.steps > 0);
      CHECK(every_step_waits_at_its_sender(l));
    }
}
