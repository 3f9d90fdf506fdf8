#include <doctest/doctest.h>

#include "topology/error.hpp"
#include "workloads/plan.hpp"

using namespace dtsim::workloads;

namespace {

ModelSpec gpt(int layers = 24) {
  ModelSpec m;
  m.name = "test";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 4096;
  m.vocab = 51200;
  m.seq_length = 2048;
  return m;
}

Workload job(int tp, int pp, int dp, int global_batch = 64, int micro_batch = 1) {
  Workload w;
  w.model = gpt();
  w.training = training_defaults(Precision::Bf16);
  w.training->global_batch = global_batch;
  w.training->micro_batch = micro_batch;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  return w;
}

// The error names the scenario key and says what is allowed.
void expect_error(const Workload& w, int gpus, const char* key) {
  try {
    check_plan(w, gpus);
    FAIL("check_plan accepted a plan that breaks a rule for ", key);
  } catch (const dtsim::InputError& e) {
    CHECK(e.key() == key);
    CHECK_FALSE(e.allowed().empty());
  }
}

}  // namespace

TEST_CASE("placement puts TP innermost, then DP, then PP by default") {
  ParallelPlan p;
  p.tp = 8;
  p.dp = 2;
  p.pp = 4;
  const Placement place(p);
  CHECK(place.ranks() == 64);
  CHECK(place.coord(5) == RankCoord{5, 0, 0});
  CHECK(place.coord(8) == RankCoord{0, 1, 0});
  CHECK(place.coord(16) == RankCoord{0, 0, 1});
  CHECK(place.group(5, Axis::Tp) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(place.group(5, Axis::Dp) == std::vector<int>{5, 13});
  CHECK(place.group(5, Axis::Pp) == std::vector<int>{5, 21, 37, 53});
  for (int r = 0; r < place.ranks(); ++r) CHECK(place.rank(place.coord(r)) == r);
}

TEST_CASE("placement follows any order, innermost first") {
  ParallelPlan p;
  p.tp = 2;
  p.dp = 3;
  p.pp = 4;
  p.order = {Axis::Pp, Axis::Tp, Axis::Dp};
  const Placement place(p);
  CHECK(place.coord(1) == RankCoord{0, 0, 1});
  CHECK(place.coord(4) == RankCoord{1, 0, 0});
  CHECK(place.coord(8) == RankCoord{0, 1, 0});
  CHECK(place.group(0, Axis::Tp) == std::vector<int>{0, 4});
  for (int r = 0; r < place.ranks(); ++r) CHECK(place.rank(place.coord(r)) == r);
}

TEST_CASE("layers split as evenly as possible, the first and last stages taking fewer") {
  ParallelPlan p;
  p.pp = 4;
  CHECK(stage_layers(p, 32) == std::vector<int>{8, 8, 8, 8});
  CHECK(stage_layers(p, 30) == std::vector<int>{7, 8, 8, 7});
  CHECK(stage_layers(p, 5) == std::vector<int>{1, 2, 1, 1});
  p.vpp = 2;   // eight virtual stages
  CHECK(stage_layers(p, 30) == std::vector<int>{3, 4, 4, 4, 4, 4, 4, 3});
  p.layers_per_stage = {2, 4, 4, 4, 4, 4, 4, 4};
  CHECK(stage_layers(p, 30) == p.layers_per_stage);
}

TEST_CASE("a consistent plan passes its checks") {
  CHECK_NOTHROW(check_plan(job(8, 1, 1), 8));
  CHECK_NOTHROW(check_plan(job(2, 4, 2), 16));
  auto w = job(2, 4, 2, 64, 2);
  w.plan.vpp = 2;
  CHECK_NOTHROW(check_plan(w, 16));
  CHECK(micro_batches(w.plan, *w.training) == 16);
}

TEST_CASE("plan checks name the key that breaks each rule") {
  expect_error(job(8, 1, 2), 8, "parallelism.dp");                       // product != GPUs
  expect_error(job(3, 1, 1), 3, "parallelism.tp");                       // 16 heads
  auto gqa = job(4, 1, 1);
  gqa.model.kv_heads = 2;
  expect_error(gqa, 4, "parallelism.tp");                                // kv_heads 2
  expect_error(job(1, 32, 1), 32, "parallelism.pp");                     // 32 stages > 24 layers
  auto list = job(1, 4, 1);
  list.plan.layers_per_stage = {6, 6, 6};
  expect_error(list, 4, "parallelism.layers_per_stage");                 // wrong length
  list.plan.layers_per_stage = {6, 6, 6, 5};
  expect_error(list, 4, "parallelism.layers_per_stage");                 // sums to 23
  expect_error(job(1, 1, 8, 64, 3), 8, "training.micro_batch");          // 3 x 8 does not divide 64
  auto gpipe = job(1, 4, 1);
  gpipe.plan.vpp = 2;
  gpipe.plan.schedule = Schedule::Gpipe;
  expect_error(gpipe, 4, "parallelism.vpp");
  auto odd = job(1, 4, 1, 6);
  odd.plan.vpp = 2;
  expect_error(odd, 4, "parallelism.vpp");                               // 6 micro-batches, pp 4
  auto sp = job(1, 1, 8);
  sp.training->sequence_parallel = true;
  expect_error(sp, 8, "training.sequence_parallel");
  auto zero = job(1, 2, 4);
  zero.plan.zero = 3;
  expect_error(zero, 8, "parallelism.zero");
}
