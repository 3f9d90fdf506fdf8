// Kernel lists, continued from kernels_test.cpp: the per-step kernels (embedding, loss, optimizer, gradient norm),
// the bytes and precisions of each kernel, fused attention, fp8's casts, and the weight-gradient GEMM's shape.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "workloads/kernels.hpp"
#include "workloads/kernel_cases.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::workloads;
using namespace dtsim::workloads::kernel_cases;

}  // namespace

TEST_CASE("kernels: embedding is a memory-bound lookup, cross-entropy streams the logits in fp32") {
  const ModelSpec m = llama_like();   // rotary: no position table
  const double out = 4096 * 8192.0;
  const Kernel emb = embedding_kernels(m, training(), {8, false}, 1, Pass::Forward).at(0);
  CHECK(emb.kind == KernelClass::Embedding);
  CHECK(emb.flops.value() == 0);
  CHECK(emb.bytes.value() == out / 8 * 2 + out * 2);   // this shard's rows, the whole output
  ModelSpec learned = m;
  learned.positions = Positions::Learned;
  CHECK(embedding_kernels(learned, training(), {8, false}, 1, Pass::Forward).at(0).bytes > emb.bytes);
  const Kernel ce = find(logits_kernels(m, training(), {8, false}, 1, Pass::Forward), KernelClass::CrossEntropy);
  CHECK(ce.flops.value() == 0);
  CHECK(ce.bytes.value() == 4096 * 32000 / 8.0 * (2 + 9 * 4));
}

TEST_CASE("kernels: the optimizer reads gradients and states and writes weights, per parameter") {
  // AdamW, mixed precision: fp32 gradient 4 + fp32 master read/write 8 + two fp32 moments read/write 16 + bf16
  // weight 2 = 30 bytes per parameter.
  const Kernel adam = optimizer_kernel(training_defaults(Precision::Bf16), 1e9);
  CHECK(adam.kind == KernelClass::OptimizerUpdate);
  CHECK(adam.flops.value() == 0);
  CHECK(adam.bytes.value() == 30e9);
  // fp32 training keeps no master copy: gradient 4 + weight read 4 + moments 16 + weight write 4.
  CHECK(optimizer_kernel(training_defaults(Precision::Fp32), 1e9).bytes.value() == 28e9);
  TrainingSpec sgd = training_defaults(Precision::Bf16);
  sgd.optimizer = Optimizer::Sgd;
  CHECK(optimizer_kernel(sgd, 1e9).bytes.value() == 22e9);   // one fp32 momentum: 4 + 8 + 8 + 2
  CHECK(optimizer_kernel(sgd, 0).bytes.value() == 0);
}

TEST_CASE("kernels: every step reads the gradients for their norm and zeroes them, and fp16 unscales them too") {
  // bf16, fp32 gradients: the norm reads 4 B and the zeroing writes 4 B per parameter, no loss scaling.
  const auto bf16 = step_overhead_kernels(training_defaults(Precision::Bf16), 1e9);
  REQUIRE(bf16.size() == 2);
  for (const Kernel& k : bf16) {
    CHECK(k.kind == KernelClass::OptimizerUpdate);
    CHECK(k.flops.value() == 0);
    CHECK(k.bytes.value() == 4e9);
  }
  // fp16 with fp16 gradients: the same, and the unscale-and-check reads and writes each gradient (2 + 2 B).
  TrainingSpec fp16 = training_defaults(Precision::Fp16);
  fp16.grad_dtype = Precision::Fp16;
  const auto scaled = step_overhead_kernels(fp16, 1e9);
  REQUIRE(scaled.size() == 3);
  CHECK(scaled[0].bytes.value() == 2e9);
  CHECK(scaled[1].bytes.value() == 4e9);
  CHECK(scaled[2].bytes.value() == 2e9);
}

TEST_CASE("kernels: precision sets the bytes of activations, not the FLOPs") {
  const ModelSpec m = gpt3_like();
  TrainingSpec fp32 = training_defaults(Precision::Fp32);
  const auto a = layer_kernels(m, training(), {8, false}, 1, Pass::Forward);
  const auto b = layer_kernels(m, fp32, {8, false}, 1, Pass::Forward);
  CHECK(total_flops(a) == total_flops(b));
  CHECK(find(b, KernelClass::Softmax).bytes.value() == 2 * find(a, KernelClass::Softmax).bytes.value());
  CHECK(total_bytes(b).value() > 1.9 * total_bytes(a).value());
}

