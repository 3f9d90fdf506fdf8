// Kernel lists: names, the FLOP accounting of Megatron-LM / Korthikanti et al. (exact, relative 1e-12), tensor-
// and sequence-parallel sharding, GEMM shapes and what each recompute granularity repeats (bytes, precisions and
// the per-step kernels: kernel_bytes_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "workloads/kernels.hpp"
#include "workloads/kernel_cases.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::workloads;
using namespace dtsim::workloads::kernel_cases;

// The model FLOPs of one step of `b` sequences on one GPU (tp = 1): every layer's passes plus the logits.
double step_flops(const ModelSpec& m, const TrainingSpec& t, int b) {
  const Sharding one{};
  double layer = 0;
  for (const Pass p : {Pass::Forward, Pass::Backward, Pass::Recompute})
    layer += flops_of(layer_kernels(m, t, one, b, p));
  double ends = 0;
  for (const Pass p : {Pass::Forward, Pass::Backward, Pass::Recompute})
    ends += flops_of(logits_kernels(m, t, one, b, p)) + flops_of(embedding_kernels(m, t, one, b, p));
  return m.layers * layer + ends;
}

}  // namespace

TEST_CASE("kernels: every class and pass has a lower-case hyphenated name that parses back") {   // digits allowed
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(KernelClass::OptimizerUpdate); ++i) {
    const auto k = static_cast<KernelClass>(i);
    const std::string name(to_string(k));
    CHECK(std::ranges::all_of(name, [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }));
    CHECK(parse_kernel_class(name) == k);
    names.insert(name);
  }
  CHECK(names.size() == 35);
  CHECK(to_string(KernelClass::QkvGemm) == "qkv-gemm");
  CHECK(to_string(KernelClass::FlashAttention) == "flash-attention");
  CHECK(to_string(KernelClass::Fp8Cast) == "fp8-cast");
  CHECK(to_string(KernelClass::AttnScores) == "attn-scores");
  CHECK(to_string(KernelClass::OptimizerUpdate) == "optimizer-update");
  CHECK_FALSE(parse_kernel_class("qkv_gemm").has_value());
  CHECK_FALSE(parse_kernel_class("").has_value());
  CHECK(to_string(Pass::Forward) == "forward");
  CHECK(to_string(Pass::Backward) == "backward");
  CHECK(to_string(Pass::Recompute) == "recompute");
  CHECK(fmt::format("{} {}", KernelClass::MlpDownGemm, Pass::Recompute) == "mlp-down-gemm recompute");
}

TEST_CASE("kernels: the GEMMs are the seventeen matrix kernels (three of them MoE's, one MLA's, two layer lists', four LoRA's), and only they count FLOPs") {
  int gemms = 0;
  for (int i = 0; i <= static_cast<int>(KernelClass::OptimizerUpdate); ++i)
    gemms += is_gemm(static_cast<KernelClass>(i)) ? 1 : 0;
  CHECK(gemms == 17);
  CHECK(is_gemm(KernelClass::LoraRowB));
  CHECK(is_gemm(KernelClass::MlaUpGemm));
  CHECK(is_gemm(KernelClass::ExpertUpGemm));
  CHECK(is_gemm(KernelClass::Router));
  CHECK(is_gemm(KernelClass::Logits));
  CHECK(is_gemm(KernelClass::AttnContext));
  CHECK_FALSE(is_gemm(KernelClass::Softmax));
  CHECK_FALSE(is_gemm(KernelClass::OptimizerUpdate));

  const ModelSpec m = gpt3_like();
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    std::vector<Kernel> all = layer_kernels(m, training(), {8, true}, 2, p);
    for (const Kernel& k : logits_kernels(m, training(), {8, true}, 2, p)) all.push_back(k);
    for (const Kernel& k : embedding_kernels(m, training(), {8, true}, 2, p)) all.push_back(k);
    for (const Kernel& k : all) {
      CAPTURE(k.kind);
      CHECK((k.flops.value() > 0) == is_gemm(k.kind));
      CHECK(k.gemm.has_value() == is_gemm(k.kind));
      CHECK(k.bytes.value() > 0);
      CHECK(k.pass == p);
    }
  }
}

