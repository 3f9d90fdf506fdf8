// training.recompute_modules (Megatron-Core's --recompute-modules): the kernels each module's recompute pass
// reruns, the collectives it replays, and the activations it drops from the memory plan.
#include <doctest/doctest.h>

#include <variant>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/kernels.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/plan.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::tally_collectives;
using M = RecomputeModule;

namespace {

TrainingSpec selective(unsigned modules, bool sp = false) {
  TrainingSpec t = training_defaults(topology::Precision::Bf16);
  t.recompute = Recompute::Selective;
  t.recompute_modules = modules;
  t.sequence_parallel = sp;
  t.attention = AttentionKernel::Flash;   // Megatron-Core's
  return t;
}

ModelSpec mixtral() {
  ModelSpec m = find_model("mixtral-8x7b");
  m.seq_length = 4096;
  return m;
}

std::vector<KernelClass> kinds(const std::vector<Kernel>& ks) {
  std::vector<KernelClass> out;
  for (const Kernel& k : ks) out.push_back(k.kind);
  return out;
}

// The forward kernels of `kind` (in order), to compare a recompute pass with.
std::vector<Kernel> forward_of(const std::vector<Kernel>& forward, KernelClass kind) {
  std::vector<Kernel> out;
  for (const Kernel& k : forward)
    if (k.kind == kind) out.push_back(k);
  return out;
}

double bytes_of(const std::vector<Kernel>& ks) {
  double b = 0;
  for (const Kernel& k : ks) b += k.bytes.value();
  return b;
}

}  // namespace

TEST_CASE("recompute_modules: each module's recompute pass reruns its own forward kernels and nothing else") {
  using K = KernelClass;
  const ModelSpec m = mixtral();
  const Sharding s{1, false, 8, 1};
  const auto recompute = [&](unsigned modules, bool moe) {
    return layer_kernels(m, selective(modules), s, 1, Pass::Recompute, moe);
  };
  const auto forward = layer_kernels(m, selective(bit(M::CoreAttn)), s, 1, Pass::Forward, true);
  // core_attn, the default: the attention core alone, as selective recomputation always did.
  CHECK(kinds(recompute(bit(M::CoreAttn), true)) == std::vector<K>{K::FlashAttention});
  // layernorm: the norms that are modules of their own with Transformer Engine: an MoE layer's pre-MLP norm (the
  // input norm is fused into the QKV projection, a dense layer's pre-MLP norm into its first MLP projection).
  const auto norms = recompute(bit(M::Layernorm), true);
  CHECK(kinds(norms) == std::vector<K>{K::LayerNorm});
  CHECK(bytes_of(norms) == bytes_of(forward_of(forward, K::LayerNorm)) / 2);
  CHECK(recompute(bit(M::Layernorm), false).empty());
  // moe_act: the experts' activation only.
  const auto act = recompute(bit(M::MoeAct), true);
  CHECK(kinds(act) == std::vector<K>{K::Activation});
  CHECK(bytes_of(act) == bytes_of(forward_of(forward, K::Activation)));
  // moe: the whole MoE block, router to unpermute; a dense layer has none.
  CHECK(kinds(recompute(bit(M::Moe), true)) == std::vector<K>{K::Router, K::RouterTopk, K::TokenPermute, K::ExpertUpGemm,
                                                              K::Activation, K::ExpertDownGemm, K::TokenUnpermute});
  CHECK(recompute(bit(M::Moe), false).empty());
  // mlp: a dense layer's MLP; Mixtral's MoE layers have no dense MLP and no shared experts.
  CHECK(kinds(recompute(bit(M::Mlp), false)) == std::vector<K>{K::MlpUpGemm, K::Activation, K::MlpDownGemm});
  CHECK(recompute(bit(M::Mlp), true).empty());
  CHECK(recompute(bit(M::SharedExperts), true).empty());
  // Modules add up.
  CHECK(recompute(bit(M::Layernorm) | bit(M::MoeAct) | bit(M::CoreAttn), true).size() == 3);
  // Full recomputation reruns everything, whatever the modules say.
  TrainingSpec full = selective(bit(M::Layernorm));
  full.recompute = Recompute::Full;
  CHECK(layer_kernels(m, full, s, 1, Pass::Recompute, true).size() == forward.size());
}

