// What training.framework: torchtitan brings (issue 22): FlashAttention-2 as PyTorch SDPA runs it
// (training.attention: flash2, its own measured rates) and torchtitan's per-op selective checkpointing
// (training.recompute: op, every second matmul of a Llama block rerun in the backward).
#include <doctest/doctest.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/kernels.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/plan.hpp"
#include "workloads/step_graph.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/kernel_cases.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::workloads::kernel_cases::kinds_of;

namespace {

TrainingSpec titan_training(Recompute r) {
  TrainingSpec t = training_defaults(topology::Precision::Bf16);
  apply_framework(t, Framework::Torchtitan);
  t.recompute = r;
  return t;
}

double flops_of(const std::vector<Kernel>& ks, KernelClass kind) {
  double sum = 0;
  for (const Kernel& k : ks)
    if (k.kind == kind) sum += k.flops.value();
  return sum;
}

// `model`'s block (Llama-3-8B's by default), two layers, one sequence a step on `tp` GPUs (sequence-parallel where
// tp > 1), torchtitan's defaults with recomputation `r` (unchecked: the caller checks or expects a refusal).
Workload titan_job(Recompute r, int tp = 1, std::string_view model = "llama3-8b") {
  Workload w;
  w.model = find_model(model);
  w.model.layers = 2;
  w.training = titan_training(r);
  w.training->global_batch = 1;
  w.training->sequence_parallel = tp > 1;
  w.plan.tp = tp;
  w.plan.dp = 1;
  return w;
}

// A causal attention kernel of `seq` tokens and head_dim 128, forward or backward, with `flash2` or not.
Kernel attention_kernel(double seq, Pass pass, bool flash2) {
  Kernel k;
  k.kind = KernelClass::FlashAttention;
  k.pass = pass;
  k.attention = AttentionShape{32, seq, 128, true, flash2};
  k.flops = FlopCount(4.0 * 32 * seq * seq * 128 * (pass == Pass::Backward ? 2 : 1));
  return k;
}

}  // namespace

TEST_CASE("torchtitan: its defaults are SDPA's FlashAttention-2 and CP by all-gather") {
  const TrainingSpec t = titan_training(Recompute::None);
  CHECK(t.framework == Framework::Torchtitan);
  CHECK(t.attention == AttentionKernel::Flash2);
  CHECK(fused(t.attention));
  CHECK(t.cp_comm == CpComm::AllGather);
  CHECK_FALSE(t.distributed_optimizer);
  CHECK_FALSE(t.cross_entropy_fusion);
  CHECK(to_string(Framework::Torchtitan) == "torchtitan");
  CHECK(parse_attention_kernel("flash2") == AttentionKernel::Flash2);
  CHECK(parse_recompute("op") == Recompute::Op);
  // Another framework set after it takes its own CP exchange back.
  TrainingSpec core = t;
  apply_framework(core, Framework::MegatronCore);
  CHECK(core.cp_comm == CpComm::P2p);
  CHECK(core.attention == AttentionKernel::Flash);
}

TEST_CASE("flash2: FlashAttention-2's H100 rate, slower than Hopper's best kernel, on Ampere the same kernel") {
  const auto& h100 = topology::find_gpu("h100-sxm5-80gb");
  const ArchitectureConstants& hopper = architecture("hopper");
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    CAPTURE(to_string(p));
    const Kernel best = attention_kernel(16384, p, false);
    const Kernel fa2 = attention_kernel(16384, p, true);
    const double t_best = kernel_time(best, h100, topology::Precision::Bf16).value();
    const double t_fa2 = kernel_time(fa2, h100, topology::Precision::Bf16).value();
    CHECK(t_fa2 > 1.5 * t_best);
    // At 16k: 0.337 of 989 TFLOP/s x the power limit x 16384 / (16384 + 532), FlashAttention-2's published 328
    // TFLOP/s within the fit's 2 %, before the power limit.
    const double executed = executed_flops(fa2).value();
    const double rate = executed / (t_fa2 - 4e-6) / hopper.power_limited;
    CHECK(rate == doctest::Approx(989e12 * 0.337 * 16384 / (16384 + 532)).epsilon(1e-6));
    CHECK(rate == doctest::Approx(328e12).epsilon(0.02));
  }
  // Shorter sequences and head_dim 64 cost as the figure shows them: 163 TFLOP/s at 512 (within 2 %).
  const Kernel short_seq = attention_kernel(512, Pass::Forward, true);
  const double t = kernel_time(short_seq, h100, topology::Precision::Bf16).value() - 4e-6;
  CHECK(executed_flops(short_seq).value() / t / hopper.power_limited == doctest::Approx(163e12).epsilon(0.02));
  const auto& a100 = topology::find_gpu("a100-sxm4-80gb");
  CHECK(kernel_time(attention_kernel(4096, Pass::Forward, true), a100, topology::Precision::Bf16).value() ==
        doctest::Approx(kernel_time(attention_kernel(4096, Pass::Forward, false), a100, topology::Precision::Bf16).value()));
}

