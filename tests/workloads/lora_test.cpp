// LoRA (training.lora): frozen weights run their data gradients only, the adapters train beside the targeted
// linear layers, and only the adapters' gradients are reduced, updated and kept; under tensor parallelism the
// adapters add their own collectives.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "topology/catalog.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/gpt_job.hpp"
#include "workloads/kernels.hpp"
#include "workloads/lora.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::tally_collectives;

namespace {

// Llama-2-7B cut to 4 layers on `dp` x `tp` H100s, with LoRA of `rank` on `targets` (rank 0: every weight trains).
Workload lora_job(int rank, unsigned targets, int dp, int tp = 1) {
  Workload w = dtsim::test::preset_job("llama2-7b", 4);
  w.training->global_batch = 2 * dp;
  w.training->attention = AttentionKernel::Flash;
  w.training->lora = {rank, targets};
  w.plan.dp = dp;
  w.plan.tp = tp;
  check_plan(w, dp * tp);
  return w;
}

constexpr unsigned kAllLoraTargets = bit(LoraTarget::Qkv) | bit(LoraTarget::Proj) | bit(LoraTarget::Fc1) | bit(LoraTarget::Fc2);

int lora_count(const std::vector<Kernel>& ks, KernelClass kind) {
  return static_cast<int>(std::ranges::count_if(ks, [&](const Kernel& k) { return k.kind == kind; }));
}

}  // namespace

TEST_CASE("lora: a frozen layer's backward is its data gradient alone, the adapters run and train beside it") {
  const Workload full = lora_job(0, 0, 1);
  const Workload lora = lora_job(16, kAllLoraTargets, 1);
  const auto& m = full.model;
  const auto fwd = layer_kernels(m, *lora.training, {1, false}, 1, Pass::Forward, false);
  const auto bwd = layer_kernels(m, *lora.training, {1, false}, 1, Pass::Backward, false);
  const auto full_bwd = layer_kernels(m, *full.training, {1, false}, 1, Pass::Backward, false);
  for (const KernelClass k : {KernelClass::LoraColumnA, KernelClass::LoraColumnB})
    CHECK(lora_count(fwd, k) == 2);   // qkv and fc1
  for (const KernelClass k : {KernelClass::LoraRowA, KernelClass::LoraRowB}) CHECK(lora_count(fwd, k) == 2);   // proj, fc2
  for (const KernelClass k : {KernelClass::QkvGemm, KernelClass::ProjGemm, KernelClass::MlpUpGemm, KernelClass::MlpDownGemm}) {
    const auto frozen = std::ranges::find_if(bwd, [&](const Kernel& x) { return x.kind == k; });
    const auto trained = std::ranges::find_if(full_bwd, [&](const Kernel& x) { return x.kind == k; });
    REQUIRE(frozen != bwd.end());
    REQUIRE(trained != full_bwd.end());
    CHECK_FALSE(frozen->weight_gemm.has_value());
    CHECK(trained->weight_gemm.has_value());
    CHECK(frozen->flops.value() == doctest::Approx(trained->flops.value() / 2));
  }
  // The adapters themselves train: their backward has a weight gradient.
  for (const Kernel& k : bwd)
    if (k.kind == KernelClass::LoraColumnA || k.kind == KernelClass::LoraRowB) CHECK(k.weight_gemm.has_value());
  // Q K V alone: one adapter.
  const auto qkv = layer_kernels(m, TrainingSpec{*lora_job(16, bit(LoraTarget::Qkv), 1).training}, {1, false}, 1,
                                 Pass::Forward, false);
  CHECK(lora_count(qkv, KernelClass::LoraColumnA) == 1);
  CHECK(lora_count(qkv, KernelClass::LoraRowA) == 0);
  // The frozen embedding scatters no gradient; the frozen head computes the logits' data gradient only.
  CHECK(embedding_kernels(m, *lora.training, {1, false}, 1, Pass::Backward).empty());
  CHECK_FALSE(embedding_kernels(m, *full.training, {1, false}, 1, Pass::Backward).empty());
  const auto head = logits_kernels(m, *lora.training, {1, false}, 1, Pass::Backward);
  CHECK_FALSE(std::ranges::find_if(head, [](const Kernel& k) { return k.kind == KernelClass::Logits; })->weight_gemm.has_value());
}

