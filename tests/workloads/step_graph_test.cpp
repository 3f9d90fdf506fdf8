#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/gpt_job.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::a100;
using dtsim::test::gpt_job;

namespace {


// Megatron-LM (Narayanan et al. SC'21, eq. 3) and Korthikanti et al.: FLOPs per iteration.
double closed_form(const Workload& w, double factor, double vocab_divisor) {
  const double B = w.training->global_batch, s = w.model.seq_length, l = w.model.layers, h = w.model.hidden,
               V = w.model.vocab;
  return factor * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (vocab_divisor * l * h));
}

struct Counts {
  int compute = 0, sends = 0, recvs = 0;
  std::map<std::pair<CollectiveKind, Group>, int> collectives;
  std::map<std::pair<CollectiveKind, Group>, double> bytes;
};

Counts count(const RankClass& c) {
  Counts n;
  for (const Op& op : c.ops) {
    if (std::holds_alternative<ComputeOp>(op.body)) ++n.compute;
    if (std::holds_alternative<SendOp>(op.body)) ++n.sends;
    if (std::holds_alternative<RecvOp>(op.body)) ++n.recvs;
    if (const auto* k = std::get_if<CollectiveOp>(&op.body)) {
      ++n.collectives[{k->kind, k->group}];
      n.bytes[{k->kind, k->group}] += k->bytes.value();
    }
  }
  return n;
}

// Only the layers take time: the pipeline's stages are then uniform and its bubble is the textbook one.
void keep_only_layer_time(StepGraph& g) {
  for (auto& c : g.classes)
    for (auto& op : c.ops)
      if (auto* comp = std::get_if<ComputeOp>(&op.body); comp && comp->scope != Scope::Layer) comp->duration = Seconds(0);
}

double bubble_fraction(const StepGraph& g) {
  const auto t = sim::play_analytic(g, sim::free_communication());
  return (t.step_time - t.classes.front().compute_busy) / t.step_time;
}

}  // namespace

TEST_CASE("FLOPs summed over the generated ops equal Megatron's closed forms") {
  auto w = gpt_job(2, 2, 2, 16);
  auto g = generate_step(w, a100());
  CHECK(model_flops(g).value() == doctest::Approx(closed_form(w, 72, 12)).epsilon(1e-12));
  CHECK(hardware_flops(g).value() == doctest::Approx(closed_form(w, 72, 12)).epsilon(1e-12));
  w.training->recompute = Recompute::Full;
  g = generate_step(w, a100());
  CHECK(hardware_flops(g).value() == doctest::Approx(closed_form(w, 96, 16)).epsilon(1e-12));
  CHECK(model_flops(g).value() == doctest::Approx(closed_form(w, 72, 12)).epsilon(1e-12));
  w.training->recompute = Recompute::Selective;   // recomputes only the attention core: 4 b s^2 h per layer
  g = generate_step(w, a100());
  const double extra = 4.0 * 16 * 2048.0 * 2048.0 * 2048.0 * 8;
  CHECK(hardware_flops(g).value() == doctest::Approx(closed_form(w, 72, 12) + extra).epsilon(1e-12));
}