TEST_CASE("recompute op: the backward reruns K's, the output's and the gate's second matmul, with the norms") {
  const ModelSpec m = find_model("llama3-8b");
  const Sharding s{};
  const auto forward = layer_kernels(m, titan_training(Recompute::None), s, 2, Pass::Forward);
  const auto rerun = layer_kernels(m, titan_training(Recompute::Op), s, 2, Pass::Recompute);
  CHECK(kinds_of(rerun) == std::vector<KernelClass>{KernelClass::LayerNorm, KernelClass::QkvGemm, KernelClass::ProjGemm,
                                                     KernelClass::Residual, KernelClass::LayerNorm,
                                                     KernelClass::MlpUpGemm, KernelClass::Activation});
  const double tokens = 2.0 * 8192;
  // wk: 4096 -> 8 kv heads x 128; wo: 4096 -> 4096; w3: 4096 -> 14336 (half the fused gate-and-up GEMM).
  CHECK(flops_of(rerun, KernelClass::QkvGemm) == doctest::Approx(2 * tokens * 1024 * 4096));
  CHECK(flops_of(rerun, KernelClass::ProjGemm) == doctest::Approx(flops_of(forward, KernelClass::ProjGemm)));
  CHECK(flops_of(rerun, KernelClass::MlpUpGemm) == doctest::Approx(flops_of(forward, KernelClass::MlpUpGemm) / 2));
  CHECK(flops_of(rerun, KernelClass::FlashAttention) == 0);   // SDPA's output is kept
  // Of the seven matmuls' forward FLOPs, K, the output and w3 are 36.5 %.
  double gemms = 0, rerun_gemms = 0;
  for (const auto& k : forward)
    if (is_gemm(k.kind)) gemms += k.flops.value();
  for (const auto& k : rerun)
    if (is_gemm(k.kind)) rerun_gemms += k.flops.value();
  CHECK(rerun_gemms / gemms == doctest::Approx((1024.0 + 4096 + 14336) / (4096 + 2 * 1024 + 4096 + 3 * 14336)));
}

TEST_CASE("recompute op: the memory plan keeps the input, Q, V, the attention output, w1's and w2's outputs") {
  const ModelSpec m = find_model("llama3-8b");
  const double sb = 8192.0 * 2, e = 2;
  const TrainingSpec op = titan_training(Recompute::Op);
  const double stats = sb * 32 * 4;   // the fused core's fp32 row statistics
  const double want = sb * e * (2 * 4096 + 4096 + 1024 + 4096 + 14336) + stats;
  CHECK(layer_activation_bytes(m, op, 1, 2).value() == doctest::Approx(want));
  const double none = layer_activation_bytes(m, titan_training(Recompute::None), 1, 2).value();
  const double full = layer_activation_bytes(m, titan_training(Recompute::Full), 1, 2).value();
  CHECK(op.recompute == Recompute::Op);
  CHECK(full < layer_activation_bytes(m, op, 1, 2).value());
  CHECK(layer_activation_bytes(m, op, 1, 2).value() < 0.5 * none);
  // Under TP 8 with sequence parallelism: the input / 8, w2's output whole on every rank (the row-parallel partial
  // sums over the whole sequence), the two reduce-scatters' kept outputs / 8, the rest split / 8.
  TrainingSpec sp = op;
  sp.sequence_parallel = true;
  const double sbh = sb * e * 4096;
  const double tp8 = sbh / 8 + sbh + 2 * sbh / 8 + (sb * e * (4096 + 1024 + 4096 + 14336) + stats) / 8;
  CHECK(layer_activation_bytes(m, sp, 8, 2).value() == doctest::Approx(tp8));
}

