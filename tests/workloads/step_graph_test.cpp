// The step graph of a training step: FLOPs against the closed forms, op counts per rank class, pipeline sends,
// data-parallel buckets and ZeRO-3 prefetch, the schedule's bubble (kernel granularity and the printed forms:
// step_graph_output_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

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
  // exactly the layer's weights. Besides, the embedding and the final norm (the output layer is the tied
  // embedding, on the one stage), each before its forward and its backward.
  CHECK(n.collectives.at({CollectiveKind::AllGather, Group::Dp}) == 4 * 8 * 2 * 2 + 2 * 2 * 2);
  CHECK(n.bytes.at({CollectiveKind::AllGather, Group::Dp}) ==
        doctest::Approx((8 * layer_parameters(w.model) + embedding_parameters(w.model) + final_norm_parameters(w.model)) *
                        2.0 * 2 * 2));
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
  test::set_width(w, 20480, 128, 128, 81920);
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

// Megatron-LM's pipeline exchanges hold the stage until they complete (p2p_communication.py: wait on every request,
// then torch.cuda.synchronize()): 2021's code always, Megatron-Core without interleaving; with it Megatron-Core
// overlaps them (overlap_p2p_comm), and torchtitan never blocks. Blocking: every send is waited for by the
// stage's next op (or its optimizer step); overlapped: no op waits for a send.
TEST_CASE("pipeline exchanges block the stage where the framework's do, and training.overlap_p2p_comm overrides") {
  const auto sends_waited = [](const StepGraph& g) {
    int sends = 0, waited = 0;
    for (const auto& c : g.classes) {
      std::vector<bool> is_send(c.ops.size());
      for (std::size_t i = 0; i < c.ops.size(); ++i) is_send[i] = std::holds_alternative<SendOp>(c.ops[i].body);
      std::vector<bool> seen(c.ops.size());
      for (const auto& op : c.ops)
        for (const auto d : op.deps)
          if (is_send[d] && !seen[d]) {
            seen[d] = true;
            ++waited;
          }
      sends += static_cast<int>(std::count(is_send.begin(), is_send.end(), true));
    }
    return std::pair{sends, waited};
  };
  const auto job = [](Framework f, int vpp, std::optional<bool> overlap) {
    auto w = gpt_job(1, 2, 1, 4);
    apply_framework(*w.training, f);
    w.plan.vpp = vpp;
    w.training->overlap_p2p_comm = overlap;
    return generate_step(w, a100());
  };
  const auto blocks = [&](Framework f, int vpp, std::optional<bool> overlap = std::nullopt) {
    const auto [sends, waited] = sends_waited(job(f, vpp, overlap));
    REQUIRE(sends > 0);
    CHECK((waited == 0 || waited == sends));
    return waited == sends;
  };
  CHECK(blocks(Framework::Megatron2021, 1));
  CHECK(blocks(Framework::Megatron2021, 2));
  CHECK(blocks(Framework::DeepSpeed, 1));
  CHECK(blocks(Framework::MegatronCore, 1));
  CHECK_FALSE(blocks(Framework::MegatronCore, 2));
  CHECK_FALSE(blocks(Framework::Torchtitan, 1));
  CHECK_FALSE(blocks(Framework::Megatron2021, 1, true));
  CHECK(blocks(Framework::MegatronCore, 2, false));
  // With exchanges that take time, the stage that waits for them takes longer.
  sim::CommCosts costs = sim::free_communication();
  costs.transfer = [](const SendOp&, int, int) { return Seconds(1e-3); };
  const double blocking = sim::play_analytic(job(Framework::Megatron2021, 1, std::nullopt), costs).step_time.value();
  const double overlapped = sim::play_analytic(job(Framework::Megatron2021, 1, true), costs).step_time.value();
  CHECK(blocking > overlapped + 1e-3);
}