TEST_CASE("one TP-8 stage: op counts per rank follow the layer structure") {
  const int layers = 8, m = 4;
  auto g = generate_step(gpt_job(8, 1, 1, m), a100());
  REQUIRE(g.classes.size() == 1);
  CHECK(g.classes[0].ranks == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  const Counts n = count(g.classes[0]);
  CHECK(n.compute == m * (2 * layers + 4) + 1);              // layers fwd+bwd, embedding and logits fwd+bwd, optimizer
  CHECK(n.collectives.at({CollectiveKind::AllReduce, Group::Tp}) == m * layers * 4);   // two per layer per pass
  CHECK(n.bytes.at({CollectiveKind::AllReduce, Group::Tp}) == doctest::Approx(m * layers * 4 * 2048.0 * 2048 * 2));
  CHECK(n.sends == 0);
  CHECK(n.recvs == 0);
  // Full recomputation reruns each layer's forward with its two all-reduces; selective reruns no communication.
  auto w = gpt_job(8, 1, 1, m);
  w.training->recompute = Recompute::Full;
  CHECK(count(generate_step(w, a100()).classes[0]).collectives.at({CollectiveKind::AllReduce, Group::Tp}) == m * layers * 6);
  w.training->recompute = Recompute::Selective;
  CHECK(count(generate_step(w, a100()).classes[0]).collectives.at({CollectiveKind::AllReduce, Group::Tp}) == m * layers * 4);
}

TEST_CASE("sequence parallelism swaps each all-reduce for an all-gather and a reduce-scatter") {
  auto w = gpt_job(8, 1, 1, 2);
  w.training->sequence_parallel = true;
  const Counts n = count(generate_step(w, a100()).classes[0]);
  CHECK(n.collectives.count({CollectiveKind::AllReduce, Group::Tp}) == 0);
  CHECK(n.collectives.at({CollectiveKind::AllGather, Group::Tp}) == 2 * 8 * 4);
  CHECK(n.collectives.at({CollectiveKind::ReduceScatter, Group::Tp}) == 2 * 8 * 4);
}

TEST_CASE("pipeline stages send activations forward and gradients back, 1/tp each with scatter/gather") {
  const int m = 6;
  auto g = generate_step(gpt_job(2, 4, 1, m), a100());
  REQUIRE(g.classes.size() == 4);
  for (const auto& c : g.classes) {
    Counts n = count(c);
    const bool first = c.stage == 0, last = c.stage == 3;
    CHECK(n.sends == (first || last ? m : 2 * m));
    CHECK(n.recvs == (first || last ? m : 2 * m));
    CHECK(n.collectives[{CollectiveKind::AllGather, Group::Tp}] == n.recvs);   // the gather after each recv
    CHECK(n.collectives[{CollectiveKind::AllReduce, Group::Embedding}] == (first || last ? 1 : 0));
    for (const Op& op : c.ops)
      if (const auto* s = std::get_if<SendOp>(&op.body)) CHECK(s->bytes.value() == doctest::Approx(2048.0 * 2048 * 2 / 2));
  }
  CHECK(g.peer_rank(g.classes[1].ranks[1], 2) == g.classes[2].ranks[1]);
}

TEST_CASE("rank classes share one op list whatever the data-parallel degree") {
  const auto small = generate_step(gpt_job(2, 2, 2, 4), a100());   // 2 micro-batches per replica, as below
  const auto large = generate_step(gpt_job(2, 2, 512, 1024), a100());
  CHECK(large.classes.size() == 2);
  CHECK(large.classes[1].ranks.size() == 1024);
  CHECK(large.classes[0].ops.size() == small.classes[0].ops.size());
  CHECK(large.group_ranks(5, Group::Dp).size() == 512);
  CHECK(&large.class_of(2047) == &large.classes[1]);
}

TEST_CASE("data-parallel gradients: buckets overlap the backward, ZeRO shards them") {
  auto w = gpt_job(1, 1, 4, 8);
  const double grads = (8 * layer_parameters(w.model) + embedding_parameters(w.model)) * 4.0;   // fp32, tied
  auto g = generate_step(w, a100());
  Counts n = count(g.classes[0]);
  CHECK(n.bytes.at({CollectiveKind::AllReduce, Group::Dp}) == doctest::Approx(grads));
  CHECK(n.collectives.at({CollectiveKind::AllReduce, Group::Dp}) > 1);          // 25 MB buckets, not one blob
  // Each bucket waits only for backward compute; the optimizer waits for every bucket.
  const auto& ops = g.classes[0].ops;
  for (const Op& op : ops)
    if (const auto* k = std::get_if<CollectiveOp>(&op.body); k && k->group == Group::Dp)
      for (auto d : op.deps) CHECK(std::get<ComputeOp>(ops[d].body).pass == Pass::Backward);
  CHECK(std::get<ComputeOp>(ops.back().body).scope == Scope::Optimizer);

  // dp_overlap false (Megatron-LM's 2021 "local" DDP): one all-reduce of every gradient, after the last backward op.
  auto blob = w;
  blob.training->dp_overlap = false;
  const auto one = generate_step(blob, a100());
  const Counts c = count(one.classes[0]);
  CHECK(c.collectives.at({CollectiveKind::AllReduce, Group::Dp}) == 1);
  CHECK(c.bytes.at({CollectiveKind::AllReduce, Group::Dp}) == doctest::Approx(grads));
  const auto& seq = one.classes[0].ops;
  std::size_t last_backward = 0, reduce = 0;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    if (const auto* k = std::get_if<ComputeOp>(&seq[i].body); k && k->pass == Pass::Backward) last_backward = i;
    if (const auto* k = std::get_if<CollectiveOp>(&seq[i].body); k && k->group == Group::Dp) reduce = i;
  }
  CHECK(reduce > last_backward);

  w.plan.zero = 1;
  n = count(generate_step(w, a100()).classes[0]);
  CHECK(n.bytes.at({CollectiveKind::ReduceScatter, Group::Dp}) == doctest::Approx(grads));
  CHECK(n.collectives.at({CollectiveKind::AllGather, Group::Dp}) == 1);          // updated weights, once
  w.plan.zero = 2;
  n = count(generate_step(w, a100()).classes[0]);
  CHECK(n.bytes.at({CollectiveKind::ReduceScatter, Group::Dp}) == doctest::Approx(2 * grads));   // every micro-batch
  auto unbucketed = w;   // dp_overlap false with ZeRO 2: one reduce-scatter after each micro-batch's backward
  unbucketed.training->dp_overlap = false;
  const Counts u = count(generate_step(unbucketed, a100()).classes[0]);
  CHECK(u.collectives.at({CollectiveKind::ReduceScatter, Group::Dp}) == 2);
  CHECK(u.bytes.at({CollectiveKind::ReduceScatter, Group::Dp}) == doctest::Approx(2 * grads));
  w.plan.zero = 3;
  n = count(generate_step(w, a100()).classes[0]);
  // Each layer's four linear modules (as DeepSpeed fetches them), forward and backward, per micro-batch; together
  // exactly the layer's weights.
  CHECK(n.collectives.at({CollectiveKind::AllGather, Group::Dp}) == 4 * 8 * 2 * 2);
  CHECK(n.bytes.at({CollectiveKind::AllGather, Group::Dp}) ==
        doctest::Approx(8 * layer_parameters(w.model) * 2.0 * 2 * 2));
}