TEST_CASE("lora: a step's model FLOPs are about two thirds of full training's (no weight gradients)") {
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  // 4 of 6 FLOPs per parameter and token; the attention core's backward still 2 of its 3, so at 4,096 tokens a
  // sequence the ratio is above 2/3, and at 256 close to it.
  for (const auto& [seq, low, high] : {std::tuple{4096, 0.69, 0.72}, std::tuple{256, 0.665, 0.675}}) {
    Workload full = lora_job(0, 0, 1);
    Workload lora = lora_job(32, bit(LoraTarget::Qkv), 1);
    full.model.seq_length = lora.model.seq_length = seq;
    const double ratio = model_flops(generate_step(lora, gpu)).value() / model_flops(generate_step(full, gpu)).value();
    CHECK(ratio > low);
    CHECK(ratio < high);
  }
}

TEST_CASE("lora: only the adapters' gradients are reduced, and only their states kept") {
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const Workload full = lora_job(0, 0, 8);
  const Workload lora = lora_job(16, kAllLoraTargets, 8);
  const auto n = tally_collectives(generate_step(lora, gpu).classes[0]);
  const auto f = tally_collectives(generate_step(full, gpu).classes[0]);
  const double adapters = 4 * lora_layer_parameters(lora.model, lora.training->lora);
  // rank x (in + out): qkv 4096 + 3 x 4096, proj 2 x 4096, fc1 4096 + 2 x 11008, fc2 11008 + 4096.
  CHECK(lora_layer_parameters(lora.model, lora.training->lora) == 16.0 * (4 * 4096 + 2 * 4096 + (4096 + 22016) + (11008 + 4096)));
  const auto grads = std::pair{CollectiveKind::AllReduce, Group::Dp};   // zero 0
  REQUIRE(n.contains(grads));
  CHECK(n.at(grads).bytes == doctest::Approx(adapters * 4));   // fp32 gradients, once per step
  CHECK(f.at(grads).bytes > 100 * n.at(grads).bytes);
  const MemoryPlan plan = plan_memory(lora, gpu);
  const MemoryPlan full_plan = plan_memory(full, gpu);
  CHECK(plan.parts.grads.value() == doctest::Approx(adapters * 4));
  CHECK(plan.parts.optimizer.value() == doctest::Approx(adapters * 12));   // fp32 master + 2 moments
  CHECK(plan.parts.params.value() == doctest::Approx(parameter_count(lora.model) * 2 + adapters * 2));
  CHECK(full_plan.parts.grads.value() > 100 * plan.parts.grads.value());
}

TEST_CASE("lora: under tensor parallelism the adapters' collectives run beside the layers'") {
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const auto n = tally_collectives(generate_step(lora_job(16, kAllLoraTargets, 1, 2), gpu).classes[0]);
  const auto f = tally_collectives(generate_step(lora_job(0, 0, 1, 2), gpu).classes[0]);
  // Per layer and micro-batch, forward: a column adapter's A gathers its rank-wide output (2), a row adapter's A
  // all-reduces it (2) and B gathers its h-wide output (2); backward: each B all-reduces its rank-wide input's
  // gradient (4), each column A its input's (2). 4 layers x 2 micro-batches.
  const int passes = 4 * 2;
  const auto of = [](const auto& tally, CollectiveKind k) {
    const auto it = tally.find({k, Group::Tp});
    return it == tally.end() ? 0 : it->second.count;
  };
  CHECK(of(n, CollectiveKind::AllGather) - of(f, CollectiveKind::AllGather) == 4 * passes);
  CHECK(of(n, CollectiveKind::AllReduce) - of(f, CollectiveKind::AllReduce) == 8 * passes);
}

TEST_CASE("lora: the plan checks name the key and what is allowed") {
  Workload moe = dtsim::test::preset_job("mixtral-8x7b", 2);
  moe.training->global_batch = 8;
  moe.training->lora = {16, kAllLoraTargets};
  moe.plan.dp = 8;
  CHECK(dtsim::test::plan_error(moe, 8).find("training.lora") != std::string::npos);
  Workload zero3 = lora_job(16, kAllLoraTargets, 8);
  zero3.plan.zero = 3;
  CHECK(dtsim::test::plan_error(zero3, 8).find("zero 3 or fsdp") != std::string::npos);
  Workload wide = lora_job(16, kAllLoraTargets, 8);
  wide.training->lora.rank = 5000;
  CHECK(dtsim::test::plan_error(wide, 8).find("above model.hidden 4096") != std::string::npos);
}
