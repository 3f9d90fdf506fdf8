// The memory plan against hand-worked numbers: the article's memory claims (S1, S3-S7, S13, S14, S19, S21),
// Korthikanti et al.'s activation formulas, ZeRO sharding, in-flight micro-batches, the fit verdict.
#include <doctest/doctest.h>

#include "topology/catalog.hpp"
#include "workloads/decode.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/model_shapes.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::workloads;
using namespace dtsim::literals;
using topology::find_gpu;
using namespace dtsim::workloads::test_shapes;

ParallelPlan par(int tp, int pp = 1, int dp = 1, int vpp = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.vpp = vpp;
  return p;
}
ParallelPlan gpipe(int pp) {
  ParallelPlan p = par(1, pp);
  p.schedule = Schedule::Gpipe;
  return p;
}
ParallelPlan zero(int dp, int stage) {
  ParallelPlan p = par(1, 1, dp);
  p.zero = stage;
  return p;
}

Workload training(const ModelSpec& m, ParallelPlan p, int global_batch = 8, Recompute r = Recompute::Selective) {
  TrainingSpec t = training_defaults(Precision::Bf16);
  t.global_batch = global_batch;
  t.recompute = r;
  return {m, t, std::nullopt, std::move(p)};
}

// One sequence of `context` tokens, bf16 KV cache.
InferenceSpec one_sequence(int context, Precision weights) {
  InferenceSpec inf;
  inf.context = context;
  inf.weights = weights;
  return inf;
}

Workload serving(const ModelSpec& m, Precision weights, int context, ParallelPlan p = {}) {
  return {m, std::nullopt, one_sequence(context, weights), std::move(p)};
}

Bytes states(const MemoryPlan& p) { return p.parts.params + p.parts.grads + p.parts.optimizer; }
double gib(Bytes b) { return to_gibibytes(b); }

constexpr double kLlama7bParams = 6738415616.0;    // 32 x 202,383,360 + 2 x 131,072,000 + 4,096
constexpr double kLlama70bParams = 68976648192.0;  // 80 x 855,654,400 + 2 x 262,144,000 + 8,192

}  // namespace

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

TEST_CASE("Korthikanti et al.: the GPT-3 layer reproduces eq. 1-3 and the recompute variants exactly") {
  const ModelSpec m = gpt3_175b();
  TrainingSpec t = training_defaults(Precision::Bf16);
  const double sbh = 2048.0 * 12288;   // s b h with b = 1
  const double as_h = 96.0 * 2048 / 12288;   // a s / h = 16
  const auto bytes = [&](int tp, bool sp, Recompute r) {
    t.sequence_parallel = sp;
    t.recompute = r;
    return layer_activation_bytes(m, t, tp, 1).value();
  };
  CHECK(bytes(1, false, Recompute::None) == sbh * (34 + 5 * as_h));
  CHECK(bytes(8, false, Recompute::None) == sbh * (10 + 24.0 / 8 + 5 * as_h / 8));
  CHECK(bytes(8, true, Recompute::None) == sbh / 8 * (34 + 5 * as_h));
  CHECK(bytes(8, false, Recompute::Selective) == sbh * (10 + 24.0 / 8));
  CHECK(bytes(8, true, Recompute::Selective) == sbh / 8 * 34);
  CHECK(bytes(8, false, Recompute::Full) == 2 * sbh);
  CHECK(bytes(8, true, Recompute::Full) == 2 * sbh / 8);
  t.sequence_parallel = false;
  t.recompute = Recompute::None;
  CHECK(layer_activation_bytes(m, t, 1, 4).value() == 4 * bytes(1, false, Recompute::None));   // linear in b
}

TEST_CASE("a fused attention core keeps the softmax statistics, not the 5as^2b scores") {
  const ModelSpec m = gpt3_175b();
  TrainingSpec t = training_defaults(Precision::Bf16);
  t.attention = AttentionKernel::Flash;
  const double sbh = 2048.0 * 12288;
  const double stats = 2048.0 * 96 * 4;   // fp32 per row of each head
  CHECK(layer_activation_bytes(m, t, 1, 1).value() == sbh * 34 + stats);
  CHECK(layer_activation_bytes(m, t, 8, 1).value() == sbh * (10 + 24.0 / 8) + stats / 8);
  t.recompute = Recompute::Selective;   // nothing left for selective recompute to drop but the statistics
  CHECK(layer_activation_bytes(m, t, 8, 1).value() == sbh * (10 + 24.0 / 8));
}