TEST_CASE("gradients join their bucket module by module while the layer's backward still runs") {
  auto w = gpt_job(1, 1, 4, 4);   // one micro-batch per replica
  w.plan.zero = 3;
  w.training->dp_bucket = Bytes(1e6);   // smaller than any module: one reduce-scatter per module
  const double grads = 8 * layer_parameters(w.model) * 4.0;   // fp32
  double compute_busy[2] = {0, 0};
  for (const Granularity granularity : {Granularity::Layer, Granularity::Kernel}) {
    CAPTURE(static_cast<int>(granularity));
    const auto g = generate_step(w, a100(), {granularity});
    const auto& ops = g.classes[0].ops;
    std::map<int, std::vector<std::uint32_t>> backward;   // layer -> its backward compute ops, in order
    std::map<int, std::vector<std::uint32_t>> after;      // layer -> the op each of its reduce-scatters waits for
    std::map<int, std::vector<double>> sizes;             // layer -> each reduce-scatter's bytes
    double reduced = 0;
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      if (const auto* c = std::get_if<ComputeOp>(&ops[i].body);
          c && c->scope == Scope::Layer && c->pass == Pass::Backward)
        backward[c->layer].push_back(i);
      const auto* k = std::get_if<CollectiveOp>(&ops[i].body);
      if (!k || k->purpose != CommPurpose::DataParallelGrads || k->layer < 0) continue;
      REQUIRE(ops[i].deps.size() == 1);
      after[k->layer].push_back(ops[i].deps[0]);
      sizes[k->layer].push_back(k->bytes.value());
      reduced += k->bytes.value();
    }
    CHECK(reduced == doctest::Approx(grads));
    REQUIRE(after.size() == 8);
    for (const auto& [layer, waits] : after) {
      CAPTURE(layer);
      REQUIRE(waits.size() == 4);
      CHECK(std::ranges::is_sorted(waits));
      // MLP down, MLP up and the projection are reduced before the layer's backward ends; Q K V at its end.
      CHECK(waits.back() == backward.at(layer).back());
      CHECK(waits[2] < backward.at(layer).back());
      // Each reduce-scatter carries its own module's gradients (fp32): MLP down, MLP up, projection, the rest.
      const double h = w.model.hidden, f = w.model.ffn_hidden;
      const std::vector<double> expected = {4 * h * f, 4 * h * f, 4 * h * h, 4 * (layer_parameters(w.model) - 2 * h * f - h * h)};
      REQUIRE(sizes.at(layer).size() == 4);
      for (std::size_t m = 0; m < 4; ++m) CHECK(sizes.at(layer)[m] == doctest::Approx(expected[m]));
      if (granularity == Granularity::Layer) {
        CHECK(backward.at(layer).size() == 4);   // one op per module's share of the layer
      } else {
        CHECK(std::get<ComputeOp>(ops[waits[0]].body).kernel == KernelClass::MlpDownGemm);
        CHECK(std::get<ComputeOp>(ops[waits[1]].body).kernel == KernelClass::MlpUpGemm);
        CHECK(std::get<ComputeOp>(ops[waits[2]].body).kernel == KernelClass::ProjGemm);
      }
    }
    compute_busy[granularity == Granularity::Layer ? 0 : 1] =
        sim::play_analytic(g, sim::free_communication()).classes[0].compute_busy.value();
  }
  // Splitting the layer's backward at its modules moves no work.
  CHECK(compute_busy[0] == doctest::Approx(compute_busy[1]).epsilon(1e-12));

  // Buckets still merge modules smaller than a bucket: 25 MB holds the 16.8 MB projection until Q K V joins it.
  w.training->dp_bucket = Bytes(25e6);
  const Counts n = count(generate_step(w, a100()).classes[0]);
  CHECK(n.collectives.at({CollectiveKind::ReduceScatter, Group::Dp}) == 3 * 8 + 1);   // + the embedding
}

