// The memory plan against the article's memory claims (S1, S3-S7, S9, S13, S14, S19, S21), worked by hand.
#include <doctest/doctest.h>

#include "workloads/decode.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/memory_cases.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using namespace dtsim::workloads::memory_cases;

TEST_CASE("parameter counts of the shapes the claims use") {
  CHECK(parameter_count(llama2_7b()) == kLlama7bParams);
  CHECK(parameter_count(llama2_70b()) == kLlama70bParams);
  CHECK(parameter_count(llama2_13b()) == 13015864320.0);
}

TEST_CASE("S5: 7B training in bf16 with AdamW is 18 bytes per parameter, master weights included") {
  const MemoryPlan p = plan_memory(training(llama2_7b(), {}), find_gpu("a100-sxm4-80gb"));
  CHECK(p.parts.params.value() == 2.0 * kLlama7bParams);       // 13.48 GB (article: 14 GB)
  CHECK(p.parts.grads.value() == 4.0 * kLlama7bParams);        // 26.95 GB (article: 28 GB)
  CHECK(p.parts.optimizer.value() == 12.0 * kLlama7bParams);   // 80.86 GB: master 4 + moments 8 (article: 56 GB)
  CHECK(to_gigabytes(states(p)) == doctest::Approx(121.29).epsilon(1e-4));
  // Selective recompute, micro-batch 1, 4096 tokens, one micro-batch in flight: 32 layers of
  // 10 sbh + 2 sb (4h + 3f) = 572,522,496 B, the head 4 sbh + 4 sbV, the embedding mask sbh.
  CHECK(p.parts.activations.value() == 32.0 * 572522496 + 67108864 + 524288000 + 16777216);   // 18.93 GB
  CHECK(p.in_flight_micro_batches == 1);
  CHECK_FALSE(p.inference);
  CHECK(p.parts.buffers.value() == 0.0);
  CHECK_FALSE(p.fits);   // 140 GB on a 78.5 GiB budget: the article's "an A100 80GB" is wrong
  CHECK(p.margin < Bytes(0.0));
}

TEST_CASE("S1: 70B in bf16, unsharded: 16 B/param with 16-bit grads is the article's 1.1 TB, dtsim's default 18") {
  Workload w = training(llama2_70b(), {}, 1, Recompute::Full);
  CHECK(to_gigabytes(states(plan_memory(w, find_gpu("mi300x")))) == doctest::Approx(18.0 * 68.9766).epsilon(1e-5));
  w.training->grad_dtype = Precision::Bf16;
  const MemoryPlan p = plan_memory(w, find_gpu("mi300x"));
  CHECK(states(p).value() == 16.0 * kLlama70bParams);                              // 1.104 TB
  CHECK(to_gigabytes(p.parts.params + p.parts.optimizer) == doctest::Approx(965.67).epsilon(1e-4));
  CHECK_FALSE(p.fits);
}

TEST_CASE("S3: quantisation saves 1 - target/source bits of the weights") {
  const auto gpu = find_gpu("a100-sxm4-80gb");
  const double fp32 = plan_memory(serving(llama2_7b(), Precision::Fp32, 4096), gpu).parts.params.value();
  const double int8 = plan_memory(serving(llama2_7b(), Precision::Int8, 4096), gpu).parts.params.value();
  const double int4 = plan_memory(serving(llama2_7b(), Precision::Int4, 4096), gpu).parts.params.value();
  CHECK(1.0 - int8 / fp32 == 0.75);
  CHECK(1.0 - int4 / fp32 == 0.875);
  CHECK(fp32 == 4.0 * kLlama7bParams);
}

TEST_CASE("S4/S14: LLaMA-70B weights on 4 A100 (fp32), 2 H100 (bf16), 1 and 2 RTX 4090 (int4)") {
  const MemoryPlan fp32 = plan_memory(serving(llama2_70b(), Precision::Fp32, 4096, par(4)), find_gpu("a100-sxm4-80gb"));
  const MemoryPlan bf16 = plan_memory(serving(llama2_70b(), Precision::Bf16, 4096, par(2)), find_gpu("h100-sxm5-80gb"));
  const MemoryPlan one = plan_memory(serving(llama2_70b(), Precision::Int4, 4096, par(1)), find_gpu("rtx4090"));
  const MemoryPlan two = plan_memory(serving(llama2_70b(), Precision::Int4, 4096, par(2)), find_gpu("rtx4090"));
  CHECK(fp32.parts.params.value() == kLlama70bParams);   // 275.9 GB / 4 = 64.24 GiB each
  CHECK(bf16.parts.params.value() == kLlama70bParams);   // 137.95 GB / 2
  CHECK(one.parts.params.value() == 0.5 * kLlama70bParams);   // 34.49 GB = 32.12 GiB
  CHECK(gib(one.parts.params) == doctest::Approx(32.12).epsilon(1e-3));
  // KV cache, 4096 tokens, GQA: 2 x 80 layers x 8 x 128 x 4096 x 2 B = 1.25 GiB, split over tp.
  CHECK(one.parts.kv_cache == 1280_MiB);
  CHECK(two.parts.kv_cache == 640_MiB);
  CHECK(one.inference);
  CHECK(one.parts.grads.value() == 0.0);
  CHECK(one.parts.optimizer.value() == 0.0);
  CHECK(fp32.fits);
  CHECK(bf16.fits);
  CHECK_FALSE(one.fits);   // 32.1 GiB > 22.5 GiB: S14 ("a 4090 runs 70B int4") is false
  CHECK(two.fits);
}