TEST_CASE("without dropout a layer keeps no masks: 2 sbh bytes less, and the scores only the softmax output") {
  ModelSpec m = gpt3_175b();
  TrainingSpec t = training_defaults(Precision::Bf16);
  const double sbh = 2048.0 * 12288;
  const double as_h = 96.0 * 2048 / 12288;
  m.hidden_dropout = 0.0;
  CHECK(layer_activation_bytes(m, t, 1, 1).value() == sbh * (32 + 5 * as_h));
  m.attention_dropout = 0.0;
  CHECK(layer_activation_bytes(m, t, 1, 1).value() == sbh * (32 + 2 * as_h));   // softmax output, bf16
  t.attention = AttentionKernel::Flash;
  CHECK(layer_activation_bytes(m, t, 1, 1).value() == sbh * 32 + 2048.0 * 96 * 4);
}

TEST_CASE("Korthikanti et al. section 4.3: the first stage of a 1F1B pipeline holds L layers' worth") {
  // tp 8, pp 8, SP: stage 0 keeps p micro-batches of L/p layers: sbhL/t (34 + 5as/h), plus p embedding masks.
  Workload w = training(gpt3_175b(), par(8, 8), 64, Recompute::None);
  w.training->sequence_parallel = true;
  const MemoryPlan p = plan_memory(w, find_gpu("h100-sxm5-80gb"));
  const double sbh = 2048.0 * 12288;
  const double first_stage = sbh * 96 / 8 * (34 + 5 * 16.0) + 8 * sbh / 8;
  CHECK(p.stage == 0);
  CHECK(p.in_flight_micro_batches == 8);
  CHECK(p.parts.activations.value() == doctest::Approx(first_stage).epsilon(1e-12));
}

TEST_CASE("in-flight micro-batches: 1F1B pp - stage, GPipe all, interleaved per Megatron's warm-up") {
  ParallelPlan p = par(1, 4);
  for (int stage = 0; stage < 4; ++stage) CHECK(in_flight_micro_batches(p, 8, stage) == 4 - stage);
  CHECK(in_flight_micro_batches(p, 2, 0) == 2);   // fewer micro-batches than stages
  p.schedule = Schedule::Gpipe;
  for (int stage = 0; stage < 4; ++stage) CHECK(in_flight_micro_batches(p, 8, stage) == 8);
  const ParallelPlan inter = par(1, 4, 1, 2);
  // warm-up (p - s - 1) x 2 + (vpp - 1) x p forwards, then one more before the first backward.
  for (int stage = 0; stage < 4; ++stage) CHECK(in_flight_micro_batches(inter, 8, stage) == (3 - stage) * 2 + 4 + 1);
}

TEST_CASE("interleaving: each in-flight forward holds one chunk's layers") {
  Workload w = training(gpt3_175b(), par(8, 4, 1, 2), 8, Recompute::Selective);
  w.training->sequence_parallel = true;
  Workload plain = w;
  plain.plan.vpp = 1;
  // Stage 0: interleaved keeps 11 chunk-forwards of 12 layers (132 layers) against 1F1B's 4 of 24 (96);
  // up to 11 of them also hold the embedding's dropout mask (sbh / t).
  const double layer = layer_activation_bytes(w.model, *w.training, 8, 1).value();
  const double mask = 2048.0 * 12288 / 8;
  CHECK(in_flight_micro_batches(w.plan, 8, 0) == 11);
  CHECK(in_flight_micro_batches(plain.plan, 8, 0) == 4);
  const MemoryPlan p = plan_memory(w, find_gpu("h100-sxm5-80gb"));
  const MemoryPlan q = plan_memory(plain, find_gpu("h100-sxm5-80gb"));
  CHECK(p.stage == 0);
  CHECK(p.parts.activations.value() >= 132 * layer);
  CHECK(p.parts.activations.value() <= 132 * layer + 11 * mask);
  CHECK(q.parts.activations.value() == doctest::Approx(96 * layer + 4 * mask));
}