TEST_CASE("ZeRO-3 prefetch: a layer's gathers wait for the layer pass two back, or one back without prefetch") {
  auto w = gpt_job(1, 1, 4, 4);   // one micro-batch: layer passes forward 0..7, then backward 7..0
  w.plan.zero = 3;
  const auto pass_at = [](int i) {   // the i-th layer pass of the step: (pass, layer)
    return i < 8 ? std::pair{Pass::Forward, i} : std::pair{Pass::Backward, 15 - i};
  };
  for (const Zero3Prefetch mode : {Zero3Prefetch::Layer, Zero3Prefetch::None, Zero3Prefetch::Auto}) {
    CAPTURE(to_string(mode));
    w.training->zero3_prefetch = mode;
    const int back = mode == Zero3Prefetch::None ? 1 : 2;   // auto: this small job fits with the prefetch
    const auto g = generate_step(w, a100());
    const auto& ops = g.classes[0].ops;
    int gathers = 0;
    for (const Op& op : ops) {
      const auto* k = std::get_if<CollectiveOp>(&op.body);
      if (!k || k->purpose != CommPurpose::ZeroParamGather || k->layer < 0) continue;
      const int i = gathers++ / 4;   // four module gathers per layer pass
      CHECK(k->layer == pass_at(i).second);
      if (i < back) {   // the first layer passes have nothing to wait for
        CHECK(op.deps.empty());
        continue;
      }
      REQUIRE(op.deps.size() == 1);
      const auto& gate = std::get<ComputeOp>(ops[op.deps[0]].body);
      CHECK(std::pair{gate.pass, gate.layer} == pass_at(i - back));
    }
    CHECK(gathers == 4 * 16);
  }
}

TEST_CASE("ZeRO-3 prefetch auto: the step graph drops the prefetch where the memory plan cannot hold it") {
  // Megatron-LM SC'21's ZeRO-3 530B row on 640 A100s (memory_plan_test: one gathered layer fits, two do not).
  auto w = gpt_job(1, 1, 640, 2560, 105);
  w.model.hidden = 20480;
  w.model.heads = w.model.kv_heads = 128;
  w.model.ffn_hidden = 81920;
  w.plan.zero = 3;
  w.training->micro_batch = 4;
  w.training->recompute = Recompute::Full;
  w.training->precision = w.training->weight_dtype = w.training->grad_dtype = topology::Precision::Fp16;
  w.training->dp_bucket = Bytes(1000e6);
  REQUIRE_FALSE(zero3_prefetches(w, a100()));
  const auto gate_layer = [&](const StepGraph& g) {   // what the forward's first gather of layer 5 waits for
    const auto& ops = g.classes[0].ops;
    for (const Op& op : ops)
      if (const auto* k = std::get_if<CollectiveOp>(&op.body);
          k && k->purpose == CommPurpose::ZeroParamGather && k->layer == 5) {
        REQUIRE(op.deps.size() == 1);
        return std::get<ComputeOp>(ops[op.deps[0]].body).layer;
      }
    FAIL("no gather for layer 5");
    return -1;
  };
  CHECK(gate_layer(generate_step(w, a100())) == 4);   // auto: no prefetch
  w.training->zero3_prefetch = Zero3Prefetch::Layer;
  CHECK(gate_layer(generate_step(w, a100())) == 3);
}

