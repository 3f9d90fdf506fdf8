// Serving passes: the kernels of a prefill and a decode step, the precision their GEMMs compute in, and the
// StepGraph the engines play (tensor-parallel all-reduces, pipeline sends, the logits gather).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <variant>

#include "topology/catalog.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"
#include "workloads/model_shapes.hpp"
#include "workloads/serving.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using topology::find_gpu;
using test_shapes::llama2_70b;

namespace {

InferenceSpec batch_of(int batch, Precision weights, int prompt = 1024, int output = 128) {
  InferenceSpec inf;
  inf.batch = batch;
  inf.prompt_tokens = prompt;
  inf.output_tokens = output;
  inf.context = prompt + output;
  inf.weights = weights;
  return inf;
}

Workload serving(const InferenceSpec& inf, int tp, int pp = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  return {llama2_70b(), std::nullopt, inf, p};
}

// What a pass's GEMMs read of their weights, `weight_bytes` per element: bytes less the activations in and out.
double gemm_weight_bytes(const std::vector<Kernel>& kernels) {
  double sum = 0;
  for (const Kernel& k : kernels)
    if (k.gemm && k.kind != KernelClass::QkvGemm) sum += k.bytes.value() - 2 * k.gemm->m * (k.gemm->k + k.gemm->n);
  return sum;
}

template <class T>
int count_ops(const RankClass& c) {
  int n = 0;
  for (const Op& op : c.ops) n += std::holds_alternative<T>(op.body) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("serving: a decode step's GEMMs read a layer's weights once and do 2 FLOPs per weight per sequence") {
  const ModelSpec m = llama2_70b();
  for (const int tp : {1, 8}) {
    CAPTURE(tp);
    const InferenceSpec inf = batch_of(16, Precision::Bf16);
    const auto kernels = serving_layer_kernels(m, inf, tp, serving_pass(inf, ServingPhase::Decode));
    double flops = 0, weights = 0;
    for (const Kernel& k : kernels)
      if (k.gemm) {
        flops += k.flops.value();
        weights += k.gemm->n * k.gemm->k;
      }
    // Q, K, V, output projection and the three SwiGLU matrices of one layer, split over tp.
    const double layer = 8192.0 * (8192 + 2 * 1024) + 8192.0 * 8192 + 3 * 8192.0 * 28672;
    CHECK(weights == doctest::Approx(layer / tp));
    CHECK(flops == doctest::Approx(2 * 16 * layer / tp));
    const double qkv = 8192.0 * (8192 + 2 * 1024);
    CHECK(gemm_weight_bytes(kernels) == doctest::Approx(2 * (layer - qkv) / tp));
    const InferenceSpec int4 = batch_of(16, Precision::Int4);
    CHECK(gemm_weight_bytes(serving_layer_kernels(m, int4, tp, serving_pass(int4, ServingPhase::Decode))) ==
          doctest::Approx(0.5 * (layer - qkv) / tp));
  }
}

TEST_CASE("serving: the decode pass attends over the mean KV length and prefill over the prompt, causally") {
  const InferenceSpec inf = batch_of(4, Precision::Bf16, 1000, 201);
  const ServingPass decode = serving_pass(inf, ServingPhase::Decode);
  CHECK(decode.new_tokens == 1);
  CHECK(decode.context == 1000 + 101);   // steps attend over 1001 ... 1201 tokens: mean 1101
  const ServingPass prefill = serving_pass(inf, ServingPhase::Prefill);
  CHECK(prefill.new_tokens == 1000);
  CHECK(prefill.context == 1000);
  const auto kernels = serving_layer_kernels(llama2_70b(), inf, 1, decode);
  const auto attention = std::ranges::find(kernels, KernelClass::FlashAttention, &Kernel::kind);
  REQUIRE(attention != kernels.end());
  // The cache read: batch x context x (K and V) x kv_dim x 2 bytes, beside Q and the output.
  CHECK(attention->bytes.value() == doctest::Approx(4.0 * 1101 * 2 * 1024 * 2 + 2.0 * 4 * 8192 * 2));
  CHECK_FALSE(attention->attention->causal);
  const auto prefill_kernels = serving_layer_kernels(llama2_70b(), inf, 1, prefill);
  CHECK(std::ranges::find(prefill_kernels, KernelClass::FlashAttention, &Kernel::kind)->attention->causal);
}

TEST_CASE("serving: a prefix cache spares whole blocks of the prompt, never its last token") {
  CHECK(prefix_cached_tokens(1000, 0.0, 16) == 0);
  CHECK(prefix_cached_tokens(100, 0.5, 16) == 48);     // 50 tokens hit: three whole blocks
  CHECK(prefix_cached_tokens(1000, 1.0, 16) == 992);   // 999 may hit: 62 blocks; the 8-token tail is computed
  CHECK(prefix_cached_tokens(512, 1.0, 16) == 496);    // a prompt of whole blocks recomputes its last block
  CHECK(prefix_cached_tokens(512, 1.0, 128) == 384);
  CHECK(prefix_cached_tokens(15, 1.0, 16) == 0);       // shorter than a block: nothing to match
  CHECK(prefix_cached_tokens(1, 1.0, 1) == 0);
  InferenceSpec inf = batch_of(4, Precision::Bf16, 1000, 201);
  inf.prefix_cache_hit = 0.8;
  const ServingPass prefill = serving_pass(inf, ServingPhase::Prefill);
  CHECK(prefill.new_tokens == 1000 - 800);   // 800 tokens hit: 50 blocks
  CHECK(prefill.context == 1000);
  CHECK(serving_pass(inf, ServingPhase::Decode) == serving_pass(batch_of(4, Precision::Bf16, 1000, 201), ServingPhase::Decode));
  // The 200 computed tokens attend to the 800 cached and causally among themselves: 1 - 200 / 2000 of the scores.
  const auto kernels = serving_layer_kernels(llama2_70b(), inf, 1, prefill);
  const auto attention = std::ranges::find(kernels, KernelClass::FlashAttention, &Kernel::kind);
  REQUIRE(attention != kernels.end());
  CHECK(attention->attention->queries == 200);
  CHECK(executed_flops(*attention).value() == doctest::Approx(attention->flops.value() * 0.9));
  const auto whole = serving_layer_kernels(llama2_70b(), batch_of(4, Precision::Bf16, 1000, 201), 1,
                                           serving_pass(batch_of(4, Precision::Bf16, 1000, 201), ServingPhase::Prefill));
  const auto whole_attention = std::ranges::find(whole, KernelClass::FlashAttention, &Kernel::kind);
  CHECK(whole_attention->attention->queries == 0);
  CHECK(executed_flops(*whole_attention).value() == doctest::Approx(whole_attention->flops.value() * 0.5));
}

TEST_CASE("serving: a speculative round yields Leviathan et al.'s expected tokens, and the draft runs the target's split") {
  SpeculativeDecoding s;
  s.tokens = 5;
  s.acceptance = 0.0;
  CHECK(speculative_tokens_per_round(s) == 1.0);   // every draft rejected: the target's own token
  s.acceptance = 1.0;
  CHECK(speculative_tokens_per_round(s) == 6.0);   // every draft accepted, and the target's
  s.acceptance = 0.8;
  CHECK(speculative_tokens_per_round(s) == doctest::Approx((1.0 - std::pow(0.8, 6)) / 0.2));
  InferenceSpec inf = batch_of(4, Precision::Bf16, 1000, 201);
  s.draft = find_model("llama2-7b");
  inf.speculative = s;
  const Workload w = serving(inf, 2);
  const Workload d = draft_workload(w);
  CHECK(d.model.name == "llama2-7b");
  CHECK(d.plan.tp == 2);
  CHECK_FALSE(d.inference->speculative.has_value());
  CHECK(d.inference->batch == 4);
}

TEST_CASE("serving: weights compute in their own precision where the GPU has it, else dequantised to 16 bits") {
  const auto& h100 = find_gpu("h100-sxm5-80gb");
  const auto& a100 = find_gpu("a100-sxm4-80gb");
  const auto& v100 = find_gpu("v100-sxm2-32gb");
  CHECK(serving_compute_precision(batch_of(1, Precision::Bf16), h100) == Precision::Bf16);
  CHECK(serving_compute_precision(batch_of(1, Precision::Fp8), h100) == Precision::Fp8);
  CHECK(serving_compute_precision(batch_of(1, Precision::Fp8), a100) == Precision::Bf16);   // no fp8 peak
  CHECK(serving_compute_precision(batch_of(1, Precision::Int8), a100) == Precision::Int8);
  CHECK(serving_compute_precision(batch_of(1, Precision::Int4), h100) == Precision::Bf16);
  CHECK(serving_compute_precision(batch_of(1, Precision::Int4), v100) == Precision::Fp16);   // no bf16
}

TEST_CASE("serving: decode at batch 1 is bound by the weights' bytes, prefill by FLOPs") {
  const auto& gpu = find_gpu("h100-sxm5-80gb");
  auto compute_time = [&](Precision weights, ServingPhase phase) {
    const InferenceSpec inf = batch_of(1, weights, 2048, 128);
    const auto kernels = serving_layer_kernels(llama2_70b(), inf, 1, serving_pass(inf, phase));
    return kernels_time(kernels, gpu, serving_compute_precision(inf, gpu)).value();
  };
  // A quarter of the bytes: int4 decode runs in well under half the time of bf16 ...
  CHECK(compute_time(Precision::Int4, ServingPhase::Decode) < 0.4 * compute_time(Precision::Bf16, ServingPhase::Decode));
  // ... and the bf16 decode step is within a few percent of its weights over the memory bandwidth (plus launches).
  const double layer_bytes = 2.0 * (8192.0 * (8192 + 2048) + 8192.0 * 8192 + 3 * 8192.0 * 28672);
  CHECK(compute_time(Precision::Bf16, ServingPhase::Decode) > layer_bytes / gpu.memory_bandwidth.value());
  CHECK(compute_time(Precision::Bf16, ServingPhase::Decode) < 1.5 * layer_bytes / gpu.memory_bandwidth.value());
  // A 2,048-token prefill is compute-bound: int4 weights save it almost nothing.
  CHECK(compute_time(Precision::Int4, ServingPhase::Prefill) > 0.9 * compute_time(Precision::Bf16, ServingPhase::Prefill));
}

TEST_CASE("serving: the graph has two TP all-reduces per layer, a send per stage boundary and the logits gather") {
  const auto& gpu = find_gpu("h100-sxm5-80gb");
  const InferenceSpec inf = batch_of(8, Precision::Bf16);
  const StepGraph g = generate_serving_step(serving(inf, 4, 2), gpu, serving_pass(inf, ServingPhase::Decode));
  REQUIRE(g.classes.size() == 2);
  CHECK(g.classes[0].ranks.size() == 4);
  for (const RankClass& c : g.classes) {
    CAPTURE(c.stage);
    const int gathers = c.stage == 1 ? 1 : 0;
    CHECK(count_ops<CollectiveOp>(c) == 2 * 40 + gathers);
    CHECK(count_ops<SendOp>(c) == (c.stage == 0 ? 1 : 0));
    CHECK(count_ops<RecvOp>(c) == (c.stage == 1 ? 1 : 0));
    // Every op after the first waits for the one before it: a pass is one chain per stage.
    for (std::size_t i = 1; i < c.ops.size(); ++i) CHECK(c.ops[i].deps == Deps{static_cast<std::uint32_t>(i - 1)});
  }
  for (const Op& op : g.classes[0].ops)
    if (const auto* ar = std::get_if<CollectiveOp>(&op.body)) {
      CHECK(ar->kind == CollectiveKind::AllReduce);
      CHECK(ar->bytes.value() == doctest::Approx(8.0 * 8192 * 2));   // one token per sequence, 16-bit
    }
  // Without tensor parallelism there is nothing to all-reduce.
  const StepGraph alone = generate_serving_step(serving(inf, 1), gpu, serving_pass(inf, ServingPhase::Decode));
  CHECK(count_ops<CollectiveOp>(alone.classes[0]) == 0);
}

TEST_CASE("serving: passes run as one batch share the GEMMs, keep their own attention, and only samplers get logits") {
  const auto& gpu = find_gpu("h100-sxm5-80gb");
  const InferenceSpec inf = batch_of(2, Precision::Bf16);
  const ModelSpec m = llama2_70b();
  // Two sequences decoding over caches of 1,000 and 3,000 tokens, as one batch, against the static batch of two
  // over their mean: the same GEMMs (2 tokens) and the same attention bytes and FLOPs, split in two kernels.
  const std::vector<ServingPass> mixed = {{ServingPhase::Decode, 1, 1, 1000}, {ServingPhase::Decode, 1, 1, 3000}};
  const ServingPass mean{ServingPhase::Decode, 2, 1, 2000};
  const auto apart = serving_layer_kernels(m, inf, 8, mixed);
  const auto together = serving_layer_kernels(m, inf, 8, mean);
  REQUIRE(apart.size() == together.size() + 1);
  CHECK(total_flops(apart).value() == doctest::Approx(total_flops(together).value()).epsilon(1e-12));
  CHECK(total_bytes(apart).value() == doctest::Approx(total_bytes(together).value()).epsilon(1e-12));
  CHECK(std::ranges::count(apart, KernelClass::FlashAttention, &Kernel::kind) == 2);
  // A prompt chunk short of the prompt's end samples nothing: the last stage has no logits and no gather.
  const std::vector<ServingPass> chunk = {{ServingPhase::Prefill, 1, 512, 512, false}};
  CHECK(serving_logits_kernels(m, inf, 8, chunk).empty());
  const StepGraph g = generate_serving_step(serving(inf, 8), gpu, chunk);
  CHECK(count_ops<CollectiveOp>(g.classes[0]) == 2 * m.layers);
  const std::vector<ServingPass> with_decode = {chunk[0], mixed[0]};
  CHECK(count_ops<CollectiveOp>(generate_serving_step(serving(inf, 8), gpu, with_decode).classes[0]) == 2 * m.layers + 1);
}

TEST_CASE("serving: weight-only GEMMs convert their weights on the vector units once per 64 rows, beside the MMAs") {
  const ModelSpec m = llama2_70b();
  const topology::GpuSpec& a100 = find_gpu("a100-sxm4-80gb");
  const double vector_rate = a100.peak_for(Precision::Fp32)->value() / 2;   // instructions per second
  for (const int tokens : {1, 64, 65, 4096}) {
    CAPTURE(tokens);
    const ServingPass pass{ServingPhase::Prefill, 1, tokens, tokens, true};
    const auto int4 = serving_layer_kernels(m, batch_of(1, Precision::Int4), 1, pass);
    const auto bf16 = serving_layer_kernels(m, batch_of(1, Precision::Bf16), 1, pass);
    for (std::size_t i = 0; i < int4.size(); ++i) {
      if (!int4[i].gemm) {
        CHECK(int4[i].dequant_elements == 0);
        continue;
      }
      CHECK(bf16[i].dequant_elements == 0);
      const GemmShape& g = *int4[i].gemm;
      CHECK(int4[i].dequant_elements == g.n * g.k * std::ceil(tokens / 64.0));
      // On an A100 the conversion hides under the tensor cores' work at every batch: nothing added.
      Kernel undone = int4[i];
      undone.dequant_elements = 0;
      CHECK(kernel_time(int4[i], a100, Precision::Bf16) == kernel_time(undone, a100, Precision::Bf16));
      // Where the vector units bind (here: a thousand times the conversions), the compute side is theirs.
      Kernel heavy = int4[i];
      heavy.dequant_elements *= 1000;
      const KernelTiming t = kernel_timing(heavy, a100, Precision::Bf16);
      CHECK_FALSE(t.memory_bound);
      CHECK(t.time.value() == doctest::Approx(heavy.dequant_elements / vector_rate + 4e-6));   // plus the launch
      // Computing in int8 (W8A8 on the A100's int8 tensor cores) nothing is converted.
      CHECK(kernel_time(heavy, a100, Precision::Int8) == kernel_time(undone, a100, Precision::Int8));
    }
  }
}

TEST_CASE("serving: a weight-only GEMM of few rows pads them to 16-row blocks, not half-empty large tiles") {
  const ArchitectureConstants& ampere = architecture("ampere");
  for (const double rows : {1.0, 8.0, 16.0, 17.0, 64.0}) {
    CAPTURE(rows);
    const GemmShape g{rows, 8192, 8192, 1};
    const double padded = 16.0 * std::ceil(rows / 16.0);
    const double blocks = std::max(rows / (rows + 64), std::min(rows / padded, 0.5));
    CHECK(weight_only_shape_factor(g, ampere) ==
          doctest::Approx(blocks * gemm_shape_factor(GemmShape{1e9, 8192, 8192, 1}, ampere)).epsilon(1e-6));
    // A cuBLAS GEMM of the same rows charges its large tiles' waste: never more efficient than Marlin's blocks.
    CHECK(gemm_shape_factor(g, ampere) <= weight_only_shape_factor(g, ampere));
  }
  // From 64 rows on, a weight-only GEMM computes as a 16-bit one does: never faster.
  for (const double rows : {64.0, 256.0, 4096.0}) {
    const GemmShape g{rows, 8192, 8192, 1};
    CHECK(weight_only_shape_factor(g, ampere) == doctest::Approx(gemm_shape_factor(g, ampere)));
  }
  // On an RTX 4090 (165 dense fp16 TFLOP/s against 1 TB/s) a 7B model's int4 decode at batch 1 is bound by its
  // weight reads, not by tensor-core tiles of 64 rows holding one.
  const ModelSpec m = test_shapes::llama2_7b();
  const InferenceSpec inf = batch_of(1, Precision::Int4, 128, 128);
  const auto kernels = serving_layer_kernels(m, inf, 1, serving_pass(inf, ServingPhase::Decode));
  const topology::GpuSpec& rtx = find_gpu("rtx4090");
  for (const Kernel& k : kernels)
    if (k.gemm) CHECK(kernel_timing(k, rtx, Precision::Fp16).memory_bound);
}
