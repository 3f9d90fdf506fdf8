// A continuous-batching iteration timed in closed form (sim/analytic/serving_iterations.hpp) against the analytic
// engine playing the iteration's StepGraph: the same time, whatever the pass mix, plan and cluster.
#include <doctest/doctest.h>

#include "sim/analytic/analytic_costs.hpp"
#include "sim/analytic/serving_iterations.hpp"
#include "workloads/gpt_job.hpp"
#include "topology/builders.hpp"

using namespace dtsim;
using workloads::ServingPass;
using workloads::ServingPhase;

namespace {

workloads::Workload serving_job(int tp, int pp, int dp) {
  workloads::Workload w = test::gpt_job(tp, pp, dp, dp);
  w.training.reset();
  workloads::InferenceSpec inf;
  inf.context = 2048;
  inf.prompt_tokens = 1024;
  inf.output_tokens = 128;
  w.inference = inf;
  return w;
}

// Decodes over short and long caches, a prompt chunk short of its end (no sampling) and one that ends a prompt.
const std::vector<ServingPass> kIterationMix = {{ServingPhase::Decode, 1, 1, 100, true},
                                                {ServingPhase::Decode, 1, 1, 517, true},
                                                {ServingPhase::Decode, 3, 1, 2000, true},
                                                {ServingPhase::Prefill, 1, 300, 300, false},
                                                {ServingPhase::Prefill, 1, 200, 700, true}};

// The closed form of `w` against the analytic engine playing each iteration's graph: the same time, twice (the
// second from its memo). Default: every prefix of kIterationMix.
void check_closed_form(const workloads::Workload& w, const topology::Topology& topo,
                       std::vector<std::vector<ServingPass>> mixes = {}) {
  if (mixes.empty())
    for (std::size_t n = 1; n <= kIterationMix.size(); ++n)
      mixes.emplace_back(kIterationMix.begin(), kIterationMix.begin() + static_cast<long>(n));
  const auto costs = [&] { return sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Single); };
  sim::ServingIterations timer(w, test::a100(), costs());
  for (const auto& passes : mixes) {
    CAPTURE(passes.size());
    const double played =
        sim::play_analytic(workloads::generate_serving_step(w, test::a100(), passes), costs()).step_time.value();
    CHECK(timer(passes).value() == doctest::Approx(played).epsilon(1e-12));
    CHECK(timer(passes).value() == doctest::Approx(played).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("serving iterations: the closed form gives what the analytic engine plays, for every plan and mix") {
  struct Case {
    int nodes, per_node, tp, pp, dp;
    topology::IntraKind intra;
  };
  for (const Case c : {Case{1, 1, 1, 1, 1, topology::IntraKind::NvSwitch}, Case{1, 4, 4, 1, 1, topology::IntraKind::NvSwitch},
                       Case{2, 4, 4, 2, 1, topology::IntraKind::NvSwitch}, Case{2, 4, 2, 2, 2, topology::IntraKind::Pcie}}) {
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    CAPTURE(c.dp);
    auto spec = topology::default_cluster("a100-sxm4-80gb", c.intra, c.nodes, c.per_node);
    if (c.nodes > 1) spec.inter = topology::InterKind::Switch;
    const auto topo = topology::build_cluster(spec).topology;
    check_closed_form(serving_job(c.tp, c.pp, c.dp), topo);
  }
}

TEST_CASE("serving iterations: a mixture of experts, dense and MoE layers, in closed form as played") {
  auto spec = topology::default_cluster("a100-sxm4-80gb", topology::IntraKind::NvSwitch, 1, 8);
  const auto topo = topology::build_cluster(spec).topology;
  for (const auto& [pp, ep] : {std::pair{1, 1}, std::pair{1, 2}, std::pair{1, 4}, std::pair{2, 2}}) {
    CAPTURE(pp);
    CAPTURE(ep);
    // Two dense layers first: with pp 2 the first stage holds both and one MoE layer, the second three MoE layers.
    workloads::Workload w = serving_job(4, pp, 1);
    w.model = workloads::find_model("mixtral-8x7b");
    w.model.layers = 6;
    w.model.dense_layers = 2;
    w.plan.ep = ep;
    check_closed_form(w, topo);
  }
}

TEST_CASE("serving iterations: latent attention's decode and prompt tokens apart, in closed form as played") {
  const auto topo = topology::build_cluster(topology::default_cluster("a100-sxm4-80gb", topology::IntraKind::NvSwitch, 1, 8)).topology;
  workloads::Workload w = serving_job(8, 1, 1);
  w.model = workloads::find_model("deepseek-v3");
  w.model.layers = 5;   // two dense layers, three MoE
  w.model.dense_layers = 2;
  w.plan.ep = 8;
  // Every prefix of the mix (the first three decodes alone among them), and the prompts alone (no decode token).
  std::vector<std::vector<ServingPass>> mixes;
  for (std::size_t n = 1; n <= kIterationMix.size(); ++n)
    mixes.emplace_back(kIterationMix.begin(), kIterationMix.begin() + static_cast<long>(n));
  mixes.emplace_back(kIterationMix.begin() + 3, kIterationMix.end());
  // The same 300 tokens as decodes and as a prompt: they run different kernels, timed apart by the same timer.
  mixes.push_back({{ServingPhase::Decode, 300, 1, 400, true}});
  mixes.push_back({{ServingPhase::Prefill, 1, 300, 300, true}});
  check_closed_form(w, topo, mixes);
}

TEST_CASE("serving iterations: a longer cache or more tokens never takes less time") {
  const auto topo = topology::build_cluster(topology::default_cluster("a100-sxm4-80gb", topology::IntraKind::NvSwitch, 1, 2)).topology;
  sim::ServingIterations timer(serving_job(2, 1, 1), test::a100(),
                               sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Single));
  const ServingPass short_cache{ServingPhase::Decode, 1, 1, 64, true}, long_cache{ServingPhase::Decode, 1, 1, 2048, true};
  CHECK(timer(std::span(&long_cache, 1)) > timer(std::span(&short_cache, 1)));
  const std::vector<ServingPass> two = {short_cache, short_cache};
  CHECK(timer(two) > timer(std::span(&short_cache, 1)));
}

TEST_CASE("serving iterations: a KV cache goes between pools in head shares, the slowest sending rank's time") {
  auto spec = topology::default_cluster("a100-sxm4-80gb", topology::IntraKind::NvSwitch, 2, 4);
  spec.inter = topology::InterKind::Switch;
  const auto topo = topology::build_cluster(spec).topology;
  const auto costs = sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Single);
  const workloads::ModelSpec m = serving_job(1, 1, 1).model;
  const double tokens = 1000;
  // Every layer's K and V of every token: 1000 x 8 layers x 2 x 2048 x 2 B = 65.5 MB.
  const double total = tokens * 8 * 2 * 2048 * 2;
  const auto send = [&](double bytes, int from, int to) {
    return costs.transfer(workloads::SendOp{0, Bytes(bytes), {0, 0, workloads::Pass::Forward}}, from, to).value();
  };
  const std::vector<int> node0 = {0, 1, 2, 3}, node1 = {4, 5, 6, 7};
  // TP 4 to TP 4 across the fabric: rank k sends its quarter to rank k; the ranks are alike, so one quarter's time.
  CHECK(sim::kv_transfer_time(m, workloads::Precision::Bf16, tokens, node0, node1, costs).value() ==
        doctest::Approx(send(total / 4, 0, 4)));
  // TP 2 to TP 4: each sender holds half the heads, which two receivers share: two quarters one after the other.
  const std::vector<int> two = {0, 1};
  CHECK(sim::kv_transfer_time(m, workloads::Precision::Bf16, tokens, two, node1, costs).value() ==
        doctest::Approx(send(total / 4, 0, 4) + send(total / 4, 0, 5)));
  // One GPU to one: the whole cache; an fp8 cache is half the bytes.
  CHECK(sim::kv_transfer_time(m, workloads::Precision::Bf16, tokens, std::vector<int>{0}, std::vector<int>{4}, costs).value() ==
        doctest::Approx(send(total, 0, 4)));
  CHECK(sim::kv_transfer_time(m, workloads::Precision::Fp8, tokens, std::vector<int>{0}, std::vector<int>{4}, costs).value() ==
        doctest::Approx(send(total / 2, 0, 4)));
  // Inside a node (NVSwitch) the same cache moves faster than across the fabric.
  CHECK(sim::kv_transfer_time(m, workloads::Precision::Bf16, tokens, std::vector<int>{0}, std::vector<int>{1}, costs) <
        sim::kv_transfer_time(m, workloads::Precision::Bf16, tokens, std::vector<int>{0}, std::vector<int>{4}, costs));
}