TEST_CASE("the pipeline bubble comes out of the schedule: (p-1)/(m+p-1) for uniform stages") {
  for (int m : {4, 8, 16}) {
    auto g = generate_step(gpt_job(1, 4, 1, m), a100());
    keep_only_layer_time(g);
    CHECK(bubble_fraction(g) == doctest::Approx(3.0 / (m + 3.0)).epsilon(1e-9));
    auto w = gpt_job(1, 4, 1, m);
    w.plan.schedule = Schedule::Gpipe;
    g = generate_step(w, a100());
    keep_only_layer_time(g);
    CHECK(bubble_fraction(g) == doctest::Approx(3.0 / (m + 3.0)).epsilon(1e-9));
  }
}

TEST_CASE("interleaving shrinks the bubble by the number of chunks") {
  auto w = gpt_job(1, 4, 1, 8);
  w.plan.vpp = 2;
  auto g = generate_step(w, a100());
  keep_only_layer_time(g);
  const auto t = sim::play_analytic(g, sim::free_communication());
  const double per_micro_batch = t.classes.front().compute_busy.value() / 8;   // f + b of one rank
  CHECK(t.step_time.value() == doctest::Approx((8 + 3.0 / 2) * per_micro_batch).epsilon(1e-9));
}

TEST_CASE("kernel granularity holds the same work as layer granularity") {
  auto w = gpt_job(4, 2, 1, 4);
  w.training->recompute = Recompute::Selective;
  const auto coarse = generate_step(w, a100());
  const auto fine = generate_step(w, a100(), {Granularity::Kernel});
  CHECK(hardware_flops(fine).value() == doctest::Approx(hardware_flops(coarse).value()).epsilon(1e-12));
  const auto a = sim::play_analytic(coarse, sim::free_communication());
  const auto b = sim::play_analytic(fine, sim::free_communication());
  CHECK(fine.classes[0].ops.size() > 3 * coarse.classes[0].ops.size());
  CHECK(b.classes[0].compute_busy.value() == doctest::Approx(a.classes[0].compute_busy.value()).epsilon(1e-12));
  CHECK(b.step_time.value() == doctest::Approx(a.step_time.value()).epsilon(1e-9));
  // Each TP all-reduce follows the row-parallel GEMM (forward) or the column-parallel one (backward).
  int reduces = 0;
  for (const Op& op : fine.classes[0].ops) {
    const auto* k = std::get_if<CollectiveOp>(&op.body);
    if (!k || k->group != Group::Tp || k->kind != CollectiveKind::AllReduce) continue;
    ++reduces;
    REQUIRE(op.deps.size() == 1);
    const auto& before = std::get<ComputeOp>(fine.classes[0].ops[op.deps[0]].body);
    const auto kind = before.kernel.value();
    if (before.pass == Pass::Forward) CHECK((kind == KernelClass::ProjGemm || kind == KernelClass::MlpDownGemm));
    else CHECK((kind == KernelClass::QkvGemm || kind == KernelClass::MlpUpGemm));
  }
  CHECK(reduces == 4 * 4 * 4);   // 4 micro-batches x 4 layers per stage x 2 passes x 2
}

TEST_CASE("the step graph prints a summary and dumps DOT with the pipeline edges") {
  const auto g = generate_step(gpt_job(2, 2, 1, 2, 2), a100());
  const std::string s = summary(g);
  CHECK(s.find("2 rank classes") != std::string::npos);
  CHECK(s.find("all-reduce over tp") != std::string::npos);
  const std::string dot = to_dot(g);
  CHECK(dot.rfind("digraph step {", 0) == 0);
  int dashed = 0;
  for (std::size_t p = dot.find("style=dashed"); p != std::string::npos; p = dot.find("style=dashed", p + 1)) ++dashed;
  CHECK(dashed == 4);   // 2 micro-batches x (activation forward + gradient back)
  CHECK_THROWS_AS(to_dot(generate_step(gpt_job(8, 1, 1, 64), a100()), 100), InputError);
}

