// Serving a mixture of experts: the experts a batch's tokens hit and the busiest GPU's share of them, the kernels
// of an MoE layer's decode and prefill, and the step graph that runs them beside dense layers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <variant>

#include "topology/catalog.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/model.hpp"
#include "workloads/plan.hpp"
#include "workloads/request_stream.hpp"
#include "workloads/serving.hpp"
#include "workloads/gpt_job.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::plan_error;

namespace {

InferenceSpec moe_batch(int batch, int prompt = 32, int output = 128) {
  InferenceSpec inf;
  inf.batch = batch;
  inf.prompt_tokens = prompt;
  inf.output_tokens = output;
  inf.context = prompt + output;
  inf.weights = Precision::Bf16;
  inf.kv_cache = Precision::Bf16;
  return inf;
}

Workload moe_serving(const ModelSpec& m, const InferenceSpec& inf, int tp, int ep = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.ep = ep;
  p.etp = tp / ep;
  return {m, std::nullopt, inf, p};
}

// The routed experts' weight bytes the kernels read: each grouped GEMM's bytes less its activations in and out.
double expert_weight_bytes(const std::vector<Kernel>& kernels) {
  double sum = 0;
  for (const Kernel& k : kernels)
    if (k.kind == KernelClass::ExpertUpGemm || k.kind == KernelClass::ExpertDownGemm)
      sum += k.bytes.value() - 2 * k.gemm->m * k.gemm->batch * (k.gemm->k + k.gemm->n);
  return sum;
}

double compute_bytes(const StepGraph& g) {
  double sum = 0;
  for (const Op& op : g.classes.front().ops)
    if (const auto* c = std::get_if<ComputeOp>(&op.body)) sum += c->bytes.value();
  return sum;
}

}  // namespace

TEST_CASE("serving MoE: the expected maximum of n standard normals, by quadrature") {
  CHECK(expected_normal_maximum(1) == 0.0);
  CHECK(expected_normal_maximum(2) == doctest::Approx(1.0 / std::sqrt(std::numbers::pi)).epsilon(1e-4));
  // Tabulated values (Tippett 1925; Harter 1961): n = 8 gives 1.4236, n = 64 gives 2.3440.
  CHECK(expected_normal_maximum(8) == doctest::Approx(1.4236).epsilon(1e-3));
  CHECK(expected_normal_maximum(64) == doctest::Approx(2.3440).epsilon(1e-3));
}

TEST_CASE("serving MoE: the experts a batch hits and the busiest GPU's share") {
  const ModelSpec m = find_model("mixtral-8x7b");   // 8 experts, top 2
  // One token hits exactly its two experts, whatever the split.
  CHECK(serving_expert_load(m, 1, 1).experts == doctest::Approx(2.0));
  CHECK(serving_expert_load(m, 1, 1).rows == doctest::Approx(2.0));
  // Eight tokens: each expert missed with (6/8)^8, so 8 x (1 - 0.75^8) = 7.2 experts read on one GPU holding all.
  CHECK(serving_expert_load(m, 8, 1).experts == doctest::Approx(8 * (1 - std::pow(0.75, 8))));
  CHECK(serving_expert_load(m, 8, 1).rows == doctest::Approx(16.0));
  // Over two GPUs the busiest holds more than half of what is hit, never more than its four experts.
  const ExpertLoad two = serving_expert_load(m, 8, 2);
  CHECK(two.experts > 3.6);
  CHECK(two.experts <= 4.0);
  CHECK(two.rows > 8.0);
  // A large batch hits every expert, and the busiest GPU's rows approach the mean share.
  const ExpertLoad large = serving_expert_load(m, 8192, 8);
  CHECK(large.experts == doctest::Approx(1.0));
  CHECK(large.rows / (8192 * 2 / 8.0) == doctest::Approx(1.0).epsilon(0.05));
  // A stated imbalance is a floor on the busiest GPU's rows.
  ModelSpec skewed = m;
  skewed.expert_imbalance = 1.5;
  CHECK(serving_expert_load(skewed, 8192, 8).rows == doctest::Approx(1.5 * 8192 * 2 / 8.0));
}