TEST_CASE("recompute_modules: shared_experts reruns the shared MLP, mla_up_proj MLA's two up projections") {
  const ModelSpec v3 = find_model("deepseek-v3");
  const Sharding s{2, true, 8, 1};
  const auto shared = layer_kernels(v3, selective(bit(M::SharedExperts), true), s, 1, Pass::Recompute, true);
  CHECK(kinds(shared) ==
        std::vector<KernelClass>{KernelClass::MlpUpGemm, KernelClass::Activation, KernelClass::MlpDownGemm});
  // Q from its 1,536-wide latent to 128 heads of 128 + 64, K and V from the 512-wide one to 128 x (128 + 128),
  // over tp 2: 2 FLOPs per multiply-add, 4,096 tokens.
  // MLA's input norm is a module of its own: layernorm recomputes it too.
  CHECK(layer_kernels(v3, selective(bit(M::Layernorm), true), s, 1, Pass::Recompute, true).size() == 2);
  const auto up = layer_kernels(v3, selective(bit(M::MlaUpProj), true), s, 1, Pass::Recompute, true);
  REQUIRE(kinds(up) == std::vector<KernelClass>{KernelClass::MlaUpGemm, KernelClass::MlaUpGemm});
  const double tokens = 4096;
  CHECK(total_flops(up).value() == doctest::Approx(2 * tokens * (1536.0 * 128 * 192 + 512.0 * 128 * 256) / 2));
  // They are part of the QKV GEMM's FLOPs, which counts the down projections too.
  const auto forward = layer_kernels(v3, selective(bit(M::CoreAttn), true), s, 1, Pass::Forward, true);
  CHECK(total_flops(up).value() < total_flops(forward_of(forward, KernelClass::QkvGemm)).value());
  // Without a Q latent (DeepSeek-V2-Lite's q_lora_rank 0), Q's projection from the hidden state is recomputed.
  ModelSpec lite = v3;
  lite.q_lora_rank = 0;
  const auto full_q = layer_kernels(lite, selective(bit(M::MlaUpProj), true), s, 1, Pass::Recompute, true);
  CHECK(total_flops(full_q).value() == doctest::Approx(2 * tokens * (7168.0 * 128 * 192 + 512.0 * 128 * 256) / 2));
  // A model without MLA has nothing for mla_up_proj to recompute.
  CHECK(layer_kernels(mixtral(), selective(bit(M::MlaUpProj)), Sharding{1, false, 8, 1}, 1, Pass::Recompute, true)
            .empty());
}

TEST_CASE("recompute_modules: moe replays the layer's token exchange, the norms and moe_act replay no collective") {
  const auto all_to_alls = [](unsigned modules) {
    Workload w;
    w.model = mixtral();
    w.model.layers = 2;
    w.training = selective(modules);
    w.training->global_batch = 16;
    w.plan.dp = 8;
    w.plan.ep = 8;
    w.plan.zero = 1;
    check_plan(w, 8);
    const StepGraph g = generate_step(w, topology::find_gpu("h100-sxm5-80gb"));
    return tally_collectives(g.classes[0]).at({CollectiveKind::AllToAll, Group::Ep}).count;
  };
  const int passes = 2 * 2;   // 2 layers x 2 micro-batches
  CHECK(all_to_alls(bit(M::CoreAttn)) == 4 * passes);   // dispatch and combine, forward and backward
  CHECK(all_to_alls(bit(M::Layernorm) | bit(M::MoeAct)) == 4 * passes);
  CHECK(all_to_alls(bit(M::Moe)) == 6 * passes);        // and again in the recompute pass
}

TEST_CASE("recompute_modules: mlp replays the MLP's TP collectives under sequence parallelism, the norms none") {
  const auto tp_collectives = [](unsigned modules) {
    Workload w;
    w.model = find_model("llama2-7b");
    w.model.layers = 2;
    w.training = selective(modules, true);
    w.training->global_batch = 2;
    w.plan.tp = 2;
    check_plan(w, 2);
    const StepGraph g = generate_step(w, topology::find_gpu("h100-sxm5-80gb"));
    int n = 0;
    for (const Op& op : g.classes[0].ops)
      if (const auto* c = std::get_if<CollectiveOp>(&op.body); c != nullptr && c->group == Group::Tp) ++n;
    return n;
  };
  const int plain = tp_collectives(bit(M::CoreAttn));
  CHECK(tp_collectives(bit(M::CoreAttn) | bit(M::Layernorm)) == plain);
  // The MLP's all-gather before its up projection and reduce-scatter after its down projection, again in each
  // layer's recompute pass (2 layers x 2 micro-batches); the ring's and pipelined schedules split each into ops.
  CHECK(tp_collectives(bit(M::CoreAttn) | bit(M::Mlp)) > plain + 2 * 2 * 2 - 1);
}