namespace {

// The TP collectives of the first forward (or backward) layer pass of rank class 0, with the compute ops around
// them, as (index, op) in list order.
std::vector<std::uint32_t> pass_ops(const StepGraph& g, Pass pass) {
  std::vector<std::uint32_t> out;
  const auto& ops = g.classes[0].ops;
  bool inside = false;   // the last compute op seen was of this pass of layer 0, micro-batch 0
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (const auto* c = std::get_if<ComputeOp>(&ops[i].body)) {
      inside = c->layer == 0 && c->micro_batch == 0 && c->pass == pass;
      if (inside) out.push_back(i);
    }
    if (const auto* k = std::get_if<CollectiveOp>(&ops[i].body); k && k->group == Group::Tp && k->layer == 0 && inside)
      out.push_back(i);
  }
  return out;
}

// Every TP collective takes bytes / rate: `rate` chooses between comm-bound and compute-bound.
sim::CommCosts tp_costs(double rate) {
  sim::CommCosts c = sim::free_communication();
  c.collective = [rate](const CollectiveOp& op, const std::vector<int>&) {
    return op.group == Group::Tp ? Seconds(op.bytes.value() / rate) : Seconds(0);
  };
  return c;
}

}  // namespace

// The overlapped TP schedules (step_graph.cpp's TpStyle) end where their closed forms say, with g a GEMM chunk's
// compute, G the whole GEMM, c and r a step's or chunk's communication, n = tp, s = kTpSplits:
//   ring (forward, all-gather before Q K V): (n - 1) chunks from the start, the last after the all-gather:
//     max((n - 1) g, C) + g with C = the all-gather;
//   pipelined (reduce-scatter after the projection): max(G + r, g + s r);
//   bulk (backward of MLP up, with SP): D beside the input's all-gather A, then the reduce-scatter R beside the
//     weight gradient W, R after A on the one communicator: max(A, D) + max(R, W).
TEST_CASE("TP overlap: the ring, pipelined and bulk schedules end at their closed forms, comm- or compute-bound") {
  auto w = gpt_job(8, 1, 1, 1, 2);
  w.training->sequence_parallel = true;
  w.training->tp_comm_overlap = true;
  w.training->tp_backward_overlap = true;
  const StepGraph g = generate_step(w, a100());
  const auto& ops = g.classes[0].ops;
  const auto dur = [&](std::uint32_t i) { return std::get<ComputeOp>(ops[i].body).duration.value(); };
  const auto bytes = [&](std::uint32_t i) { return std::get<CollectiveOp>(ops[i].body).bytes.value(); };
  const auto is_comm = [&](std::uint32_t i) { return std::holds_alternative<CollectiveOp>(ops[i].body); };
  const double n = 8, s = kTpSplits;
  const double act = 2048.0 * 2048 * 2;   // b s h in bf16
  for (const double rate : {1e10, 1e13}) {   // 20 MB/us-class links: comm-bound, then compute-bound
    CAPTURE(rate);
    const auto t = sim::play_analytic(g, tp_costs(rate));
    const auto& times = t.classes[0].ops;
    const auto fwd = pass_ops(g, Pass::Forward);
    // [norm] [AG] [QKV main] [QKV last] ...: the ring.
    REQUIRE(fwd.size() > 8);
    REQUIRE(is_comm(fwd[1]));
    CHECK(bytes(fwd[1]) == act);
    const std::uint32_t main = fwd[2], last = fwd[3];
    CHECK(dur(main) == doctest::Approx((n - 1) * dur(last)).epsilon(1e-12));
    const double ring = std::max(dur(main), act / rate) + dur(last);
    CHECK((times[last].end - times[main].start).value() == doctest::Approx(ring).epsilon(1e-12));
    // ... [attention] [proj first] [RS main] [proj rest] [RS last]: the pipeline.
    const std::uint32_t first = fwd[5], r_main = fwd[6], rest = fwd[7], r_last = fwd[8];
    REQUIRE(is_comm(r_main));
    REQUIRE(is_comm(r_last));
    CHECK(bytes(r_main) == doctest::Approx(act * (s - 1) / s));
    CHECK(bytes(r_last) == doctest::Approx(act / s));
    CHECK(dur(rest) == doctest::Approx((s - 1) * dur(first)).epsilon(1e-12));
    const double r = act / s / rate, G = s * dur(first);
    const double pipe = std::max(G + r, dur(first) + s * r);
    CHECK((times[r_last].end - times[first].start).value() == doctest::Approx(pipe).epsilon(1e-12));
    // Backward of MLP up: [.. act'] [A] [D] [R] [W].
    const auto bwd = pass_ops(g, Pass::Backward);
    const auto a = std::ranges::find_if(bwd, [&](std::uint32_t i) {
      return is_comm(i) && std::get<CollectiveOp>(ops[i].body).kind == CollectiveKind::AllGather && is_comm(i + 2) &&
             std::get<CollectiveOp>(ops[i + 2].body).kind == CollectiveKind::ReduceScatter;
    });
    REQUIRE(a != bwd.end());
    const std::uint32_t A = *a, D = *a + 1, R = *a + 2, W = *a + 3;
    REQUIRE(std::get<CollectiveOp>(ops[R].body).kind == CollectiveKind::ReduceScatter);
    CHECK(dur(D) == doctest::Approx(dur(W)).epsilon(0.2));   // equal FLOPs, their own shapes
    const double bulk = std::max(act / rate, dur(D)) + std::max(act / rate, dur(W));
    const double end = std::max(times[W].end.value(), times[R].end.value());
    CHECK(end - times[A].start.value() == doctest::Approx(bulk).epsilon(1e-12));
  }
  // Without the overlaps the same collectives sit on the critical path: where the GEMMs outlast them, the overlap
  // hides them (when communication dominates, the backward's second all-gather of the input costs instead; on
  // GEMMs of a few hundred rows a chunk runs below the whole GEMM's efficiency, and that costs too: here
  // micro-batch 4, 1,024-row chunks).
  w.training->global_batch = w.training->micro_batch = 4;
  auto plain = w;
  plain.training->tp_comm_overlap = false;
  plain.training->tp_backward_overlap = false;
  const auto slow = sim::play_analytic(generate_step(plain, a100()), tp_costs(1e12));
  const auto fast = sim::play_analytic(generate_step(w, a100()), tp_costs(1e12));
  CAPTURE(fast.step_time.value());
  CAPTURE(slow.step_time.value());
  CHECK(fast.step_time < slow.step_time);
}

