// A tensor-parallel decode step played by the SimGrid engine (the default engine of `run`) against its closed form:
// the step is one chain, so its time is its kernels' time plus two all-reduces per layer and the logits gather,
// each as the analytic costs time it (sim/analytic/analytic_costs.hpp: the lowered collective, contention-free).
#include "sim/analytic/analytic_costs.hpp"
#include "simgrid_support.hpp"
#include "workloads/serving.hpp"

using namespace simgrid_support;

namespace {

// The test GPT job serving one decode step of `batch` sequences at `tp`.
workloads::Workload decode_job(int tp, int batch) {
  workloads::Workload w = gpt_job(tp, 1, 1, 1);
  w.training.reset();
  workloads::InferenceSpec inf;
  inf.batch = batch;
  inf.context = 2048;
  inf.prompt_tokens = 1920;
  inf.output_tokens = 128;
  w.inference = inf;
  return w;
}

}  // namespace

TEST_CASE("simgrid serving: a TP decode step is its kernels plus 2 all-reduces per layer and the gather, in closed form") {
  const auto& a100 = topology::find_gpu("a100-sxm4-80gb");
  for (const int tp : {2, 8}) {
    for (const int batch : {1, 64}) {
      CAPTURE(tp);
      CAPTURE(batch);
      const auto topo = built(IntraKind::NvSwitch, tp);
      const workloads::Workload w = decode_job(tp, batch);
      const auto g = workloads::generate_serving_step(w, a100, workloads::serving_pass(*w.inference, workloads::ServingPhase::Decode));
      // Closed form: every compute op's duration, each all-reduce of `batch` rows of the hidden state in 16 bits
      // and the gather of the vocabulary slices, as the analytic costs time them.
      const auto costs = sim::analytic_costs(topo, sim::Algorithm::Auto, false, topology::Routing::Single);
      std::vector<int> group(static_cast<std::size_t>(tp));
      for (int r = 0; r < tp; ++r) group[static_cast<std::size_t>(r)] = r;
      double kernels = 0, all_reduces = 0, gathers = 0;
      int count = 0;
      for (const auto& op : g.classes.front().ops) {
        if (const auto* c = std::get_if<workloads::ComputeOp>(&op.body)) kernels += c->duration.value();
        if (const auto* c = std::get_if<workloads::CollectiveOp>(&op.body)) {
          const double t = costs.collective(*c, group).value();
          if (c->kind == CollectiveKind::AllReduce) {
            CHECK(c->bytes.value() == doctest::Approx(batch * 2048.0 * 2));
            all_reduces += t;
            ++count;
          } else {
            gathers += t;
          }
        }
      }
      CHECK(count == 2 * 8);
      const double simgrid = isolated([&] {
        sim::SimgridOptions options;
        return std::vector<double>{sim::play_simgrid(g, topo, options).step_time.value()};
      }).front();
      CHECK(simgrid == near(kernels + all_reduces + gathers));
      CHECK(all_reduces > 0.05 * simgrid);   // small messages, latency-bound: a visible share of the step
    }
  }
}