TEST_CASE("recompute_modules: a module that recomputes nothing on the model is refused, naming it") {
  const auto error = [](const char* preset, unsigned modules) {
    Workload w;
    w.model = find_model(preset);
    w.training = selective(modules);
    w.training->global_batch = 8;
    w.plan.dp = 8;
    try {
      check_plan(w, 8);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("mixtral-8x7b", bit(M::MlaUpProj)) ==
        "training.recompute_modules: recomputes nothing on this model (no multi-head latent attention): "
        "'mla_up_proj' (allowed: the modules the model has, or remove it)");
  CHECK(error("llama2-7b", bit(M::MoeAct)).find("'moe_act'") != std::string::npos);
  CHECK(error("mixtral-8x7b", bit(M::Mlp)).find("no dense layer") != std::string::npos);
  CHECK(error("mixtral-8x7b", bit(M::SharedExperts)).find("no shared experts") != std::string::npos);
  CHECK(error("deepseek-v3", bit(M::MlaUpProj) | bit(M::Mlp) | bit(M::SharedExperts)) == "no error");
}

TEST_CASE("recompute_modules: each module drops its tensors from a layer's activations") {
  const ModelSpec m = mixtral();
  const double sb = 4096, h = 4096, e = 2;
  const auto bytes = [&](unsigned modules, bool moe, int tp = 1, int etp = 1) {
    return layer_activation_bytes(m, selective(modules, tp > 1), tp, 1, moe, etp).value();
  };
  const double base = bytes(bit(M::CoreAttn), true);
  // layernorm: the pre-MLP norm's output of an MoE layer, e sbh, split over sequence parallelism; a dense layer
  // has no norm of its own to drop.
  CHECK(base - bytes(bit(M::CoreAttn) | bit(M::Layernorm), true) == doctest::Approx(e * sb * h));
  CHECK(bytes(bit(M::CoreAttn), true, 4) - bytes(bit(M::CoreAttn) | bit(M::Layernorm), true, 4) ==
        doctest::Approx(e * sb * h / 4));
  CHECK(bytes(bit(M::CoreAttn), false) == bytes(bit(M::CoreAttn) | bit(M::Layernorm), false));
  // moe_act: the activation output of every token copy an expert computes, expert_ffn wide.
  const double copies = sb * 2;   // top-2
  CHECK(base - bytes(bit(M::CoreAttn) | bit(M::MoeAct), true) == doctest::Approx(copies * e * 14336));
  // moe: the routed tensors (in and out of the experts, h each; gate, up and activation, 3 x ffn) and the
  // router's fp32 probabilities over 8 experts.
  CHECK(base - bytes(bit(M::CoreAttn) | bit(M::Moe), true) ==
        doctest::Approx(copies * e * (2 * h + 3 * 14336.0) + sb * 8 * 4));
  // mlp on a dense layer: gate, up and activation outputs, split over TP.
  CHECK(bytes(bit(M::CoreAttn), false, 2) - bytes(bit(M::CoreAttn) | bit(M::Mlp), false, 2) ==
        doctest::Approx(sb * e * 3 * 14336.0 / 2));
  // Without core_attn the attention core's statistics stay.
  CHECK(bytes(bit(M::Layernorm), true) - bytes(bit(M::Layernorm) | bit(M::CoreAttn), true) ==
        doctest::Approx(sb * 32 * 4));
  // mla_up_proj: Q, K and V, split over TP (the latents they come from are kept either way).
  const ModelSpec v3 = find_model("deepseek-v3");
  const auto v3_bytes = [&](unsigned modules) {
    return layer_activation_bytes(v3, selective(modules, true), 2, 1, true, 1).value();
  };
  const double seq = v3.seq_length;
  const double qkv = seq * e * (v3.q_dim() + 2.0 * v3.kv_dim()) / 2;
  CHECK(v3_bytes(bit(M::CoreAttn)) - v3_bytes(bit(M::CoreAttn) | bit(M::MlaUpProj)) == doctest::Approx(qkv));
}
