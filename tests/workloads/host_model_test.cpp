// The host's issue of MoE layer passes (workloads/host_model.hpp): its time per pass, where the step graph puts it,
// and what it does to a step whose MoE layers the GPU runs faster than the host issues them.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "workloads/gpt_job.hpp"
#include "topology/catalog.hpp"
#include "workloads/host_model.hpp"
#include "workloads/step_graph.hpp"
#include "workloads/training.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::h100;

namespace {

// `preset`'s layer shape, `layers` layers of which the first is dense, on 16 GPUs `ep`-way expert parallel, two
// micro-batches of 4096 tokens on each.
Workload host_job(const char* preset, int layers, int ep = 16) {
  Workload w = test::preset_job(preset, layers);
  w.model.dense_layers = 1;
  w.model.seq_length = 4096;
  apply_framework(*w.training, Framework::MegatronCore);
  w.training->global_batch = 32;
  w.training->micro_batch = 1;
  w.plan.dp = 16;
  w.plan.ep = ep;
  check_plan(w, 16);
  return w;
}

using PassKey = std::tuple<Pass, int, int>;   // pass, layer, micro-batch

// Per layer pass of class 0: its host op's index.
std::map<PassKey, std::size_t> host_ops(const StepGraph& g) {
  std::map<PassKey, std::size_t> out;
  const auto& ops = g.classes.front().ops;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (const auto* h = std::get_if<HostOp>(&ops[i].body)) out[{h->pass, h->layer, h->micro_batch}] = i;
  return out;
}

}  // namespace

TEST_CASE("host model: forward 3.26 ms a pass, backward 1.75 times it, a recompute the forward's when it dispatches") {
  CHECK(moe_host_time(Pass::Forward, true).value() == doctest::Approx(3.26e-3));
  CHECK(moe_host_time(Pass::Backward, true).value() == doctest::Approx(3.26e-3 * 2.1 / 1.2));
  CHECK(moe_host_time(Pass::Recompute, true).value() == doctest::Approx(3.26e-3));
  CHECK(moe_host_time(Pass::Recompute, false).value() == 0.0);
}

TEST_CASE("host model: each MoE layer pass has one host op, a dense layer's none, and what follows the pass waits for it") {
  const StepGraph g = generate_step(host_job("qwen3-30b-a3b", 3), h100());
  const auto hosts = host_ops(g);
  const auto& ops = g.classes.front().ops;
  // Layers 1 and 2 are MoE, two micro-batches, forward and backward (no recomputation).
  CHECK(hosts.size() == 2 * 2 * 2);
  std::set<int> layers;
  for (const auto& [key, i] : hosts) {
    const auto [pass, layer, mb] = key;
    CAPTURE(layer);
    layers.insert(layer);
    const auto& h = std::get<HostOp>(ops[i].body);
    CHECK(h.duration.value() == doctest::Approx(pass == Pass::Forward ? 3.26e-3 : 3.26e-3 * 1.75));
    // No op of its own pass waits for it; a later op, after the pass's last, does.
    std::optional<std::size_t> waiter, last;
    for (std::size_t j = i + 1; j < ops.size(); ++j) {
      if (const auto* c = std::get_if<ComputeOp>(&ops[j].body);
          c && c->pass == pass && c->layer == layer && c->micro_batch == mb)
        last = j;
      if (!waiter && std::ranges::find(ops[j].deps, static_cast<std::uint32_t>(i)) != ops[j].deps.end()) waiter = j;
    }
    REQUIRE(waiter.has_value());
    REQUIRE(last.has_value());
    CHECK(*waiter > *last);
  }
  CHECK(layers == std::set<int>{1, 2});
  // A dense model has none.
  Workload dense = host_job("qwen3-30b-a3b", 3);
  dense.model.dense_layers = 3;
  CHECK(host_ops(generate_step(dense, h100())).empty());
}

TEST_CASE("host model: small experts' layer passes take the host's time, large experts' their own") {
  // Communication free. Qwen3-30B-A3B's MoE layer computes a micro-batch's forward in about 1.6 ms on an H100, under
  // the host's 3.26 ms: the step grows by the difference on every MoE pass. Mixtral-8x7B's takes longer than its
  // host time: the step is the compute stream's.
  for (const char* preset : {"qwen3-30b-a3b", "mixtral-8x7b"}) {
    CAPTURE(preset);
    const bool small = std::string(preset) == "qwen3-30b-a3b";
    const StepGraph g = generate_step(host_job(preset, 3, small ? 16 : 8), h100());
    const sim::Timeline t = sim::play_analytic(g, sim::free_communication());
    const auto& ops = g.classes.front().ops;
    const auto& times = t.classes.front().ops;
    // Per MoE pass: the span from its host op's start to the later of its last compute op's end and the host op's,
    // and its compute.
    std::map<PassKey, double> compute, end;
    std::map<PassKey, double> start;
    for (const auto& [key, i] : host_ops(g)) {
      start[key] = times[i].start.value();
      end[key] = times[i].end.value();
    }
    for (std::size_t j = 0; j < ops.size(); ++j)
      if (const auto* c = std::get_if<ComputeOp>(&ops[j].body)) {
        const PassKey key{c->pass, c->layer, c->micro_batch};
        if (!start.contains(key)) continue;
        compute[key] += c->duration.value();
        end[key] = std::max(end[key], times[j].end.value());
      }
    REQUIRE(start.size() == 8);
    double waited = 0;   // what the passes' host time adds to the compute stream, at least
    for (const auto& [key, s] : start) {
      const double host = std::get<0>(key) == Pass::Forward ? 3.26e-3 : 3.26e-3 * 1.75;
      const double span = end[key] - s;
      CHECK(span == doctest::Approx(std::max(host, compute[key])).epsilon(1e-9));   // max(GPU, host)
      if (small) CHECK(compute[key] < host);
      else CHECK(compute[key] > host);
      waited += std::max(0.0, host - compute[key]);
    }
    const double busy = t.classes.front().compute_busy.value();
    if (small) CHECK(t.step_time.value() >= busy + waited);
    else CHECK(t.step_time.value() == doctest::Approx(busy).epsilon(1e-9));
  }
}

TEST_CASE("host model: a host-bound step is the same at layer and at kernel granularity") {
  const Workload w = host_job("qwen3-30b-a3b", 3);
  const auto step = [&](Granularity granularity) {
    const StepGraph g = generate_step(w, h100(), GenerateOptions{granularity});
    return sim::play_analytic(g, sim::free_communication()).step_time.value();
  };
  const double layer = step(Granularity::Layer);
  CHECK(step(Granularity::Kernel) == doctest::Approx(layer).epsilon(1e-9));
  // And longer than without the host ops.
  const double bare =
      sim::play_analytic(without_host_ops(generate_step(w, h100())), sim::free_communication()).step_time.value();
  CHECK(layer > bare * 1.05);
}
