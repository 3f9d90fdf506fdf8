// Layer-list workloads: ResNet-50's layers against the architecture (parameters, multiply-adds, shapes), a
// layer's kernels per pass, the data-parallel step's gradient buckets, and the plan checks.
#include <doctest/doctest.h>

#include <string>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/layer_list.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;

namespace {

Workload resnet_job(int dp, int micro_batch = 64) {
  Workload w;
  w.model = layer_list_preset("resnet50", 2.0);
  w.training = training_defaults(topology::Precision::Fp16);
  w.training->global_batch = micro_batch * dp;
  w.training->micro_batch = micro_batch;
  w.plan.dp = dp;
  check_plan(w, dp);
  return w;
}

}  // namespace

TEST_CASE("resnet50: torchvision's 25,557,032 parameters and 4.09 G multiply-adds an image, 53 convolutions") {
  const auto layers = resnet50(2.0);
  double params = 0;
  int convs = 0, norms = 0;
  for (const LayerSpec& l : layers) {
    params += l.params;
    convs += l.kind == LayerKind::Conv ? 1 : 0;
    norms += l.kind == LayerKind::BatchNorm ? 1 : 0;
  }
  CHECK(params == 25'557'032.0);
  CHECK(convs == 53);
  CHECK(norms == 53);
  CHECK(layer_list_flops(layers) / 2 == doctest::Approx(4.09e9).epsilon(0.005));   // multiply-adds
  CHECK(layers.front().name == "conv1");
  CHECK(layers.front().gemm_m == 112.0 * 112);   // 7x7 stride 2 on 224: 112 x 112 outputs
  CHECK(layers.front().gemm_k == 3.0 * 49);
  CHECK(layers.back().name == "fc");
  CHECK(layers.back().params == 2048.0 * 1000 + 1000);
  // Activations kept for the backward scale with the element: fp32 twice fp16's.
  CHECK(layer_list_activations(resnet50(4.0)) == doctest::Approx(2 * layer_list_activations(layers)));
}

TEST_CASE("layer lists: a conv's backward is twice its forward, with the data- and weight-gradient GEMMs") {
  const LayerSpec conv = resnet50(2.0).front();
  const Kernel f = layer_list_kernel(conv, Pass::Forward, 32);
  const Kernel b = layer_list_kernel(conv, Pass::Backward, 32);
  CHECK(f.kind == KernelClass::Conv);
  CHECK(f.flops.value() == conv.flops * 32);
  CHECK(b.flops.value() == 2 * f.flops.value());
  CHECK(f.gemm->m == 32 * conv.gemm_m);
  CHECK(b.gemm->n == conv.gemm_k);         // the data gradient: m x k over n
  CHECK(b.weight_gemm->k == 32 * conv.gemm_m);   // the weight gradient reduces over the images' positions
  LayerSpec bare{"x", LayerKind::Elementwise, 0, 1e6, 0, 0, 0, 0, 0};
  CHECK(layer_list_kernel(bare, Pass::Backward, 2).bytes.value() == 4e6);
  CHECK_FALSE(layer_list_kernel(bare, Pass::Forward, 2).gemm.has_value());
}

TEST_CASE("layer lists: a DDP step, each layer forward then backward, 25 MB buckets all-reduced, one optimizer step") {
  Workload w = resnet_job(8);
  w.training->dp_bucket = Bytes(25e6);
  const StepGraph g = generate_step(w, topology::find_gpu("a100-sxm4-80gb"));
  REQUIRE(g.classes.size() == 1);
  int forward = 0, backward = 0, reductions = 0;
  double reduced = 0;
  for (const Op& op : g.classes[0].ops) {
    if (const auto* c = std::get_if<ComputeOp>(&op.body); c && c->scope == Scope::Layer)
      (c->pass == Pass::Forward ? forward : backward) += 1;
    if (const auto* k = std::get_if<CollectiveOp>(&op.body)) {
      ++reductions;
      reduced += k->bytes.value();
      CHECK(k->kind == CollectiveKind::AllReduce);
      CHECK(k->group == Group::Dp);
    }
  }
  const auto n = static_cast<int>(w.model.layer_list.size());
  CHECK(forward == n);
  CHECK(backward == n);
  CHECK(reduced == doctest::Approx(25'557'032.0 * 4));   // every fp32 gradient once
  CHECK(reductions == 4);   // 102 MB in buckets of at least 25 MB each, the last what is left
  CHECK(model_flops(g).value() == doctest::Approx(3 * 8 * 64 * layer_list_flops(w.model.layer_list)));
  const MemoryPlan plan = plan_memory(w, topology::find_gpu("a100-sxm4-80gb"));
  CHECK(plan.parts.activations.value() == doctest::Approx(64 * layer_list_activations(w.model.layer_list)));
  CHECK(plan.parts.params.value() == doctest::Approx(25'557'032.0 * 2));
}

TEST_CASE("layer lists train data-parallel only: another degree or sharding names its key") {
  Workload w = resnet_job(8);
  w.plan.tp = 2;
  w.plan.dp = 4;
  CHECK_THROWS_WITH(check_plan(w, 8), "parallelism.tp: splits a transformer; a layer-list model (model.kind: layers) "
                                      "trains data-parallel only: '2' (allowed: 1)");
  w.plan.tp = 1;
  w.plan.dp = 8;
  w.plan.zero = 1;
  CHECK_THROWS_WITH(check_plan(w, 8), "parallelism.zero: shards over data parallelism; a layer-list model trains "
                                      "with DDP: '1' (allowed: 0)");
}