TEST_CASE("serving MoE: a decode step reads the weights of the experts its tokens hit, split over the GPUs") {
  const ModelSpec m = find_model("mixtral-8x7b");
  const double per_expert = 3.0 * m.hidden * m.expert_width() * 2;   // gate, up and down, bf16
  for (const int tp : {1, 2, 8}) {
    CAPTURE(tp);
    const Sharding shard{.tp = tp, .ep = 1, .etp = tp};
    for (const int batch : {1, 8, 256}) {
      CAPTURE(batch);
      const InferenceSpec inf = moe_batch(batch);
      const ServingPass decode = serving_pass(inf, ServingPhase::Decode);
      const auto kernels = serving_layer_kernels(m, inf, shard, std::span(&decode, 1), true);
      const double hit = serving_expert_load(m, batch, 1).experts;
      CHECK(expert_weight_bytes(kernels) == doctest::Approx(hit * per_expert / tp));
      // FLOPs: 2 per weight per token copy (k copies a token), whatever the experts hit.
      double flops = 0;
      for (const Kernel& k : kernels)
        if (k.kind == KernelClass::ExpertUpGemm || k.kind == KernelClass::ExpertDownGemm) flops += k.flops.value();
      CHECK(flops == doctest::Approx(2.0 * batch * 2 * 3.0 * m.hidden * m.expert_width() / tp));
    }
  }
  // Expert parallelism: each GPU reads its own experts' whole weights, the busiest GPU's hits.
  const InferenceSpec inf = moe_batch(8);
  const ServingPass decode = serving_pass(inf, ServingPhase::Decode);
  const auto ep = serving_layer_kernels(m, inf, Sharding{.tp = 2, .ep = 2, .etp = 1}, std::span(&decode, 1), true);
  CHECK(expert_weight_bytes(ep) == doctest::Approx(serving_expert_load(m, 8, 2).experts * per_expert));
}

TEST_CASE("serving MoE: a batch-1 decode step reads about the active parameters, not all of them") {
  const ModelSpec m = find_model("mixtral-8x7b");
  const InferenceSpec inf = moe_batch(1);
  const topology::GpuSpec& h100 = topology::find_gpu("h100-sxm5-80gb");
  const StepGraph g = generate_serving_step(moe_serving(m, inf, 2), h100, serving_pass(inf, ServingPhase::Decode));
  // bf16 over tp 2; the input embedding is only looked up (a token's row), not read whole
  const double weights = 2.0 * (active_parameter_count(m) - static_cast<double>(m.vocab) * m.hidden) / 2;
  CHECK(compute_bytes(g) > weights);
  CHECK(compute_bytes(g) < 1.05 * weights);   // the KV cache and activations are small at 160 tokens
  CHECK(compute_bytes(g) < 0.4 * 2.0 * parameter_count(m) / 2);
  // Two all-reduces per layer, as a dense model's.
  int all_reduces = 0;
  for (const Op& op : g.classes.front().ops) all_reduces += std::holds_alternative<CollectiveOp>(op.body) ? 1 : 0;
  CHECK(all_reduces == 2 * m.layers + 1);   // and the logits' gather
}

TEST_CASE("serving MoE: dense layers stay dense, shared experts run on every token") {
  ModelSpec m = find_model("mixtral-8x7b");
  m.dense_layers = 2;
  m.shared_experts = 1;
  const InferenceSpec inf = moe_batch(4);
  const topology::GpuSpec& h100 = topology::find_gpu("h100-sxm5-80gb");
  const StepGraph g = generate_serving_step(moe_serving(m, inf, 2), h100, serving_pass(inf, ServingPhase::Decode));
  std::vector<double> mlp;   // each layer's second compute op (the MLP block)
  int seen = 0;
  for (const Op& op : g.classes.front().ops)
    if (const auto* c = std::get_if<ComputeOp>(&op.body); c && c->scope == Scope::Layer && seen++ % 2 == 1)
      mlp.push_back(c->bytes.value());
  REQUIRE(mlp.size() == static_cast<std::size_t>(m.layers));
  CHECK(mlp[0] == doctest::Approx(mlp[1]));
  CHECK(mlp[2] > 2 * mlp[0]);   // 4 tokens hit about 4 x 2 experts' weights and the shared expert's
  const auto kernels = serving_moe_kernels(m, inf, Sharding{.tp = 2, .ep = 1, .etp = 2}, 4);
  CHECK(std::ranges::count(kernels, KernelClass::MlpUpGemm, &Kernel::kind) == 1);
  CHECK(std::ranges::count(kernels, KernelClass::ExpertUpGemm, &Kernel::kind) == 1);
}

TEST_CASE("serving MoE: the plan checks the experts' split, and latent attention beside disaggregation") {
  const ModelSpec m = find_model("mixtral-8x7b");
  const InferenceSpec inf = moe_batch(8);
  CHECK_NOTHROW(check_plan(moe_serving(m, inf, 2, 1), 2));
  CHECK_NOTHROW(check_plan(moe_serving(m, inf, 2, 2), 2));
  Workload halves = moe_serving(m, inf, 4, 2);   // ep 2 x etp 1 on tp 4: experts repeated within the group
  halves.plan.etp = 1;
  CHECK_THROWS_AS(check_plan(halves, 4), InputError);
  Workload mla = moe_serving(find_model("deepseek-v3"), inf, 8, 8);
  CHECK_NOTHROW(check_plan(mla, 8));
  mla.inference->disaggregation = Disaggregation{};   // KV transfers by head shares: not a latent cache's
  CHECK_THROWS_WITH_AS(check_plan(mla, 8), doctest::Contains("model.kv_lora_rank"), InputError);
}

