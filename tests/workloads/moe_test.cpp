// Mixture of experts: the presets' parameter counts, the expert grid's groups, the token exchange's bytes per
// rank, the MoE layer's FLOPs and its imbalance, the step graph's collectives, the memory plan's expert sharding,
// and the plan checks.
#include <doctest/doctest.h>

#include "workloads/gpt_job.hpp"

#include <cmath>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "sim/analytic/analytic_engine.hpp"
#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/kernels.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/schedule.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::h100;
using dtsim::test::moe_job;
using dtsim::test::plan_error;
using dtsim::test::tally_collectives;


TEST_CASE("MoE presets: Mixtral's exact count, DeepSeek-V3's and Qwen3's published sizes, their active parameters") {
  const ModelSpec& mixtral = find_model("mixtral-8x7b");
  CHECK(parameter_count(mixtral) == 46'702'792'704.0);   // the released checkpoint's tensors
  CHECK(active_parameter_count(mixtral) == doctest::Approx(12.88e9).epsilon(0.001));
  CHECK(moe_layer_count(mixtral) == 32);
  const ModelSpec& v3 = find_model("deepseek-v3");
  CHECK(parameter_count(v3) == doctest::Approx(671.0e9).epsilon(0.001));
  CHECK(active_parameter_count(v3) == doctest::Approx(37.5e9).epsilon(0.02));   // "37B activated"
  CHECK(moe_layer_count(v3) == 58);   // the first three layers dense
  CHECK_FALSE(v3.moe_layer(2));
  CHECK(v3.moe_layer(3));
  CHECK(parameter_count(find_model("qwen3-235b-a22b")) == doctest::Approx(235.1e9).epsilon(0.001));
  CHECK(active_parameter_count(find_model("qwen3-235b-a22b")) == doctest::Approx(22.1e9).epsilon(0.01));
  CHECK(parameter_count(find_model("qwen3-30b-a3b")) == doctest::Approx(30.5e9).epsilon(0.002));
  // MLA: DeepSeek-V3's attention is 187.1M a layer (q 1536 and kv 512 ranks, 128 heads of 128 + 64, v 128).
  CHECK(attention_parameters(v3) == doctest::Approx(187.1e6).epsilon(0.001));
}

TEST_CASE("MoE layer frequency and leading dense layers pick the MoE layers") {
  ModelSpec m = find_model("mixtral-8x7b");
  m.moe_layer_freq = 2;
  m.dense_layers = 3;
  std::vector<int> moe;
  for (int l = 0; l < 10; ++l)
    if (m.moe_layer(l)) moe.push_back(l);
  CHECK(moe == std::vector<int>{4, 6, 8});
  const MoeLayerParameters p = moe_layer_parameters(m);
  CHECK(layer_parameters(m, 4) == p.dense() + p.routed());
  CHECK(layer_parameters(m, 3) == layer_parameters(m));
}

TEST_CASE("the expert grid: etp innermost, then ep, then the expert data-parallel replicas") {
  ParallelPlan p;
  p.tp = 2;
  p.dp = 8;
  p.ep = 8;
  p.etp = 1;
  const Placement place(p);
  CHECK(place.expert_group(0, ExpertAxis::Ep) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(place.expert_group(9, ExpertAxis::Ep) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(place.expert_group(3, ExpertAxis::Edp) == std::vector<int>{3, 11});
  CHECK(place.expert_group(3, ExpertAxis::Etp) == std::vector<int>{3});
  p.etp = 2;
  p.ep = 4;
  const Placement wide(p);
  CHECK(wide.expert_group(0, ExpertAxis::Etp) == std::vector<int>{0, 1});
  CHECK(wide.expert_group(0, ExpertAxis::Ep) == std::vector<int>{0, 2, 4, 6});
  CHECK(wide.expert_group(0, ExpertAxis::Edp) == std::vector<int>{0, 8});
}

TEST_CASE("all-to-all bytes per rank: every token's top-k copies, of its sequence-parallel share, at the busiest load") {
  ModelSpec m = find_model("mixtral-8x7b");
  m.seq_length = 4096;
  TrainingSpec t = training_defaults(topology::Precision::Bf16);
  const double copies = 4096.0 * 2 * 4096 * 2;   // tokens x top-2 x hidden x bf16
  MoeTraffic one = moe_traffic(m, t, Sharding{1, false, 8, 1}, 1);
  CHECK(one.all_to_all.value() == copies);
  CHECK(one.expert_tokens == 4096.0 * 2);
  t.sequence_parallel = true;
  MoeTraffic sp = moe_traffic(m, t, Sharding{2, true, 8, 1}, 1);
  CHECK(sp.all_to_all.value() == copies / 2);
  CHECK(sp.expert_tokens == 4096.0);
  MoeTraffic gathered = moe_traffic(m, t, Sharding{2, true, 4, 2}, 1);   // expert TP gathers the TP peers' tokens
  CHECK(gathered.expert_tokens == 4096.0 * 2);
  CHECK(gathered.expert_gather.value() == copies);
  m.expert_imbalance = 1.5;
  CHECK(moe_traffic(m, t, Sharding{2, true, 8, 1}, 2).all_to_all.value() == copies * 1.5 * 2 / 2);
  // One expert-parallel rank has no busier peer: the imbalance does not apply.
  CHECK(moe_traffic(m, t, Sharding{2, true, 1, 2}, 1).expert_gather.value() == copies);
}

TEST_CASE("an MoE layer computes top-k experts' FLOPs per token, and imbalance slows it without adding model FLOPs") {
  ModelSpec m = find_model("mixtral-8x7b");
  m.seq_length = 4096;
  const TrainingSpec t = training_defaults(topology::Precision::Bf16);
  const Sharding s{1, false, 8, 1};
  const auto moe = layer_kernels(m, t, s, 1, Pass::Forward, true);
  const auto dense = layer_kernels(m, t, s, 1, Pass::Forward, false);
  double expert_flops = 0;
  for (const Kernel& k : moe)
    if (k.kind == KernelClass::ExpertUpGemm || k.kind == KernelClass::ExpertDownGemm) expert_flops += k.flops.value();
  const double tokens = 4096;
  CHECK(expert_flops == doctest::Approx(2.0 * tokens * 2 * 3 * 4096.0 * 14336));   // 2 FLOPs x top-2 x 3 matrices
  // The dense layer's MLP is one expert: the MoE layer adds the router and a second expert's FLOPs.
  const double router = 2.0 * tokens * 4096 * 8;
  CHECK(total_flops(moe).value() ==
        doctest::Approx(total_flops(dense).value() + router + 2.0 * tokens * 3 * 4096.0 * 14336));
  m.expert_imbalance = 1.3;
  const auto slow = layer_kernels(m, t, s, 1, Pass::Forward, true);
  CHECK(total_flops(slow).value() == total_flops(moe).value());
  CHECK(kernels_time(slow, h100(), t.precision) > kernels_time(moe, h100(), t.precision));
  for (const Kernel& k : slow)
    if (k.kind == KernelClass::ExpertUpGemm) {
      CHECK(k.load == 1.3);
      CHECK(k.launches == 1);   // one expert per GPU at ep 8
      CHECK(k.gemm->batch == 1);
    }
}

TEST_CASE("the step graph: four all-to-alls a layer per micro-batch over ep, expert gradients over the expert dp group") {
  const Workload w = moe_job(1, 1, 16, 8);
  const StepGraph g = generate_step(w, h100());
  const auto n = tally_collectives(g.classes[0]);
  const int passes = 4 * 4;   // 4 layers x 4 micro-batches
  CHECK(n.at({CollectiveKind::AllToAll, Group::Ep}).count == 4 * passes);
  CHECK(n.at({CollectiveKind::AllToAll, Group::Ep}).bytes ==
        4 * passes * moe_traffic(w.model, *w.training, Sharding{1, false, 8, 1}, 1).all_to_all.value());
  // The distributed optimizer reduce-scatters the experts' gradients over their two replicas, the rest over dp.
  const double grad = bytes_per_element(w.training->grad_dtype);
  const MoeLayerParameters p = moe_layer_parameters(w.model);
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::ExpertDp}).bytes == doctest::Approx(4 * p.routed() / 8 * grad));
  CHECK(n.contains({CollectiveKind::ReduceScatter, Group::Dp}));
  CHECK(g.group_ranks(3, Group::Ep) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(g.group_ranks(3, Group::ExpertDp) == std::vector<int>{3, 11});
  // Without expert parallelism the tokens stay on their GPU: no all-to-all.
  const StepGraph local = generate_step(moe_job(1, 1, 2, 1), h100());
  CHECK_FALSE(tally_collectives(local.classes[0]).contains({CollectiveKind::AllToAll, Group::Ep}));
  // Expert TP: an all-gather and a reduce-scatter over it around the experts, each way.
  const StepGraph etp = generate_step(moe_job(2, 1, 8, 4, 2), h100());
  const auto e = tally_collectives(etp.classes[0]);
  CHECK(e.at({CollectiveKind::AllGather, Group::ExpertTp}).count == 2 * passes);
  CHECK(e.at({CollectiveKind::AllToAll, Group::Ep}).count == 4 * passes);
}

TEST_CASE("memory: routed experts split over ep x etp, their optimizer states sharded over the expert dp group") {
  const Workload w = moe_job(1, 1, 16, 8);
  const MemoryPlan plan = plan_memory(w, h100());
  const MoeLayerParameters p = moe_layer_parameters(w.model);
  const ModelSpec& m = w.model;
  const double dense = 4 * p.dense() + embedding_parameters(m) + logits_parameters(m) + final_norm_parameters(m);
  const double experts = 4 * p.routed() / 8;
  CHECK(plan.parts.params.value() == doctest::Approx((dense + experts) * 2));
  const double optimizer = 4 + optimizer_state_bytes_per_param(*w.training);   // fp32 master and Adam's states
  CHECK(plan.parts.optimizer.value() == doctest::Approx((dense / 16 + experts / 2) * optimizer));
  // Less expert parallelism, more memory.
  CHECK(plan_memory(moe_job(1, 1, 16, 4), h100()).parts.params > plan.parts.params);
  // Under TP the router's weight is whole on every rank, as the norms are: only the rest of the dense part splits.
  const Workload tp2 = moe_job(2, 1, 8, 8, 1);
  const double replicated = 2 * final_norm_parameters(m) + p.router;
  const double dense_tp2 = 4 * ((p.dense() - replicated) / 2 + replicated) + embedding_parameters(m) / 2 +
                           logits_parameters(m) / 2 + final_norm_parameters(m);
  CHECK(plan_memory(tp2, h100()).parts.params.value() == doctest::Approx((dense_tp2 + experts) * 2));
}

TEST_CASE("plan checks of a mixture of experts name the key and what is allowed") {
  Workload w = moe_job(1, 1, 16, 8);
  w.plan.ep = 3;
  CHECK(plan_error(w, 16) == "parallelism.ep: does not divide model.experts 8: ep '3' (allowed: a divisor of experts)");
  w.plan.ep = 8;
  w.plan.tp = 2;
  w.plan.dp = 8;
  w.plan.etp = 4;
  CHECK(plan_error(w, 16) == "parallelism.etp: does not divide tp 2: etp '4' (allowed: a divisor of tp)");
  w.plan.etp = 1;
  CHECK(plan_error(w, 16) == "training.sequence_parallel: must be on for a mixture of experts with tp > 1 (as "
                             "Megatron-Core asserts): '0' (allowed: true)");
  w.training->sequence_parallel = true;
  w.plan.zero = 3;
  CHECK(plan_error(w, 16) == "parallelism.zero: (ZeRO-3) with a mixture of experts is modelled only as PyTorch FSDP "
                             "shards it (parallelism.fsdp: full): zero '3' (allowed: 0, 1 or 2, or parallelism.fsdp: "
                             "full)");
  w.plan.fsdp = Fsdp::Hybrid;
  w.plan.shard_ranks = 8;
  CHECK(plan_error(w, 16) == "parallelism.fsdp: is not modelled with a mixture of experts, so not 'hybrid' (allowed: "
                             "full or none)");
  w.plan.fsdp = Fsdp::None;
  w.plan.shard_ranks = 0;
  w.plan.zero = 1;
  w.plan.ep = 16;
  w.model.experts = 16;
  w.plan.etp = 2;
  CHECK(plan_error(w, 16).starts_with("parallelism.ep: x etp 2 does not divide the tp 2 x dp 8 ranks of a stage"));
  Workload dense = moe_job(1, 1, 2, 1);
  dense.model.experts = 0;
  dense.model.experts_per_token = 0;
  dense.model.expert_ffn_hidden = 0;
  dense.plan.ep = 2;
  CHECK(plan_error(dense, 2).starts_with("parallelism.ep: needs a mixture of experts"));
}

TEST_CASE("model checks of MoE and MLA keys") {
  ModelSpec m = find_model("mixtral-8x7b");
  m.experts_per_token = 9;
  CHECK_THROWS_WITH(validate(m), "model.experts_per_token: out of range for 8 experts: '9' (allowed: 1..8)");
  m.experts_per_token = 2;
  m.dense_layers = 32;
  CHECK_THROWS_WITH(validate(m), "model.dense_layers: leaves no MoE layer of 32: '32' (allowed: 0..31)");
  ModelSpec dense = find_model("llama2-7b");
  dense.shared_experts = 1;
  CHECK_THROWS_AS(validate(dense), InputError);
  dense.shared_experts = 0;
  dense.q_lora_rank = 64;
  CHECK_THROWS_WITH(validate(dense), "model.q_lora_rank: is an MLA size, but model.kv_lora_rank is not set: '64' "
                                     "(allowed: model.kv_lora_rank > 0 beside it)");
}

TEST_CASE("DeepEP: each token crosses to each node holding one of its experts once, then fans out over NVLink") {
  // Four nodes of 32 of Qwen3-235B's 128 experts, top-8: a token misses a node with probability C(96, 8) / C(128, 8).
  double missed = 1;
  for (int i = 0; i < 8; ++i) missed *= (96.0 - i) / (128.0 - i);
  CHECK(distinct_nodes(128, 8, 4) == doctest::Approx(4 * (1 - missed)));
  CHECK(distinct_nodes(128, 8, 4) == doctest::Approx(3.629).epsilon(0.001));
  CHECK(distinct_nodes(8, 2, 1) == 1.0);
  CHECK(distinct_nodes(8, 8, 4) == doctest::Approx(4.0));   // every expert chosen: every node
  Workload w = moe_job(1, 1, 32, 8);
  w.model.experts = 32;
  w.plan.ep = 32;
  w.gpus_per_node = 8;
  w.training->moe_dispatcher = MoeDispatcher::DeepEp;
  check_plan(w, 32);
  CHECK(ep_nodes(w).nodes == 4);
  CHECK(ep_nodes(w).per_node == 8);
  const StepGraph g = generate_step(w, h100());
  CHECK(g.group_ranks(9, Group::EpRail) == std::vector<int>{1, 9, 17, 25});
  CHECK(g.group_ranks(9, Group::EpNode) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  const auto n = tally_collectives(g.classes[0]);
  const int passes = 4 * 4;
  CHECK(n.at({CollectiveKind::AllToAll, Group::EpRail}).count == 4 * passes);
  CHECK(n.at({CollectiveKind::AllToAll, Group::EpNode}).count == 4 * passes);
  CHECK_FALSE(n.contains({CollectiveKind::AllToAll, Group::Ep}));
  const double token = 4096.0 * 4096 * 2;   // a micro-batch's tokens, hidden 4096, bf16
  CHECK(n.at({CollectiveKind::AllToAll, Group::EpRail}).bytes ==
        doctest::Approx(4 * passes * token * distinct_nodes(32, 2, 4)));
  CHECK(n.at({CollectiveKind::AllToAll, Group::EpNode}).bytes == doctest::Approx(4 * passes * token * 2));
  // The RDMA and NVLink stages run side by side: the NVLink all-to-all waits for nothing the RDMA one waits for.
  // Inside one node there is no RDMA stage.
  Workload inside = moe_job(1, 1, 8, 8);
  inside.gpus_per_node = 8;
  inside.training->moe_dispatcher = MoeDispatcher::DeepEp;
  const auto one = tally_collectives(generate_step(inside, h100()).classes[0]);
  CHECK_FALSE(one.contains({CollectiveKind::AllToAll, Group::EpRail}));
  CHECK(one.at({CollectiveKind::AllToAll, Group::EpNode}).count == 4 * passes);
  // Over NVLink a token goes to each GPU holding one of its experts once (DeepEP's is_token_in_rank), not once
  // per expert as Megatron's all-to-all dispatcher sends it: 32 experts top-8 on 8 GPUs, 5.64 GPUs a token, not 8.
  Workload four = moe_job(1, 1, 8, 8);
  four.gpus_per_node = 8;
  four.model.experts = 32;
  four.model.experts_per_token = 8;
  four.training->moe_dispatcher = MoeDispatcher::DeepEp;
  check_plan(four, 8);
  const auto deduplicated = tally_collectives(generate_step(four, h100()).classes[0]);
  CHECK(distinct_nodes(32, 8, 8) == doctest::Approx(5.636).epsilon(0.001));
  CHECK(deduplicated.at({CollectiveKind::AllToAll, Group::EpNode}).bytes ==
        doctest::Approx(4 * passes * token * distinct_nodes(32, 8, 8)));
  four.training->moe_dispatcher = MoeDispatcher::AllToAll;
  const auto copies = tally_collectives(generate_step(four, h100()).classes[0]);
  CHECK(copies.at({CollectiveKind::AllToAll, Group::Ep}).bytes == doctest::Approx(4 * passes * token * 8));
  // The first group even, another not: 3-rank groups on nodes of 4 (ranks 3, 4, 5 straddle two nodes 1 + 2).
  Workload straddling = moe_job(1, 1, 12, 1);
  straddling.model.experts = 6;
  straddling.plan.ep = 3;
  straddling.gpus_per_node = 4;
  straddling.training->moe_dispatcher = MoeDispatcher::DeepEp;
  CHECK(plan_error(straddling, 12).starts_with("training.moe_dispatcher: needs each expert-parallel group"));
  // A group split unevenly over nodes (12 of them on nodes of 8) has no rail structure.
  Workload uneven = moe_job(1, 1, 24, 8);
  uneven.model.experts = 24;
  uneven.plan.ep = 12;
  uneven.gpus_per_node = 8;
  uneven.training->moe_dispatcher = MoeDispatcher::DeepEp;
  CHECK(plan_error(uneven, 24).starts_with("training.moe_dispatcher: needs each expert-parallel group to fill whole "
                                           "nodes or sit within one (ep 12 on nodes of 8 GPUs)"));
}