TEST_CASE("kernels: fused attention is one kernel counting the unfused pair's FLOPs, and fewer bytes") {
  const ModelSpec m = gpt3_like();
  TrainingSpec flash = training();
  flash.attention = AttentionKernel::Flash;
  const Sharding s{8, false};
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    CAPTURE(to_string(p));
    const auto unfused = layer_kernels(m, training(), s, 2, p);
    const auto fused = layer_kernels(m, flash, s, 2, p);
    CHECK(total_flops(fused) == total_flops(unfused));
    CHECK(fused.size() == unfused.size() - 3);   // scores, softmax, dropout and context become one kernel
    const Kernel& k = find(fused, KernelClass::FlashAttention);
    const double bhs = 2.0 * 96 / 8 * 2048;      // b x local heads x s
    CHECK(k.flops.value() == doctest::Approx(4.0 * bhs * 2048 * 128 * (p == Pass::Backward ? 2 : 1)).epsilon(kExact));
    REQUIRE(k.attention);
    CHECK(k.attention->seq == 2048);
    CHECK(k.attention->head_dim == 128);
    CHECK(k.attention->causal);
    // No b x heads x s x s tensor: Q, K, V and the output (forward; backward also their gradients and the output's)
    // and the fp32 row statistics.
    const double q = 2 * 2048 * 96.0 / 8 * 128;   // elements of Q on this GPU (MHA: K and V the same)
    const double want = p == Pass::Forward ? 4 * q * 2 + bhs * 4 : 8 * q * 2 + 2 * bhs * 4;
    CHECK(k.bytes.value() == doctest::Approx(want).epsilon(kExact));
    for (const KernelClass gone : {KernelClass::AttnScores, KernelClass::Softmax, KernelClass::AttnDropout})
      CHECK(std::ranges::find(fused, gone, &Kernel::kind) == fused.end());
  }
  // Selective recompute repeats the fused kernel; BERT attends both ways.
  flash.recompute = Recompute::Selective;
  CHECK(kinds_of(layer_kernels(m, flash, s, 1, Pass::Recompute)) == std::vector{KernelClass::FlashAttention});
  CHECK_FALSE(layer_kernels(find_model("bert-large"), flash, {1, false}, 1, Pass::Forward).at(2).attention->causal);
}

TEST_CASE("kernels: fp8 training runs the four linear GEMMs in fp8 behind a cast, the attention and logits in bf16") {
  const ModelSpec m = llama_like();
  TrainingSpec t = training();
  t.fp8 = Fp8::Hybrid;
  const auto fwd = layer_kernels(m, t, {8, false}, 1, Pass::Forward);
  int fp8 = 0, casts = 0;
  for (const Kernel& k : fwd) {
    if (k.precision == Precision::Fp8) ++fp8;
    if (k.kind == KernelClass::Fp8Cast) ++casts;
  }
  CHECK(fp8 == 4);
  CHECK(casts == 4);
  CHECK_FALSE(find(fwd, KernelClass::AttnScores).precision.has_value());
  // Forward, the projection's input is cast on its own (read bf16, write fp8 and its transpose); Q K V's, MLP up's
  // and MLP down's casts are fused into the norm and the activation before them.
  const Kernel& qkv_cast = fwd.at(1);
  CHECK(qkv_cast.kind == KernelClass::Fp8Cast);
  CHECK(qkv_cast.bytes.value() == 0);
  const auto proj = std::ranges::find(fwd, KernelClass::ProjGemm, &Kernel::kind);
  CHECK((proj - 1)->kind == KernelClass::Fp8Cast);
  CHECK((proj - 1)->bytes.value() == 4096 * 8192.0 / 8 * (2 + 2));
  // Backward, every incoming gradient: Q K V's is tokens x (h + 2 kv) / t.
  const auto bwd = layer_kernels(m, t, {8, false}, 1, Pass::Backward);
  const auto qkv = std::ranges::find(bwd, KernelClass::QkvGemm, &Kernel::kind);
  CHECK((qkv - 1)->kind == KernelClass::Fp8Cast);   // before the GEMM that reads it
  CHECK((qkv - 1)->bytes.value() == 4096 * (8192.0 + 2 * 1024) / 8 * (2 + 2));
  CHECK(total_flops(fwd) == total_flops(layer_kernels(m, training(), {8, false}, 1, Pass::Forward)));
  for (const Kernel& k : logits_kernels(m, t, {8, false}, 1, Pass::Forward)) CHECK_FALSE(k.precision.has_value());
  // Each weight is quantised once per step, with the optimizer's pass: 4 more bytes per parameter in bf16.
  CHECK(optimizer_kernel(t, 1e9).bytes.value() == optimizer_kernel(training(), 1e9).bytes.value() + 4e9);
  // One fp8 byte of each cast's write is the transpose, which Blackwell's any-layout fp8 GEMMs do not need.
  CHECK((proj - 1)->transposed.value() == 4096 * 8192.0 / 8);
  CHECK((qkv - 1)->transposed.value() == 4096 * (8192.0 + 2 * 1024) / 8);
  CHECK(optimizer_kernel(t, 1e9).transposed.value() == 1e9);
  for (const Kernel& k : fwd)
    if (k.kind != KernelClass::Fp8Cast) CHECK(k.transposed.value() == 0);
}

