// FSDP (PyTorch FSDP2 semantics): one all-gather per layer before its forward and again before its backward, one
// reduce-scatter per layer when its backward ends; hybrid sharding within a node with the shards' all-reduce
// across nodes; the memory plan's shards; the plan checks. ZeRO-3 (DeepSpeed) gathers per module instead.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/gpt_job.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::moe_job;
using dtsim::test::preset_job;
using dtsim::test::plan_error;
using dtsim::test::tally_collectives;

namespace {

// Llama-3-8B's layer, 4 of them, on `dp` GPUs, sharded by `fsdp` (shard: hybrid's node size in dp ranks).
Workload fsdp_job(Fsdp fsdp, int dp, int shard = 0) {
  Workload w;
  w.model = find_model("llama3-8b");
  w.model.layers = 4;
  w.training = training_defaults(topology::Precision::Bf16);
  w.training->global_batch = 2 * dp;
  w.training->attention = AttentionKernel::Flash;
  w.plan.dp = dp;
  w.plan.zero = 3;
  w.plan.fsdp = fsdp;
  w.plan.shard_ranks = shard;
  check_plan(w, dp);
  return w;
}

}  // namespace

TEST_CASE("fsdp full: a layer gathered whole before its forward and its backward, reduce-scattered after it") {
  const Workload w = fsdp_job(Fsdp::Full, 16);
  const RankClass c = generate_step(w, topology::find_gpu("h100-sxm5-80gb")).classes[0];
  const auto n = tally_collectives(c, true);
  const int passes = 4 * 2;   // 4 layers x 2 micro-batches
  const double layer = layer_parameters(w.model);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).count == 2 * passes);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).bytes == doctest::Approx(2 * passes * layer * 2));   // bf16
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::Dp}).count == passes);   // one per layer pass (fp32)
  // The embedding and the output layer are units of their own (torchtitan's apply_fsdp_to_decoder): the embedding
  // gathered before its forward and its backward, the output layer (with the final norm) before its forward only,
  // each reduce-scattered when its backward ends.
  const auto all = tally_collectives(c);
  const double embedding = embedding_parameters(w.model);
  const double head = logits_parameters(w.model) + final_norm_parameters(w.model);
  CHECK(all.at({CollectiveKind::AllGather, Group::Dp}).count == 2 * passes + 3 * 2);
  CHECK(all.at({CollectiveKind::AllGather, Group::Dp}).bytes ==
        doctest::Approx((2 * passes * layer + 2 * (2 * embedding + head)) * 2));
  CHECK(all.at({CollectiveKind::ReduceScatter, Group::Dp}).count == passes + 2 * 2);
  // DeepSpeed's ZeRO-3 gathers the same layer as four modules, and the output layer again for its backward.
  Workload zero3 = w;
  zero3.plan.fsdp = Fsdp::None;
  const RankClass zc = generate_step(zero3, topology::find_gpu("h100-sxm5-80gb")).classes[0];
  const auto z = tally_collectives(zc, true);
  CHECK(z.at({CollectiveKind::AllGather, Group::Dp}).count == 4 * 2 * passes);
  CHECK(z.at({CollectiveKind::AllGather, Group::Dp}).bytes ==
        doctest::Approx(n.at({CollectiveKind::AllGather, Group::Dp}).bytes));
  CHECK(tally_collectives(zc).at({CollectiveKind::AllGather, Group::Dp}).count == 4 * 2 * passes + 4 * 2);
}