TEST_CASE("recompute op: the stage holds one layer's recomputed tensors again during its backward") {
  Workload w = titan_job(Recompute::None);
  check_plan(w, 1);
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const double none = plan_memory(w, gpu).parts.activations.value();
  w.training->recompute = Recompute::Op;
  const double op = plan_memory(w, gpu).parts.activations.value();
  // Two layers of op's tensors plus one layer's dropped ones held again: one layer less than none's two.
  const double none_layer = layer_activation_bytes(w.model, titan_training(Recompute::None), 1, 1).value();
  const double op_layer = layer_activation_bytes(w.model, titan_training(Recompute::Op), 1, 1).value();
  CHECK(none - op == doctest::Approx(none_layer - op_layer));
}

TEST_CASE("recompute op under TP: the rerun replays the all-gathers of K's and w3's inputs, not the reduce-scatter") {
  Workload w = titan_job(Recompute::None, 2);
  check_plan(w, 2);
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const auto none = dtsim::test::tally_collectives(generate_step(w, gpu).classes[0]);
  w.training->recompute = Recompute::Op;
  const auto op = dtsim::test::tally_collectives(generate_step(w, gpu).classes[0]);
  const auto count = [](const auto& n, CollectiveKind k) { return n.at({k, Group::Tp}).count; };
  CHECK(count(op, CollectiveKind::AllGather) - count(none, CollectiveKind::AllGather) == 2 * 2);   // 2 layers
  CHECK(count(op, CollectiveKind::ReduceScatter) == count(none, CollectiveKind::ReduceScatter));
}

TEST_CASE("recompute op is refused off a Llama block: biases, a plain MLP, unfused attention") {
  const Workload w = titan_job(Recompute::Op);
  CHECK_NOTHROW(check_plan(w, 1));
  Workload biased = w;
  biased.model.bias = true;
  CHECK_THROWS_WITH_AS(check_plan(biased, 1), doctest::Contains("biased linear layers"), InputError);
  Workload plain = w;
  plain.model.activation = Activation::Gelu;
  CHECK_THROWS_WITH_AS(check_plan(plain, 1), doctest::Contains("a plain MLP"), InputError);
  Workload unfused = w;
  unfused.training->attention = AttentionKernel::Unfused;
  CHECK_THROWS_WITH_AS(check_plan(unfused, 1), doctest::Contains("unfused attention"), InputError);
}

TEST_CASE("recompute op is refused on an MoE model or MLA, and flash2 runs context parallelism") {
  Workload w = titan_job(Recompute::Op, 1, "mixtral-8x7b");
  w.training->global_batch = 8;
  w.plan.dp = 8;
  w.plan.ep = 8;
  CHECK_THROWS_WITH_AS(check_plan(w, 8), doctest::Contains("the model has experts"), InputError);
  w.model = find_model("deepseek-v3");
  w.model.layers = 4;
  w.model.experts = 0;
  w.model.experts_per_token = 0;
  w.model.shared_experts = 0;
  w.plan.ep = 1;
  CHECK_THROWS_WITH_AS(check_plan(w, 8), doctest::Contains("multi-head latent attention"), InputError);
  Workload cp = titan_job(Recompute::Full);
  cp.training->global_batch = 4;
  cp.plan.dp = 4;
  cp.plan.cp = 2;
  CHECK_NOTHROW(check_plan(cp, 8));
  cp.training->attention = AttentionKernel::Unfused;
  CHECK_THROWS_WITH_AS(check_plan(cp, 8), doctest::Contains("flash or flash2"), InputError);
}
