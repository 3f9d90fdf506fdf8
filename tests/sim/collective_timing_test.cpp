// Collective timings: a contention-free playback of the step rule against closed forms (ring all-reduce and the
// chain broadcast exactly), nccl.md's figures (8x A100 ring, 8x H100 NVLS and ring), NCCL's protocols (auto's
// choice, explicit ones, bytes on the wire) and the protocol errors. Protocol names are in collective_choice_test.cpp.
#include <doctest/doctest.h>

#include "sim/analytic/analytic_costs.hpp"
#include "sim/collective_support.hpp"
#include "topology/builders.hpp"

using namespace collective_support;

TEST_CASE("collective: closed form: ring all-reduce, one link per direction of bandwidth B") {
  // 2(n-1)/n (S / efficiency)/B + 2(n-1)(hop + step latency) + base latency, whichever protocol auto picks.
  const BytesPerSecond b = 20_GBps;
  const Seconds hop = 0.6_us;
  for (int n : {2, 3, 8, 16})
    for (Bytes s : {1_KiB, 1_MiB, 1_GiB}) {
      CAPTURE(n);
      CAPTURE(s.value());
      const Lowered l = lower(CollectiveKind::AllReduce, s, one_machine(n), Algorithm::Ring);
      const Bytes wire = s / collective_tuning().of(l.protocol).efficiency;
      const Seconds want = 2.0 * (n - 1) / n * (wire / b) + 2.0 * (n - 1) * (hop + l.step_latency) + l.latency;
      CHECK(close(play(l, b, hop) / want, 1.0));
    }
  // Over NVLink, one ring step costs NCCL's per-hop latency: Simple 8.4 + 14 x 3.4 us at zero size, LL 6.6 +
  // 14 x 0.6.
  const Seconds nvlink = topology::find_link("nvlink4").latency;
  const auto empty = [](Protocol p) {
    return lower(CollectiveKind::AllReduce, Bytes(0), one_machine(8), Algorithm::Ring, p);
  };
  CHECK(close(to_microseconds(play(empty(Protocol::Simple), b, nvlink)), 8.4 + 14 * 3.4, 1e-9));
  CHECK(close(to_microseconds(play(empty(Protocol::LL128), b, nvlink)), 14.0 + 14 * 1.9, 1e-9));
  CHECK(close(to_microseconds(play(empty(Protocol::LL), b, nvlink)), 6.6 + 14 * 0.6, 1e-9));
}

TEST_CASE("collective: closed form: pipelined chain broadcast") {
  const BytesPerSecond b = 20_GBps;
  const Seconds hop = 1.0_us;
  const int n = 6;
  const Lowered l = lower(CollectiveKind::Broadcast, 1_GiB, one_machine(n), Algorithm::Ring);
  const int k = collective_tuning().chunks;
  const Seconds want = (k + n - 2) * (1_GiB / k / b + hop + l.step_latency) + l.latency;
  CHECK(close(play(l, b, hop) / want, 1.0));
}

TEST_CASE("collective: 8x H100: NVLS all-reduce reaches nccl.md's ~480 GB/s busbw, the ring ~370") {
  const topology::GpuSpec& h100 = topology::find_gpu("h100-sxm5-80gb");
  const topology::LinkSpec& link = topology::find_link(h100.gpu_link);
  const BytesPerSecond per_gpu = link.bandwidth * (h100.gpu_link_count * link.efficiency);   // one direction
  const Bytes s = 8_GB;
  const GroupLayout node = one_machine(8, link.switch_reduction);
  REQUIRE(node.nvls);
  const Lowered nvls = lower(CollectiveKind::AllReduce, s, node, Algorithm::Auto);
  REQUIRE(nvls.algorithm == Algorithm::Nvls);
  const double nvls_algbw = to_gigabytes_per_second(s / play(nvls, per_gpu, link.latency));
  CHECK(nvls_algbw == doctest::Approx(275.0).epsilon(0.02));
  CHECK(nvls_algbw * bus_factor(CollectiveKind::AllReduce, 8) == doctest::Approx(480.0).epsilon(0.02));
  // Each GPU's link budget to the switch is more than the switch reduces per port: the switch is the limit.
  CHECK(collective_tuning().nvls_port_rate < per_gpu);

  // The ring is a check of the NVLink efficiency fitted on the A100 row, not a fit: within 10 % of ~370.
  const Lowered ring = lower(CollectiveKind::AllReduce, s, node, Algorithm::Ring);
  const double ring_busbw = to_gigabytes_per_second(s / play(ring, per_gpu, link.latency)) * 1.75;
  CHECK(ring_busbw == doctest::Approx(370.0).epsilon(0.10));
}