TEST_CASE("serving MLA: a token caches one latent a layer, whole on every GPU of the TP group") {
  const ModelSpec m = find_model("deepseek-v3");
  // (kv_lora_rank 512 + rope 64) x 61 layers x 2 B: 70,272 B a token (DeepSeek-V2's (d_c + d_h^R) x l elements).
  CHECK(kv_bytes_per_token(m, Precision::Bf16).value() == doctest::Approx(70272.0));
  const InferenceSpec inf = moe_batch(4, 1000, 24);
  CHECK(kv_cache_bytes(m, inf, 8).value() == doctest::Approx(kv_cache_bytes(m, inf, 1).value()));
  CHECK(kv_split(m, 8) == 1);
  CHECK(kv_split(find_model("mixtral-8x7b"), 8) == 8);
  // The down projections are replicated: a GPU of TP 8 holds more than an eighth of the weights.
  InferenceSpec fp8 = inf;
  fp8.weights = Precision::Fp8;
  const MemoryPlan plan = plan_memory(moe_serving(m, fp8, 8, 8), topology::find_gpu("h200-sxm-141gb"));
  const double replicated = 61.0 * 7168 * (1536 + 512 + 64);
  const double absorbed = 61.0 * 128 * 512 * (128 + 128) * 2 / 8;   // 16-bit W_UK and W_UV, split by heads
  CHECK(plan.parts.params.value() == doctest::Approx(parameter_count(m) / 8 + replicated * 7.0 / 8 + absorbed));
}

TEST_CASE("serving MLA: decode attends over the latent once for every head, a prompt up-projects its keys") {
  const ModelSpec m = find_model("deepseek-v3");
  const InferenceSpec inf = moe_batch(4, 1000, 24);
  const ServingPass decode{ServingPhase::Decode, 4, 1, 1000, true};
  for (const int tp : {1, 8}) {
    CAPTURE(tp);
    const Kernel a = serving_attention_kernel(m, inf, tp, decode);
    const double heads = 128.0 / tp;
    // The cache read: 4 sequences x 1,000 tokens x 576 x 2 B, the same at any tp; Q in and the output out per head.
    CHECK(a.bytes.value() == doctest::Approx(4 * 1000 * 576 * 2.0 + 4 * heads * (2 * 512 + 64) * 2.0));
    CHECK(a.flops.value() == doctest::Approx(2.0 * 4 * 1000 * heads * (2 * 512 + 64)));
    CHECK_FALSE(a.attention->causal);
  }
  const ServingPass prompt{ServingPhase::Prefill, 1, 1000, 1000, true};
  const Kernel p = serving_attention_kernel(m, inf, 8, prompt);
  CHECK(p.flops.value() == doctest::Approx(2.0 * 1000 * 1000 * 16 * (128 + 64 + 128)));
  CHECK(p.attention->causal);
  // Decode tokens absorb W_UK and W_UV (per head, 16 heads a GPU at TP 8); prompt tokens run kv_b instead.
  const Sharding shard = serving_sharding(moe_serving(m, inf, 8, 8), topology::find_gpu("h200-sxm-141gb"));
  const auto decoding = serving_layer_kernels(m, inf, shard, std::span(&decode, 1), true);
  const auto prompting = serving_layer_kernels(m, inf, shard, std::span(&prompt, 1), true);
  const auto batched = [](const std::vector<Kernel>& ks) {
    return std::ranges::count_if(ks, [](const Kernel& k) { return k.gemm && k.gemm->batch == 16; });
  };
  CHECK(batched(decoding) == 2);
  CHECK(batched(prompting) == 0);
  const auto up = [](const std::vector<Kernel>& ks) { return std::ranges::count(ks, KernelClass::MlaUpGemm, &Kernel::kind); };
  CHECK(up(decoding) == 3);    // q_b, W_UK, W_UV
  CHECK(up(prompting) == 2);   // q_b, kv_b
}