TEST_CASE("overlap_param_gather: one all-gather per bucket at the step's start, each layer's first forward after its own") {
  auto w = gpt_job(1, 1, 4, 8, 8);
  w.plan.zero = 1;
  w.training->overlap_param_gather = true;
  w.training->dp_bucket = Bytes(2.0 * layer_parameters(w.model) * 4);   // two layers a bucket (fp32 gradients)
  const StepGraph g = generate_step(w, a100());
  const auto& ops = g.classes[0].ops;
  std::vector<std::uint32_t> gathers;
  for (std::uint32_t i = 0; i < ops.size(); ++i)
    if (const auto* k = std::get_if<CollectiveOp>(&ops[i].body); k && k->purpose == CommPurpose::ZeroParamGather) {
      gathers.push_back(i);
      CHECK(ops[i].deps.empty());   // at the start
    }
  // The embedding (109M parameters: more than a bucket alone), layers 0-1, 2-3, 4-5, 6-7, the final norm.
  CHECK(gathers.size() == 6);
  // Layer l's first forward waits for its bucket, later micro-batches do not.
  int waits = 0;
  for (const Op& op : ops)
    for (std::uint32_t d : op.deps)
      if (std::ranges::find(gathers, d) != gathers.end()) ++waits;
  CHECK(waits == 8 + 2);   // each layer's first pass, the embedding and the logits
  // No all-gather after the optimizer then; without the overlap, one after it.
  auto late = w;
  late.training->overlap_param_gather = false;
  const StepGraph without = generate_step(late, a100());   // held: a reference into the temporary dangled
  const auto& last = without.classes[0].ops.back();
  CHECK(std::get<CollectiveOp>(last.body).purpose == CommPurpose::ZeroParamGather);
  CHECK_FALSE(std::holds_alternative<CollectiveOp>(ops.back().body));
}