TEST_CASE("fsdp hybrid: gathers and reduce-scatters within the node, each shard all-reduced with its replicas") {
  const Workload w = fsdp_job(Fsdp::Hybrid, 32, 8);
  const StepGraph g = generate_step(w, topology::find_gpu("h100-sxm5-80gb"));
  CHECK(g.group_ranks(9, Group::Shard) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(g.group_ranks(9, Group::Replica) == std::vector<int>{1, 9, 17, 25});
  const auto n = tally_collectives(g.classes[0], true);
  CHECK_FALSE(tally_collectives(g.classes[0]).contains({CollectiveKind::AllGather, Group::Dp}));
  CHECK(n.at({CollectiveKind::AllGather, Group::Shard}).count == 2 * 4 * 2);
  const auto& rs = n.at({CollectiveKind::ReduceScatter, Group::Shard});
  const auto& ar = n.at({CollectiveKind::AllReduce, Group::Replica});
  CHECK(ar.count == rs.count);
  CHECK(ar.bytes == doctest::Approx(rs.bytes / 8));
  // Memory: sharded over the node's 8 ranks, not all 32.
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const MemoryPlan hybrid = plan_memory(w, gpu);
  const MemoryPlan full = plan_memory(fsdp_job(Fsdp::Full, 32), gpu);
  CHECK(hybrid.parts.optimizer.value() == doctest::Approx(full.parts.optimizer.value() * 4));
  CHECK(hybrid.parts.params.value() == doctest::Approx(full.parts.params.value() * 4));
}

TEST_CASE("fsdp's plan checks name the key and what is allowed") {
  Workload w = fsdp_job(Fsdp::Full, 8);
  w.plan.pp = 2;
  w.plan.dp = 4;
  CHECK(plan_error(w, 8) == "no error");   // FSDP under pipeline parallelism, as torchtitan runs it
  w.plan.fsdp = Fsdp::None;
  CHECK(plan_error(w, 8) == "parallelism.zero: (gradient/parameter sharding) cannot be combined with pp > 1 (as in "
                            "DeepSpeed): zero '3' (allowed: 0 or 1 with pipeline parallelism)");
  Workload h = fsdp_job(Fsdp::Full, 12);
  h.plan.fsdp = Fsdp::Hybrid;
  h.plan.shard_ranks = 8;
  CHECK_THROWS_WITH(check_plan(h, 12), "parallelism.fsdp: needs the data-parallel ranks of a node (8) to divide the 12 "
                                       "of the job, so not 'hybrid' (allowed: full, or a placement whose data-parallel "
                                       "groups fill whole nodes)");
}

TEST_CASE("fsdp full with experts: the routed experts gathered and reduce-scattered over their own group") {
  // Mixtral's layer, 4 of them, on 16 GPUs: dp 16, ep 8, so each expert's shards span 16 x 1 / 8 = 2 GPUs
  // (torchtitan's efsdp), the rest of the layer all 16.
  Workload w = moe_job(1, 1, 16, 8);
  w.plan.zero = 3;
  w.plan.fsdp = Fsdp::Full;
  CHECK(plan_error(w, 16) == "no error");
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const StepGraph g = generate_step(w, gpu);
  CHECK(g.group_ranks(3, Group::ExpertDp).size() == 2);
  const auto n = tally_collectives(g.classes[0], true);
  const int passes = 4 * 4;   // 4 layers x 4 micro-batches
  const MoeLayerParameters layer = moe_layer_parameters(w.model);
  const double weight = 2;   // bf16
  const double grad = bytes_per_element(w.training->grad_dtype);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).count == 2 * passes);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).bytes == doctest::Approx(2 * passes * layer.dense() * weight));
  CHECK(n.at({CollectiveKind::AllGather, Group::ExpertDp}).count == 2 * passes);
  CHECK(n.at({CollectiveKind::AllGather, Group::ExpertDp}).bytes ==
        doctest::Approx(2 * passes * layer.routed() / 8 * weight));
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::ExpertDp}).count == passes);
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::ExpertDp}).bytes == doctest::Approx(passes * layer.routed() / 8 * grad));
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::Dp}).count >= passes);
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::Dp}).count <= passes + 2 * 4);

  // Without expert parallelism the experts are part of the layer's unit: one gather and one reduce-scatter.
  Workload whole = moe_job(1, 1, 16, 1);
  whole.plan.zero = 3;
  whole.plan.fsdp = Fsdp::Full;
  const auto u = tally_collectives(generate_step(whole, gpu).classes[0], true);
  CHECK_FALSE(u.contains({CollectiveKind::AllGather, Group::ExpertDp}));
  CHECK_FALSE(u.contains({CollectiveKind::ReduceScatter, Group::ExpertDp}));
  CHECK(u.at({CollectiveKind::AllGather, Group::Dp}).count == 2 * passes);
  CHECK(u.at({CollectiveKind::AllGather, Group::Dp}).bytes ==
        doctest::Approx(2 * passes * (layer.dense() + layer.routed()) * weight));

  // Memory: every parameter is sharded 16 ways either way (ep x efsdp = dp), so the states are the same; what
  // ep 8 saves is the gathered unit, an eighth of the experts.
  const MemoryPlan ep8 = plan_memory(w, gpu);
  const MemoryPlan ep1 = plan_memory(whole, gpu);
  CHECK(ep8.parts.params.value() == doctest::Approx(ep1.parts.params.value()));
  CHECK(ep8.parts.optimizer.value() == doctest::Approx(ep1.parts.optimizer.value()));
  const double unit8 = layer.dense() + layer.routed() / 8;
  const double unit1 = layer.dense() + layer.routed();
  CHECK(ep1.parts.buffers.value() - ep8.parts.buffers.value() ==
        doctest::Approx((unit1 - unit8) * weight * (zero3_prefetches(w, gpu) ? 2 : 1)));
}