TEST_CASE("kernels: forward layer FLOPs are (24 b s h^2 + 4 b s^2 h) / t for MHA with ffn 4h") {
  const ModelSpec m = gpt3_like();
  const double b = 2, s = m.seq_length, h = m.hidden;
  for (const int tp : {1, 2, 8}) {
    CAPTURE(tp);
    const auto fwd = layer_kernels(m, training(), {tp, false}, 2, Pass::Forward);
    CHECK(rel_err(flops_of(fwd), (24 * b * s * h * h + 4 * b * s * s * h) / tp) < kExact);
    CHECK(rel_err(find(fwd, KernelClass::QkvGemm).flops.value(), 2 * b * s * h * 3 * h / tp) < kExact);
    CHECK(rel_err(find(fwd, KernelClass::AttnScores).flops.value(), 2 * b * s * s * h / tp) < kExact);
    CHECK(rel_err(find(fwd, KernelClass::AttnContext).flops.value(), 2 * b * s * s * h / tp) < kExact);
    CHECK(rel_err(find(fwd, KernelClass::ProjGemm).flops.value(), 2 * b * s * h * h / tp) < kExact);
    CHECK(rel_err(find(fwd, KernelClass::MlpUpGemm).flops.value(), 2 * b * s * h * 4 * h / tp) < kExact);
    CHECK(rel_err(find(fwd, KernelClass::MlpDownGemm).flops.value(), 2 * b * s * 4 * h * h / tp) < kExact);
  }
}

TEST_CASE("kernels: a step is 72 B s l h^2 (1 + s/6h + V/12lh) FLOPs, 96 (1 + s/6h + V/16lh) with full recompute") {
  const ModelSpec m = gpt3_like();
  const double b = 4, s = m.seq_length, h = m.hidden, l = m.layers, v = m.vocab;
  const double model = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  const double full = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  CHECK(rel_err(step_flops(m, training(), 4), model) < kExact);
  CHECK(rel_err(step_flops(m, training(Recompute::Full), 4), full) < kExact);
  // Selective recompute repeats Q K^T and probabilities x V only: 4 b s^2 h per layer.
  CHECK(rel_err(step_flops(m, training(Recompute::Selective), 4), model + 4 * b * s * s * h * l) < kExact);
}

TEST_CASE("kernels: every backward GEMM costs exactly twice its forward, logits included") {
  for (const ModelSpec& m : {gpt3_like(), llama_like()}) {
    const TrainingSpec t = training();
    const auto fwd = layer_kernels(m, t, {4, false}, 1, Pass::Forward);
    const auto bwd = layer_kernels(m, t, {4, false}, 1, Pass::Backward);
    REQUIRE(fwd.size() == bwd.size());
    for (std::size_t i = 0; i < fwd.size(); ++i) {
      const Kernel& f = fwd[i];
      const Kernel& g = bwd[bwd.size() - 1 - i];   // backward runs in reverse order
      CHECK(g.kind == f.kind);
      CHECK(g.flops.value() == doctest::Approx(2 * f.flops.value()).epsilon(kExact));
    }
    const auto logits_flops = [&](Pass p) {
      return find(logits_kernels(m, t, {4, false}, 1, p), KernelClass::Logits).flops.value();
    };
    const double logits_fwd = logits_flops(Pass::Forward);
    const double logits_bwd = logits_flops(Pass::Backward);
    CHECK(rel_err(logits_fwd, 2.0 * m.seq_length * m.hidden * m.vocab / 4) < kExact);
    CHECK(rel_err(logits_bwd, 2 * logits_fwd) < kExact);
  }
}