TEST_CASE("collective: 8x A100 on NVSwitch: the ring all-reduce of 8 GB lands on nccl.md's 230 GB/s busbw") {
  const auto& a100 = topology::find_gpu("a100-sxm4-80gb");
  const topology::LinkSpec& link = topology::find_link(a100.gpu_link);
  const BytesPerSecond per_gpu = link.bandwidth * (a100.gpu_link_count * link.efficiency);
  const Bytes s = 8_GB;
  const Lowered ring = lower(CollectiveKind::AllReduce, s, one_machine(8, link.switch_reduction), Algorithm::Auto);
  CHECK(ring.algorithm == Algorithm::Ring);   // A100's NVSwitch does not reduce in the switch
  const double busbw = to_gigabytes_per_second(s / play(ring, per_gpu, link.latency)) * 1.75;
  CHECK(busbw == doctest::Approx(230.0).epsilon(0.01));   // the row the NVLink efficiency is fitted on
}

TEST_CASE("collective: 8x A100 on NVSwitch: the 22B layer's TP all-reduce takes the 0.82 ms the compute fit subtracts") {
  // tests/workloads/compute_model_test.cpp fits the GEMM efficiency on the measured 22B layer minus two of these
  // all-reduces (b s h x 2 bytes, micro-batch 4, h 6144). If the collective model moves, refit it there.
  const auto& a100 = topology::find_gpu("a100-sxm4-80gb");
  const topology::LinkSpec& link = topology::find_link(a100.gpu_link);
  const BytesPerSecond per_gpu = link.bandwidth * (a100.gpu_link_count * link.efficiency);
  const Lowered ring = lower(CollectiveKind::AllReduce, Bytes(100'663'296), one_machine(8, link.switch_reduction),
                             Algorithm::Auto);
  CHECK(to_microseconds(play(ring, per_gpu, link.latency)) == doctest::Approx(821.58).epsilon(0.002));
}

TEST_CASE("collective: 8x A100 on NVSwitch: an 8-byte all-reduce runs LL, ~15 us as NCCL's model says") {
  const auto& a100 = topology::find_gpu("a100-sxm4-80gb");
  const topology::LinkSpec& link = topology::find_link(a100.gpu_link);
  const BytesPerSecond per_gpu = link.bandwidth * (a100.gpu_link_count * link.efficiency);
  const Bytes s(8);
  const Lowered l = lower(CollectiveKind::AllReduce, s, one_machine(8, link.switch_reduction), Algorithm::Auto);
  REQUIRE(l.algorithm == Algorithm::Ring);
  CHECK(l.protocol == Protocol::LL);
  // base_LL + 2(n-1) x NVLink hop (LL adds nothing to it) + 2(n-1) chunks of S/n at half payload. One link
  // latency per step, as NCCL counts a GPU-to-GPU hop; the topology's NVSwitch route crosses two links (GPU to
  // switch to GPU), so the SimGrid engine charges 2 x 0.6 us per step there (23.4 us for this all-reduce).
  const Seconds want = 6.6_us + 14 * link.latency + 14 * ((s / 8.0 / 0.5) / per_gpu);
  CHECK(close(play(l, per_gpu, link.latency) / want, 1.0));
  CHECK(to_microseconds(play(l, per_gpu, link.latency)) == doctest::Approx(15.0).epsilon(0.01));
}

TEST_CASE("collective: auto protocol: LL for small, LL128 for medium, Simple for large messages") {
  const GroupLayout g = one_machine(8);
  const auto pick = [&](Bytes s) { return lower(CollectiveKind::AllReduce, s, g, Algorithm::Ring).protocol; };
  CHECK(pick(Bytes(8)) == Protocol::LL);
  CHECK(pick(64_KiB) == Protocol::LL);
  CHECK(pick(256_KiB) == Protocol::LL);
  CHECK(pick(512_KiB) == Protocol::LL128);
  CHECK(pick(2_MiB) == Protocol::LL128);
  CHECK(pick(4_MiB) == Protocol::Simple);
  CHECK(pick(1_GiB) == Protocol::Simple);
  CHECK(pick(8_GB) == Protocol::Simple);
  // The pick has the least estimate T_p = base_p + 14 step_p + 1.75 S / (efficiency_p x 20 GB/s), restated here.
  const CollectiveTuning& t = collective_tuning();
  for (double kib = 1; kib <= 16384; kib *= 1.25) {
    const Bytes s = 1_KiB * kib;
    CAPTURE(kib);
    const auto estimate = [&](Protocol p) {
      const ProtocolCosts& c = t.of(p);
      return c.ring_latency + 14 * c.step_latency + 1.75 * s / (c.efficiency * 20_GBps);
    };
    const Seconds chosen = estimate(pick(s));
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) CHECK(chosen <= estimate(p));
  }
  // Multi-machine trees choose the same way.
  CHECK(lower(CollectiveKind::AllReduce, 8_KiB, blocks(4, 8), Algorithm::Auto).protocol == Protocol::LL);
}