TEST_CASE("serving MoE, attention data parallelism: each GPU routes its own tokens, its experts take every GPU's") {
  const ModelSpec m = find_model("mixtral-8x7b");
  const InferenceSpec inf = moe_batch(16);
  ParallelPlan p;
  p.tp = 1;
  p.dp = 8;
  p.ep = 8;
  const Workload w{m, std::nullopt, inf, p};
  REQUIRE(attention_data_parallel(w));
  CHECK(serving_expert_tp(p) == 1);
  const Sharding s = serving_sharding(w, topology::find_gpu("h100-sxm5-80gb"));
  CHECK(s.attention_dp == 8);
  CHECK_NOTHROW(check_plan(w, 8));
  // The router on this GPU's 16 tokens; the experts on the copies of all 8 x 16 tokens routed to this GPU's one expert.
  const auto kernels = serving_moe_kernels(m, inf, s, 16);
  const auto kernel = [&](KernelClass k) { return *std::ranges::find(kernels, k, &Kernel::kind); };
  CHECK(kernel(KernelClass::Router).gemm->m == 16);
  const ExpertLoad load = serving_expert_load(m, 8 * 16, 8);
  CHECK(kernel(KernelClass::ExpertUpGemm).gemm->m * kernel(KernelClass::ExpertUpGemm).gemm->batch ==
        doctest::Approx(load.rows));
  CHECK(load.rows >= 8 * 16 * 2 / 8.0);
  // Independent replicas (tp 8, ep 8 on each) route every token of their own on all eight GPUs instead.
  CHECK_FALSE(attention_data_parallel(moe_serving(m, inf, 8, 8)));

  // The step: per MoE layer the tokens to their experts' GPUs and back (two all-to-alls over ep, the busiest GPU's
  // copies), and no TP all-reduce; the MoE layers' compute in three parts around them. bf16 weights: both
  // exchanges 16-bit; fp8 weights computing in fp8: the dispatch in fp8 with its scales, the combine 16-bit.
  const auto exchanges = [&](const Workload& job) {
    std::vector<double> bytes;
    const StepGraph g = generate_serving_step(job, topology::find_gpu("h100-sxm5-80gb"),
                                              serving_pass(*job.inference, ServingPhase::Decode));
    for (const Op& op : g.classes.front().ops)
      if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
        CHECK((c->kind == CollectiveKind::AllToAll && c->group == Group::Ep));
        bytes.push_back(c->bytes.value());
      }
    return bytes;
  };
  const double rows = serving_expert_load(m, 8 * 16, 8).rows;
  const std::vector<double> sixteen = exchanges(w);
  REQUIRE(sixteen.size() == 2 * static_cast<std::size_t>(m.layers));
  CHECK(sixteen[0] == doctest::Approx(rows * m.hidden * 2));
  CHECK(sixteen[1] == doctest::Approx(rows * m.hidden * 2));
  Workload fp8 = w;
  fp8.inference->weights = Precision::Fp8;
  const std::vector<double> eight = exchanges(fp8);
  CHECK(eight[0] == doctest::Approx(rows * m.hidden * (1.0 + 4.0 / 128)));
  CHECK(eight[1] == doctest::Approx(rows * m.hidden * 2));

  // The memory plan: the attention and embeddings whole on each GPU, the routed experts over ep.
  const double routed = moe_layer_count(m) * moe_layer_parameters(m).routed();
  const double n = parameter_count(m);
  CHECK(plan_memory(w, topology::find_gpu("h100-sxm5-80gb")).parts.params.value() ==
        doctest::Approx((n - routed + routed / 8) * 2));
}

TEST_CASE("serving MoE, attention data parallelism: what it is not modelled with is refused") {
  const ModelSpec m = find_model("mixtral-8x7b");
  const auto refused = [&](int tp, int dp, int ep, int pp, const char* key) {
    ParallelPlan p;
    p.tp = tp;
    p.dp = dp;
    p.ep = ep;
    p.pp = pp;
    const Workload w{m, std::nullopt, moe_batch(4), p};
    CAPTURE(key);
    CHECK(plan_error(w, tp * dp * pp).find(key) == 0);
  };
  refused(2, 4, 8, 1, "parallelism.tp");   // attention TP inside each replica
  refused(1, 8, 8, 2, "parallelism.pp");
  refused(1, 8, 4, 1, "parallelism.etp");  // ep 4 x etp 2 over tp 1 x dp 8: experts split within the group
  // Disaggregated pools: each would need its own expert grid. A stream in one pool runs.
  ParallelPlan p;
  p.dp = 8;
  p.ep = 8;
  InferenceSpec stream = moe_batch(4);
  stream.requests = RequestStream{};
  CHECK(plan_error(Workload{m, std::nullopt, stream, p}, 8) == "no error");
  stream.disaggregation = Disaggregation{};
  CHECK(plan_error(Workload{m, std::nullopt, stream, p}, 8).find("inference.disaggregation") == 0);
}