TEST_CASE("ZeRO shards optimizer, then grads, then params by exactly 1/dp") {
  const auto gpu = find_gpu("h100-sxm5-80gb");
  const auto at = [&](int stage) {
    return plan_memory(training(llama2_7b(), zero(8, stage), 8), gpu);
  };
  const MemoryPlan z0 = at(0), z1 = at(1), z2 = at(2), z3 = at(3);
  CHECK(z1.parts.optimizer == z0.parts.optimizer / 8);
  CHECK(z1.parts.grads == z0.parts.grads);
  CHECK(z2.parts.grads == z0.parts.grads / 8);
  CHECK(z2.parts.params == z0.parts.params);
  CHECK(z3.parts.params == z0.parts.params / 8);
  CHECK(z3.parts.optimizer == z0.parts.optimizer / 8);
  CHECK(z0.parts.activations == z3.parts.activations);
  // Buffers: two 25 MB gradient buckets; ZeRO-3 adds the largest unit (a layer here) and the next layer, in bf16.
  CHECK(z0.parts.buffers.value() == 50e6);
  CHECK(z3.parts.buffers.value() == 50e6 + 2 * 202383360.0 * 2);
}

// Megatron-LM SC'21 table 2's ZeRO-3 530B row on 640 A100s: micro-batch 4 under full recomputation leaves room
// for one gathered layer (9.4 GiB in fp16) but not for the prefetched second one.
TEST_CASE("ZeRO-3 prefetch: two gathered layers, one without prefetch, auto keeps the prefetch only where it fits") {
  const auto gpu = find_gpu("a100-sxm4-80gb");
  Workload w = training(shape(105, 20480, 128, 128, 81920, 51200, 2048), zero(640, 3), 2560, Recompute::Full);
  w.training->micro_batch = 4;
  w.training->precision = w.training->weight_dtype = w.training->grad_dtype = Precision::Fp16;
  w.training->dp_bucket = Bytes(1000e6);
  const auto plan_with = [&](Zero3Prefetch p) {
    Workload v = w;
    v.training->zero3_prefetch = p;
    return plan_memory(v, gpu);
  };
  const MemoryPlan layer = plan_with(Zero3Prefetch::Layer), none = plan_with(Zero3Prefetch::None),
                   automatic = plan_with(Zero3Prefetch::Auto);
  const double one_layer = 12.0 * 20480 * 20480 + 13.0 * 20480;   // weights, biases, norms; 2 B each
  CHECK((layer.parts.buffers - none.parts.buffers).value() == doctest::Approx(2.0 * one_layer));
  CHECK(gib(layer.margin) == doctest::Approx(-4.91).epsilon(0.01));
  CHECK_FALSE(layer.fits);
  CHECK(none.fits);
  CHECK(automatic.per_gpu == none.per_gpu);
  CHECK(automatic.notes.back().find("no prefetch (training.zero3_prefetch: auto, and the prefetched layer does not "
                                    "fit)") != std::string::npos);
  CHECK(none.notes.back().find("no prefetch (training.zero3_prefetch: none)") != std::string::npos);
  CHECK(layer.notes.back().find("and the next layer, prefetched") != std::string::npos);
  CHECK_FALSE(zero3_prefetches(w, gpu));
  // At micro-batch 2 the prefetched layer fits, and auto keeps it.
  w.training->micro_batch = 2;
  CHECK(zero3_prefetches(w, gpu));
  CHECK(plan_memory(w, gpu).per_gpu == plan_with(Zero3Prefetch::Layer).per_gpu);
  // The prefetch adds the next layer, not a second copy of the largest unit (here the 256k-token embedding).
  Workload big_vocab = training(shape(4, 1024, 16, 16, 4096, 256000, 2048), zero(8, 3));
  const auto buffers = [&](Zero3Prefetch p) {
    big_vocab.training->zero3_prefetch = p;
    return plan_memory(big_vocab, gpu).parts.buffers.value();
  };
  CHECK(buffers(Zero3Prefetch::Layer) - buffers(Zero3Prefetch::None) ==
        doctest::Approx(2.0 * layer_parameters(big_vocab.model)));
  // Without ZeRO-3 nothing is gathered, whatever the setting.
  w.plan.zero = 2;
  CHECK_FALSE(zero3_prefetches(w, gpu));
  CHECK(plan_with(Zero3Prefetch::None).per_gpu == plan_with(Zero3Prefetch::Layer).per_gpu);
}