TEST_CASE("fsdp under pipeline parallelism: each layer gathered once a step, reduced once after the last backward") {
  // Llama-3-8B cut to 8 layers on 16 GPUs: pp 2, dp 8, 4 micro-batches a replica. torchtitan does not reshard
  // after the forward under PP, and PyTorch's pipelining reduces the gradients after a stage's last backward.
  Workload w = preset_job("llama3-8b", 8);
  w.training->global_batch = 32;
  w.training->attention = AttentionKernel::Flash;
  w.plan.pp = 2;
  w.plan.dp = 8;
  w.plan.zero = 3;
  w.plan.fsdp = Fsdp::Full;
  REQUIRE(plan_error(w, 16) == "no error");
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const StepGraph g = generate_step(w, gpu);
  const RankClass& first = g.classes[0];
  REQUIRE(first.stage == 0);
  const auto n = tally_collectives(first, true);
  const double layer = layer_parameters(w.model);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).count == 4);   // its 4 layers, once each
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).bytes == doctest::Approx(4 * layer * 2));
  // and the embedding, once
  CHECK(tally_collectives(first).at({CollectiveKind::AllGather, Group::Dp}).count == 5);
  // The 4 layers' and the embedding's reduce-scatters, each after the last micro-batch's backward has ended.
  CHECK(tally_collectives(first).at({CollectiveKind::ReduceScatter, Group::Dp}).count == 5);
  std::size_t last_backward = 0;
  for (std::size_t i = 0; i < first.ops.size(); ++i)
    if (const auto* c = std::get_if<ComputeOp>(&first.ops[i].body); c && c->pass == Pass::Backward) last_backward = i;
  for (const Op& op : first.ops)
    if (const auto* c = std::get_if<CollectiveOp>(&op.body); c && c->kind == CollectiveKind::ReduceScatter) {
      CHECK(c->micro_batch == 3);
      REQUIRE(op.deps.size() == 1);
      CHECK(op.deps.front() == last_backward);
    }
  // Memory: the stage's weights stay gathered and its gradients whole (fp32), the rest sharded as before.
  const MemoryPlan m = plan_memory(w, gpu);
  Workload zero1 = w;   // the distributed optimizer on the same plan: the same states, the weights whole
  zero1.plan.fsdp = Fsdp::None;
  zero1.plan.zero = 1;
  const MemoryPlan z = plan_memory(zero1, gpu);
  const double stage_params = 4 * layer + embedding_parameters(w.model);
  CHECK(m.parts.grads.value() == doctest::Approx(stage_params * bytes_per_element(w.training->grad_dtype)));
  CHECK(m.parts.buffers.value() == doctest::Approx(stage_params * 2));
  CHECK(m.parts.optimizer.value() == doctest::Approx(z.parts.optimizer.value()));
  CHECK(m.parts.params.value() * 8 == doctest::Approx(z.parts.params.value()));

  // Interleaved (vpp 2: virtual stages of 2 layers, stage 0 holding the first and the third): still once a layer,
  // and each virtual stage's reductions after its own last backward. The last stage reduces its 4 layers and the
  // output layer (untied).
  Workload v = w;
  v.plan.vpp = 2;
  REQUIRE(plan_error(v, 16) == "no error");
  const StepGraph gv = generate_step(v, gpu);
  const auto first_v = tally_collectives(gv.classes[0]);
  CHECK(first_v.at({CollectiveKind::AllGather, Group::Dp}).count == 4 + 1);   // and the embedding
  CHECK(first_v.at({CollectiveKind::ReduceScatter, Group::Dp}).count == 5);
  REQUIRE(gv.classes.back().stage == 1);
  const auto last_v = tally_collectives(gv.classes.back());
  CHECK(last_v.at({CollectiveKind::AllGather, Group::Dp}).count == 4 + 1);    // and the output layer
  CHECK(last_v.at({CollectiveKind::ReduceScatter, Group::Dp}).count == 5);
  CHECK(last_v.at({CollectiveKind::ReduceScatter, Group::Dp}).bytes ==
        doctest::Approx((4 * layer + logits_parameters(w.model) + final_norm_parameters(w.model)) *
                        bytes_per_element(w.training->grad_dtype)));
}