TEST_CASE("kernels: the block-scaled recipes run the same GEMMs at their own precision, the casts writing the scales") {
  CHECK(bytes_per_element(Precision::Mxfp4) == 0.5 + 1.0 / 32);   // OCP MX: one E8M0 byte per 32 E2M1 elements
  const ModelSpec m = llama_like();
  for (const auto& [recipe, precision, element] :
       {std::tuple{Fp8::Mxfp8, Precision::Mxfp8, 1.0 + 1.0 / 32}, std::tuple{Fp8::Nvfp4, Precision::Fp4, 0.5 + 1.0 / 16}}) {
    CAPTURE(to_string(recipe));
    TrainingSpec t = training();
    t.fp8 = recipe;
    CHECK(bytes_per_element(precision) == element);
    const auto fwd = layer_kernels(m, t, {8, false}, 1, Pass::Forward);
    int low = 0;
    for (const Kernel& k : fwd) low += k.precision == precision ? 1 : 0;
    CHECK(low == 4);
    const auto proj = std::ranges::find(fwd, KernelClass::ProjGemm, &Kernel::kind);
    CHECK((proj - 1)->bytes.value() == doctest::Approx(4096 * 8192.0 / 8 * (2 + 2 * element)));
    CHECK((proj - 1)->transposed.value() == 0);   // the second copy has its own block scales: always written
    CHECK(optimizer_kernel(t, 1e9).transposed.value() == 0);
    CHECK(optimizer_kernel(t, 1e9).bytes.value() ==
          doctest::Approx(optimizer_kernel(training(), 1e9).bytes.value() + 1e9 * (2 + 2 * element)));
  }
}

TEST_CASE("kernels: the fused loss, Megatron-Core's native over fp32 logits or Transformer Engine's over 16-bit ones") {
  const ModelSpec m = llama_like();
  TrainingSpec t = training();
  const double n = 4096 * 32000 / 8.0;
  const auto bytes = [&](Pass pass) {
    return find(logits_kernels(m, t, {8, false}, 1, pass), KernelClass::CrossEntropy).bytes.value();
  };
  const double unfused_forward = bytes(Pass::Forward), unfused_backward = bytes(Pass::Backward);
  CHECK(unfused_forward == n * (2 + 9 * 4));
  CHECK(unfused_backward == n * (2 + 3 * 4));
  t.cross_entropy_fusion = true;   // native by default: cast and max, subtract-exp-sum, normalise; scale and cast
  CHECK(bytes(Pass::Forward) == n * (2 + 5 * 4));
  CHECK(bytes(Pass::Backward) == n * (2 + 2 * 4));
  t.cross_entropy_fusion_impl = LossFusion::Te;   // two reads and a write of the bf16 logits; a read and a write
  CHECK(bytes(Pass::Forward) == n * 2 * 3);
  CHECK(bytes(Pass::Backward) == n * 2 * 2);
  t.cross_entropy_fusion = false;   // the implementation matters only to a fused loss
  CHECK(bytes(Pass::Forward) == unfused_forward);
}

TEST_CASE("kernels: a weighted backward GEMM carries its weight-gradient shape, tokens as the inner dimension") {
  const auto bwd = layer_kernels(gpt3_like(), training(), {8, false}, 1, Pass::Backward);
  const Kernel& up = find(bwd, KernelClass::MlpUpGemm);
  REQUIRE(up.gemm);
  REQUIRE(up.weight_gemm);
  CHECK(up.gemm->m == 2048);               // data gradient: tokens x h over ffn / t
  CHECK(up.weight_gemm->m == 12288);       // weight gradient: h x ffn / t over the tokens
  CHECK(up.weight_gemm->n == 49152 / 8);
  CHECK(up.weight_gemm->k == 2048);
  CHECK_FALSE(find(bwd, KernelClass::AttnScores).weight_gemm.has_value());
}