TEST_CASE("S7: LLaMA-7B's KV cache for 128K tokens in bf16 is 64 GiB, not 128 GB") {
  const ModelSpec m = llama(32, 4096, 32, 32, 11008, 2048);
  const InferenceSpec inf = one_sequence(131072, Precision::Bf16);
  CHECK(kv_cache_bytes(m, inf, 1) == 64_GiB);   // 2 x 32 x 4096 x 131072 x 2 B = 2^36 B
  const auto h200 = find_gpu("h200-sxm-141gb");
  const MemoryPlan p = plan_memory(serving(m, Precision::Bf16, 131072), h200);
  CHECK(p.parts.kv_cache == 64_GiB);
  CHECK(p.fits);
  CHECK(gib(p.per_gpu) == doctest::Approx(76.57).epsilon(1e-3));
  Workload fp32_cache = serving(m, Precision::Bf16, 131072);
  fp32_cache.inference->kv_cache = Precision::Fp32;   // the article's 128 GB is an fp32 cache
  const MemoryPlan q = plan_memory(fp32_cache, h200);
  CHECK(q.parts.kv_cache == 128_GiB);
  CHECK_FALSE(q.fits);   // 140.6 GiB with the weights, on 138.9 GiB
}

TEST_CASE("S13: a 700B model in int4 is 350 GB, more than one MI300X holds") {
  const ModelSpec m = shape(96, 24576, 192, 192, 98304, 51200, 2048);
  CHECK(parameter_count(m) / 1e9 == doctest::Approx(697.1).epsilon(1e-3));
  const auto mi300x = find_gpu("mi300x");
  const MemoryPlan one = plan_memory(serving(m, Precision::Int4, 4096), mi300x);
  CHECK(to_gigabytes(one.parts.params) == doctest::Approx(348.6).epsilon(1e-3));
  CHECK_FALSE(one.fits);
  CHECK(plan_memory(serving(m, Precision::Int4, 4096, par(2)), mi300x).fits);
}

TEST_CASE("S6: full recompute, Adafactor and fp32 training against the bf16 AdamW baseline") {
  const auto gpu = find_gpu("h200-sxm-141gb");
  const MemoryPlan base = plan_memory(training(llama2_7b(), {}), gpu);
  const MemoryPlan full = plan_memory(training(llama2_7b(), {}, 8, Recompute::Full), gpu);
  // Full: 32 layer inputs (2 sbh) + head + embedding mask + one layer recomputed without recompute
  // (10 sbh + 2 sb (4h + 3f) + 5 a s^2 b).
  CHECK(full.parts.activations.value() == 32.0 * 33554432 + 591396864 + 16777216 + 572522496 + 2684354560.0);
  CHECK(to_gigabytes(base.parts.activations) == doctest::Approx(18.93).epsilon(1e-3));
  CHECK(to_gigabytes(full.parts.activations) == doctest::Approx(4.94).epsilon(1e-3));
  Workload ada = training(llama2_7b(), {});
  ada.training->optimizer = Optimizer::Adafactor;
  CHECK(plan_memory(ada, gpu).parts.optimizer.value() == 8.0 * kLlama7bParams);   // 4 master + 4 state
  Workload fp32 = training(llama2_7b(), {});
  *fp32.training = training_defaults(Precision::Fp32);
  fp32.training->global_batch = 8;
  fp32.training->recompute = Recompute::Selective;
  const MemoryPlan f = plan_memory(fp32, gpu);
  CHECK(states(f).value() == 16.0 * kLlama7bParams);   // 4 + 4 + 8, no master copy
  // fp32 tensors (e = 4), masks still 1 byte: 32 x (18 sbh + 4 sb (4h + 3f)) + 8 sbh + 4 sbV + sbh.
  CHECK(f.parts.activations.value() == 32.0 * 1111490560 + 134217728 + 524288000 + 16777216);
  // Mixed precision saves 2.7 % here (140.22 GB against 144.06 GB), not the article's 15 %: it halves the
  // activations but its fp32 master copy makes the states 18 B/param against fp32 training's 16.
  CHECK(to_gigabytes(base.per_gpu) == doctest::Approx(140.220).epsilon(1e-5));
  CHECK(to_gigabytes(f.per_gpu) == doctest::Approx(144.058).epsilon(1e-5));
}

