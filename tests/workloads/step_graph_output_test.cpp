// The step graph at kernel granularity (the same work as one op per layer pass, the TP all-reduces after their
// GEMMs) and what it prints: the summary and the DOT dump.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/gpt_job.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::a100;
using dtsim::test::gpt_job;

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
