// The memory plan against hand-worked numbers: Korthikanti et al.'s activation formulas, ZeRO sharding, in-flight
// micro-batches, the fit verdict (the article's memory claims: memory_claims_test.cpp).
#include <doctest/doctest.h>

#include "workloads/decode.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/memory_cases.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using namespace dtsim::workloads::memory_cases;

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

// Transformer Engine's fp8 linear layers keep their inputs for the weight gradient in fp8: the QKV and up
// projections' inputs (2 sbh at 1 byte: 2 sbh less), the output projection's (sbh less) and the down projection's
// (gelu's output, 4 sbh less): 27 sbh of Korthikanti's 34; the attention core's tensors and gelu's input stay bf16.
TEST_CASE("fp8 training keeps the linear layers' inputs in one byte: 27 sbh a GPT layer instead of 34") {
  const ModelSpec m = gpt3_175b();
  TrainingSpec t = training_defaults(Precision::Bf16);
  t.attention = AttentionKernel::Flash;
  const double sbh = 2048.0 * 12288;
  const double stats = 2048.0 * 96 * 4;
  t.fp8 = Fp8::Hybrid;
  CHECK(layer_activation_bytes(m, t, 1, 1).value() == sbh * 27 + stats);
  CHECK(layer_activation_bytes(m, t, 8, 1).value() == sbh * (8 + 19.0 / 8) + stats / 8);   // norms' 2 + QKV, MLP in 1
  t.recompute = Recompute::Selective;
  t.recompute_modules = bit(RecomputeModule::CoreAttn) | bit(RecomputeModule::Mlp);   // drops the MLP's 12 sbh
  CHECK(layer_activation_bytes(m, t, 8, 1).value() == sbh * (8 + (19.0 - 12) / 8));
  t.recompute = Recompute::Full;   // the layer input, bf16 either way
  CHECK(layer_activation_bytes(m, t, 8, 1).value() == 2 * sbh);
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