TEST_CASE("collective: explicit protocols are honoured, bytes on the wire are the payload / efficiency") {
  const CollectiveTuning& t = collective_tuning();
  const GroupLayout g = one_machine(8);
  const Lowered base = lower(CollectiveKind::AllReduce, 1_GiB, g, Algorithm::Ring, Protocol::Simple);
  REQUIRE(base.protocol == Protocol::Simple);
  check_every_rank_moves(base, 8, 1.75);
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
    for (Bytes s : {Bytes(8), 1_GiB}) {
      CAPTURE(to_string(p));
      const Lowered l = lower(CollectiveKind::AllReduce, s, g, Algorithm::Ring, p);
      const Lowered simple = lower(CollectiveKind::AllReduce, s, g, Algorithm::Ring, Protocol::Simple);
      CHECK(l.protocol == p);
      CHECK(l.steps == simple.steps);
      REQUIRE(l.transfers.size() == simple.transfers.size());
      for (std::size_t i = 0; i < l.transfers.size(); ++i)
        CHECK(close(l.transfers[i].bytes / simple.transfers[i].bytes, 1.0 / t.of(p).efficiency));
    }
  CHECK(close(lower(CollectiveKind::AllGather, 1_GiB, g, Algorithm::Ring, Protocol::LL).transfers[0].bytes / 1_GiB,
              2.0 / 8.0));
}

TEST_CASE("collective: nvls runs Simple only, LL and LL128 on nvls are refused, naming the protocol") {
  const GroupLayout g = one_machine(8, true);
  for (Bytes s : {Bytes(8), 64_KiB, 1_GiB}) {
    const Lowered l = lower(CollectiveKind::AllReduce, s, g, Algorithm::Auto);
    CHECK(l.algorithm == Algorithm::Nvls);
    CHECK(l.protocol == Protocol::Simple);
    CHECK(l.latency == collective_tuning().nvls_latency);
  }
  CHECK(lower(CollectiveKind::AllReduce, 8_KiB, g, Algorithm::Nvls, Protocol::Simple).protocol == Protocol::Simple);
  for (Protocol p : {Protocol::LL, Protocol::LL128}) {
    const auto e = input_error([&] { (void)lower(CollectiveKind::AllReduce, 8_KiB, g, Algorithm::Nvls, p); });
    REQUIRE(e.has_value());
    const std::string what = e->what();
    CHECK(what.find("protocol") != std::string::npos);
    CHECK(what.find(std::string(to_string(p))) != std::string::npos);
    CHECK(what.find("simple") != std::string::npos);
  }
  // A small all-reduce on the same machine forced onto the ring takes LL.
  CHECK(lower(CollectiveKind::AllReduce, Bytes(8), g, Algorithm::Ring).protocol == Protocol::LL);
}

// Issue 22: a direct all-to-all's seven sends leave each GPU through its one NVSwitch port, one after another in
// the analytic engine (they share it in SimGrid): (n - 1) / n of the buffer at the port's rate, as the SimGrid
// flow model gives it (`dtsim collective --op alltoall`: 182 us for 64 MiB).
TEST_CASE("collective: the analytic engine's all-to-all on 8x H100 shares each GPU's NVSwitch port among its peers") {
  const auto cluster = topology::build_cluster(topology::default_cluster("h100-sxm5-80gb", topology::IntraKind::NvSwitch, 1, 8));
  const topology::GpuSpec& h100 = topology::find_gpu("h100-sxm5-80gb");
  const topology::LinkSpec& link = topology::find_link(h100.gpu_link);
  const BytesPerSecond port = link.bandwidth * (h100.gpu_link_count * link.efficiency);
  const auto costs = sim::analytic_costs(cluster.topology, Algorithm::Auto, false, topology::Routing::Single);
  const Bytes s = 64_MiB;
  const workloads::CollectiveOp op{CollectiveKind::AllToAll, workloads::Group::Ep, s,
                                   workloads::CommPurpose::ExpertParallel, 0, 0};
  const double t = costs.collective(op, {0, 1, 2, 3, 4, 5, 6, 7}).value();
  CHECK(t == doctest::Approx((s * (7.0 / 8.0) / port).value()).epsilon(0.03));
  CHECK(t * 1e6 == doctest::Approx(182).epsilon(0.03));
}
