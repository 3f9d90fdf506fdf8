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
    const workloads::Workload w = serving_job(c.tp, c.pp, c.dp);
    const auto costs = [&] { return sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Single); };
    sim::ServingIterations timer(w, test::a100(), costs());
    for (std::size_t n = 1; n <= kIterationMix.size(); ++n) {
      CAPTURE(n);
      const std::span<const ServingPass> passes(kIterationMix.data(), n);
      const double played =
          sim::play_analytic(workloads::generate_serving_step(w, test::a100(), passes), costs()).step_time.value();
      CHECK(timer(passes).value() == doctest::Approx(played).epsilon(1e-12));
      CHECK(timer(passes).value() == doctest::Approx(played).epsilon(1e-12));   // memoised: the same again
    }
  }
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