TEST_CASE("kernels: GQA and SwiGLU FLOPs match hand-worked numbers (LLaMA-2 70B shape, b 1, s 4096, t 8)") {
  const auto fwd = layer_kernels(llama_like(), training(), {8, false}, 1, Pass::Forward);
  // QKV: 2 b s h (h + 2 kv_dim) / t = 2 * 4096 * 8192 * (8192 + 2048) / 8
  CHECK(find(fwd, KernelClass::QkvGemm).flops.value() == 85'899'345'920.0);
  // scores and context: 2 b s^2 h / t = 2 * 4096^2 * 8192 / 8 (GQA shares K and V, not the FLOPs)
  CHECK(find(fwd, KernelClass::AttnScores).flops.value() == 34'359'738'368.0);
  CHECK(find(fwd, KernelClass::AttnContext).flops.value() == 34'359'738'368.0);
  // projection: 2 b s h^2 / t
  CHECK(find(fwd, KernelClass::ProjGemm).flops.value() == 68'719'476'736.0);
  // swiglu gate + up: 2 b s h (2 f) / t = 2 * 4096 * 8192 * 57344 / 8
  CHECK(find(fwd, KernelClass::MlpUpGemm).flops.value() == 481'036'337'152.0);
  // down: 2 b s f h / t
  CHECK(find(fwd, KernelClass::MlpDownGemm).flops.value() == 240'518'168'576.0);
  CHECK(flops_of(fwd) == 944'892'805'120.0);
  // Logits, vocab-parallel: 2 b s h V / t = 2 * 4096 * 8192 * 32000 / 8
  CHECK(flops_of(logits_kernels(llama_like(), training(), {8, false}, 1, Pass::Forward)) == 268'435'456'000.0);
}

TEST_CASE("kernels: tensor parallelism divides every kernel's FLOPs by t, sequence parallelism none") {
  const ModelSpec m = llama_like();
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    const auto one = layer_kernels(m, training(), {1, false}, 2, p);
    for (const int tp : {2, 4, 8}) {
      for (const bool sp : {false, true}) {
        const auto shard = layer_kernels(m, training(), {tp, sp}, 2, p);
        REQUIRE(shard.size() == one.size());
        for (std::size_t i = 0; i < one.size(); ++i) {
          CAPTURE(one[i].kind);
          CHECK(shard[i].flops.value() * tp == doctest::Approx(one[i].flops.value()).epsilon(kExact));
        }
      }
    }
    const double logits = flops_of(logits_kernels(m, training(), {1, false}, 2, p));
    CHECK(rel_err(flops_of(logits_kernels(m, training(), {8, true}, 2, p)) * 8, logits) < kExact);
  }
}

TEST_CASE("kernels: GEMM shapes are tokens x out x in, attention batched over sequences x local heads") {
  const ModelSpec m = gpt3_like();   // h 12288, 96 heads of 128
  const auto fwd = layer_kernels(m, training(), {8, true}, 2, Pass::Forward);
  const GemmShape qkv = *find(fwd, KernelClass::QkvGemm).gemm;
  CHECK(qkv.m == 2 * 2048);
  CHECK(qkv.n == 3 * 12288 / 8);
  CHECK(qkv.k == 12288);
  CHECK(qkv.batch == 1);
  const GemmShape proj = *find(fwd, KernelClass::ProjGemm).gemm;
  CHECK((proj.m == 4096 && proj.n == 12288 && proj.k == 12288 / 8));
  const GemmShape scores = *find(fwd, KernelClass::AttnScores).gemm;
  CHECK((scores.m == 2048 && scores.n == 2048 && scores.k == 128 && scores.batch == 2 * 96 / 8));
  const GemmShape context = *find(fwd, KernelClass::AttnContext).gemm;
  CHECK((context.m == 2048 && context.n == 128 && context.k == 2048 && context.batch == 2 * 96 / 8));
  const GemmShape logits = *find(logits_kernels(m, training(), {8, true}, 2, Pass::Forward), KernelClass::Logits).gemm;
  CHECK((logits.m == 4096 && logits.n == 51200 / 8 && logits.k == 12288));
  // Backward gives the data-gradient GEMM: output m x k over n.
  const GemmShape back = *find(layer_kernels(m, training(), {8, true}, 2, Pass::Backward), KernelClass::QkvGemm).gemm;
  CHECK((back.m == 4096 && back.n == 12288 && back.k == 3 * 12288 / 8));
}

TEST_CASE("kernels: attention bytes scale with b (a/t) s^2 and carry a 1-byte dropout mask") {
  const ModelSpec m = gpt3_like();
  const double b = 2, s = 2048, probs = b * (96.0 / 8) * s * s;   // attention probabilities per GPU
  const auto fwd = layer_kernels(m, training(), {8, false}, 2, Pass::Forward);
  const auto bwd = layer_kernels(m, training(), {8, false}, 2, Pass::Backward);
  CHECK(find(fwd, KernelClass::Softmax).bytes.value() == 2 * probs * 2);        // read + write, bf16
  CHECK(find(bwd, KernelClass::Softmax).bytes.value() == 3 * probs * 2);        // read y, dy; write dx
  CHECK(find(fwd, KernelClass::AttnDropout).bytes.value() == probs * (2 * 2 + 1));
  CHECK(find(bwd, KernelClass::AttnDropout).bytes.value() == probs * (2 * 2 + 1));
  // Q K^T reads Q and K (s x head_dim each) and writes the scores, per head.
  CHECK(find(fwd, KernelClass::AttnScores).bytes.value() == 2 * 12 * (2 * s * 128 + s * s) * 2);
}

TEST_CASE("kernels: without dropout no mask is drawn, the residual add reads both branches, the backward skips it") {
  ModelSpec m = gpt3_like();
  const double x = 2 * 2048 * 12288.0, probs = 2 * (96.0 / 8) * 2048 * 2048;
  const auto with = layer_kernels(m, training(), {8, false}, 2, Pass::Forward);
  m.hidden_dropout = m.attention_dropout = 0.0;
  const auto fwd = layer_kernels(m, training(), {8, false}, 2, Pass::Forward);
  const auto bwd = layer_kernels(m, training(), {8, false}, 2, Pass::Backward);
  for (const auto& ks : {fwd, bwd}) {
    CHECK(std::ranges::count(ks, KernelClass::Dropout, &Kernel::kind) == 0);
    CHECK(std::ranges::count(ks, KernelClass::AttnDropout, &Kernel::kind) == 0);
    CHECK(std::ranges::count(ks, KernelClass::Residual, &Kernel::kind) == 2);
  }
  CHECK(find(fwd, KernelClass::Residual).bytes.value() == 3 * x * 2);   // branch + residual in, sum out
  CHECK(find(bwd, KernelClass::Residual).bytes.value() == 3 * x * 2);   // the gradients join as before
  // Forward traffic drops by the two 1-byte masks and the attention dropout's pass over the probabilities.
  CHECK(total_bytes(with).value() - total_bytes(fwd).value() == doctest::Approx(2 * x + probs * (2 * 2 + 1)));
  CHECK(flops_of(fwd) == flops_of(with));
  // LLaMA-style presets train without dropout; GPT's keep Megatron's 0.1.
  CHECK(llama_like().hidden_dropout == 0.0);
  CHECK(llama_like().attention_dropout == 0.0);
  CHECK(gpt3_like().hidden_dropout == 0.1);
}

TEST_CASE("kernels: sequence parallelism shards the norms, dropouts and residuals, not the attention core") {
  const ModelSpec m = gpt3_like();
  const double x = 2 * 2048 * 12288.0;   // b s h
  for (const Pass p : {Pass::Forward, Pass::Backward}) {
    const auto rep = layer_kernels(m, training(), {8, false}, 2, p);
    const auto sp = layer_kernels(m, training(), {8, true}, 2, p);
    for (const KernelClass k : {KernelClass::LayerNorm, KernelClass::Dropout, KernelClass::Residual})
      CHECK(find(sp, k).bytes.value() * 8 == doctest::Approx(find(rep, k).bytes.value()).epsilon(kExact));
    for (const KernelClass k : {KernelClass::Softmax, KernelClass::AttnDropout, KernelClass::Activation,
                                KernelClass::QkvGemm})
      CHECK(find(sp, k).bytes.value() == find(rep, k).bytes.value());
  }
  const auto fwd = layer_kernels(m, training(), {8, false}, 2, Pass::Forward);
  CHECK(find(fwd, KernelClass::LayerNorm).bytes.value() == 2 * x * 2);   // replicated: the full b s h
  CHECK(find(layer_kernels(m, training(), {8, true}, 2, Pass::Forward), KernelClass::LayerNorm).bytes.value() ==
        2 * x / 8 * 2);
  CHECK(find(fwd, KernelClass::Dropout).bytes.value() == x * (2 * 2 + 1));
  CHECK(find(layer_kernels(m, training(), {8, false}, 2, Pass::Backward), KernelClass::LayerNorm).bytes.value() ==
        3 * x * 2);
}

TEST_CASE("kernels: GEMM bytes are (m k + m n) activations plus k n weights, in their own dtypes") {
  const ModelSpec m = llama_like();
  TrainingSpec t = training();
  const auto bf16 = find(layer_kernels(m, t, {8, false}, 1, Pass::Forward), KernelClass::MlpUpGemm);
  // m = 4096 tokens, n = 2 * 28672 / 8, k = 8192, all bf16.
  CHECK(bf16.bytes.value() == 243'269'632.0);
  t.weight_dtype = Precision::Fp32;
  const double n = 2 * 28672 / 8.0, k = 8192;
  CHECK(find(layer_kernels(m, t, {8, false}, 1, Pass::Forward), KernelClass::MlpUpGemm).bytes.value() ==
        243'269'632.0 + k * n * 2);
  // Backward: both GEMMs' activations, the weight once, the fp32 gradient read and written.
  const double tokens = 4096;
  CHECK(find(layer_kernels(m, training(), {8, false}, 1, Pass::Backward), KernelClass::MlpUpGemm).bytes.value() ==
        2 * (tokens * n + tokens * k) * 2 + k * n * (2 + 2 * 4));
  // The activation kernel: swiglu reads gate and up and writes their product.
  CHECK(find(layer_kernels(m, training(), {8, false}, 1, Pass::Forward), KernelClass::Activation).bytes.value() ==
        3 * tokens * 28672 / 8 * 2);
  CHECK(find(layer_kernels(gpt3_like(), training(), {8, false}, 1, Pass::Forward), KernelClass::Activation)
            .bytes.value() == 2 * 2048 * 4 * 12288 / 8.0 * 2);
}

TEST_CASE("kernels: the recompute pass repeats all forward kernels (full), the attention core (selective), none") {
  const ModelSpec m = gpt3_like();
  CHECK(layer_kernels(m, training(), {8, false}, 1, Pass::Recompute).empty());
  const auto fwd = layer_kernels(m, training(Recompute::Full), {8, true}, 1, Pass::Forward);
  const auto full = layer_kernels(m, training(Recompute::Full), {8, true}, 1, Pass::Recompute);
  CHECK(kinds_of(full) == kinds_of(fwd));
  CHECK(total_bytes(full) == total_bytes(fwd));
  CHECK(std::ranges::all_of(full, [](const Kernel& k) { return k.pass == Pass::Recompute; }));
  const auto selective = layer_kernels(m, training(Recompute::Selective), {8, true}, 1, Pass::Recompute);
  CHECK(kinds_of(selective) == std::vector{KernelClass::AttnScores, KernelClass::Softmax, KernelClass::AttnDropout,
                                           KernelClass::AttnContext});
  // Embedding and logits are never recomputed.
  CHECK(logits_kernels(m, training(Recompute::Full), {8, true}, 1, Pass::Recompute).empty());
  CHECK(embedding_kernels(m, training(Recompute::Full), {8, true}, 1, Pass::Recompute).empty());
}

TEST_CASE("kernels: execution order is Megatron's forward order, reversed for the backward") {
  const auto fwd = layer_kernels(gpt3_like(), training(), {1, false}, 1, Pass::Forward);
  using K = KernelClass;
  CHECK(kinds_of(fwd) == std::vector{K::LayerNorm, K::QkvGemm, K::AttnScores, K::Softmax, K::AttnDropout,
                                     K::AttnContext, K::ProjGemm, K::Dropout, K::Residual, K::LayerNorm,
                                     K::MlpUpGemm, K::Activation, K::MlpDownGemm, K::Dropout, K::Residual});
  auto bwd = kinds_of(layer_kernels(gpt3_like(), training(), {1, false}, 1, Pass::Backward));
  std::ranges::reverse(bwd);
  CHECK(bwd == kinds_of(fwd));
  CHECK(kinds_of(logits_kernels(gpt3_like(), training(), {1, false}, 1, Pass::Forward)) ==
        std::vector{K::LayerNorm, K::Logits, K::CrossEntropy});
  CHECK(kinds_of(logits_kernels(gpt3_like(), training(), {1, false}, 1, Pass::Backward)) ==
        std::vector{K::CrossEntropy, K::Logits, K::LayerNorm});
}