TEST_CASE("tensor parallelism splits weights and replicates norms exactly") {
  const auto gpu = find_gpu("h100-sxm5-80gb");
  const MemoryPlan one = plan_memory(training(gpt3_175b(), {}, 8), gpu);
  const MemoryPlan eight = plan_memory(training(gpt3_175b(), par(8), 8), gpu);
  const double h = 12288;
  const double replicated = 96 * (4 * h + 2 * h) + 2048 * h + 2 * h;   // norms, row biases, positions, final norm
  CHECK(one.parts.params.value() == 2 * parameter_count(gpt3_175b()));
  CHECK(eight.parts.params.value() == doctest::Approx(2 * ((parameter_count(gpt3_175b()) - replicated) / 8 + replicated)));
}

TEST_CASE("tied embeddings: with pp > 1 the last stage holds its own copy of the word embedding") {
  const auto gpu = find_gpu("h100-sxm5-80gb");
  Workload w = training(gpt3_175b(), par(1, 2), 8);
  const MemoryPlan p = plan_memory(w, gpu);
  const double h = 12288;
  const double layers = 48 * (12 * h * h + 13 * h);
  const double first = layers + (51200 + 2048) * h;
  const double last = layers + 51200 * h + 2 * h;
  CHECK(p.stage == 0);   // the positions make the first stage heavier by 2048 h - 2 h parameters...
  CHECK(p.parts.params.value() == 2 * first);
  CHECK(first > last);
  CHECK(parameter_count(w.model) == doctest::Approx(2 * layers + (51200 + 2048) * h + 2 * h));
}

TEST_CASE("the most loaded stage is reported") {
  // GPipe: every stage holds all micro-batches; the last stage adds the fp32 logits (4 sbV), which outweigh
  // the first stage's embedding.
  Workload w = training(llama2_7b(), gpipe(4), 8);
  const MemoryPlan p = plan_memory(w, find_gpu("h100-sxm5-80gb"));
  CHECK(p.stage == 3);
  CHECK(p.in_flight_micro_batches == 8);
}

TEST_CASE("capacity subtracts the reserve, margin and verdict follow its sign") {
  topology::GpuSpec gpu = find_gpu("a100-sxm4-80gb");
  const Workload w = serving(llama2_7b(), Precision::Bf16, 4096);
  const MemoryPlan p = plan_memory(w, gpu);
  CHECK(p.capacity == 80_GiB - gpu.memory_reserve);
  CHECK(gpu.memory_reserve > Bytes(0.0));
  CHECK(p.per_gpu == p.parts.params + p.parts.kv_cache + p.parts.activations);
  CHECK(p.margin == p.capacity - p.per_gpu);
  CHECK(p.fits);
  gpu.memory = p.per_gpu + gpu.memory_reserve;   // exactly full: fits, margin 0
  CHECK(plan_memory(w, gpu).fits);
  CHECK(plan_memory(w, gpu).margin == Bytes(0.0));
  gpu.memory = gpu.memory - Bytes(1.0);
  CHECK_FALSE(plan_memory(w, gpu).fits);
  CHECK(plan_memory(w, gpu).margin == Bytes(-1.0));
}

TEST_CASE("notes: one line per part, in the parts' order") {
  const MemoryPlan t = plan_memory(training(llama2_7b(), zero(8, 3)), find_gpu("h100-sxm5-80gb"));
  const MemoryPlan i = plan_memory(serving(llama2_7b(), Precision::Int4, 4096), find_gpu("rtx4090"));
  for (const MemoryPlan* p : {&t, &i}) {
    REQUIRE(p->notes.size() == 6);
    const char* parts[] = {"params:", "grads:", "optimizer:", "activations:", "kv_cache:", "buffers:"};
    for (std::size_t k = 0; k < 6; ++k) CHECK(p->notes[k].starts_with(parts[k]));
  }
  CHECK(t.notes[0].find("ZeRO-3 /dp 8") != std::string::npos);
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