TEST_CASE("S19: the sizing guide's points for training with bf16 AdamW") {
  CHECK_FALSE(plan_memory(training(llama2_7b(), par(1, 1)), find_gpu("a100-sxm4-40gb")).fits);
  CHECK_FALSE(plan_memory(training(llama2_7b(), par(2, 1)), find_gpu("a100-sxm4-40gb")).fits);
  Workload thirteen = training(llama2_13b(), par(4, 1));
  thirteen.training->sequence_parallel = true;
  const MemoryPlan p13 = plan_memory(thirteen, find_gpu("a100-sxm4-80gb"));
  CHECK(states(p13).value() == 18.0 * (40 * (317204480.0 - 10240) / 4 + 40 * 10240 + 2 * 163840000.0 / 4 + 5120));
  CHECK(p13.fits);
  CHECK_FALSE(plan_memory(training(llama2_70b(), par(8, 1)), find_gpu("h100-sxm5-80gb")).fits);
  Workload seventy = training(llama2_70b(), par(8, 4), 16);
  seventy.training->sequence_parallel = true;
  CHECK(plan_memory(seventy, find_gpu("h100-sxm5-80gb")).fits);
  CHECK_FALSE(plan_memory(training(gpt3_175b(), par(8, 2)), find_gpu("h100-sxm5-80gb")).fits);
}

TEST_CASE("S21: the rules of thumb against dtsim") {
  // Training: params x (2 + 4 + 8) x 1.2 = 16.8 B/param; dtsim counts 18 B/param plus activations.
  const MemoryPlan t = plan_memory(training(llama2_7b(), {}), find_gpu("h200-sxm-141gb"));
  CHECK(states(t).value() / kLlama7bParams == 18.0);
  CHECK(t.per_gpu.value() > 16.8 * kLlama7bParams);
  // Inference KV: 2 x layers x hidden x seq x bytes is exact for multi-head attention and 8x too much for
  // LLaMA-2-70B's grouped-query attention (8 KV heads of 64).
  const InferenceSpec inf = one_sequence(4096, Precision::Int4);
  CHECK(kv_cache_bytes(llama2_7b(), inf, 1).value() == 2.0 * 32 * 4096 * 4096 * 2);
  CHECK(kv_cache_bytes(llama2_70b(), inf, 1).value() * 8 == 2.0 * 80 * 8192 * 4096 * 2);
}

TEST_CASE("S9: a decode step's arithmetic intensity is about 1 FLOP/byte per sequence of the batch") {
  const ModelSpec& m = find_model("gpt3-175b");
  InferenceSpec inf;
  inf.context = 2048;
  inf.weights = Precision::Bf16;
  inf.kv_cache = Precision::Bf16;
  const auto one = decode_step(m, inf);
  // 2 FLOPs per weight over 2 bytes per weight, and attention over a bf16 cache also 1 FLOP per byte: 1.
  CHECK(one.intensity() == doctest::Approx(1.0).epsilon(0.001).scale(0));
  // The FLOPs: the layers' and the logits' weights, twice, plus scores and context over 2048 cached tokens.
  const double matmul = m.layers * layer_parameters(m) + static_cast<double>(m.vocab) * m.hidden;
  const double attention = 4.0 * m.layers * m.hidden * 2048;
  CHECK(one.flops.value() == doctest::Approx(2 * matmul + attention).epsilon(1e-12).scale(0));
  CHECK(one.bytes.value() ==
        doctest::Approx(2 * parameter_count(m) + kv_cache_bytes(m, inf, 1).value()).epsilon(1e-12).scale(0));
  inf.batch = 32;
  const auto many = decode_step(m, inf);
  CHECK(many.flops.value() == doctest::Approx(32 * one.flops.value()));
  // Weights are read once for the whole batch, caches once per sequence (9.7 GB each for GPT-3 at 2048 tokens):
  // intensity grows, far from 32-fold.
  CHECK(many.intensity() > 15);
  CHECK(many.intensity() < 32 * one.intensity());
  inf.weights = Precision::Int4;
  inf.batch = 1;
  CHECK(decode_step(m, inf).intensity() > 3 * one.intensity());   // a quarter of the weight bytes
}
