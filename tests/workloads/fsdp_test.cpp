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
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
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
  const auto n = tally_collectives(generate_step(w, topology::find_gpu("h100-sxm5-80gb")).classes[0]);
  const int passes = 4 * 2;   // 4 layers x 2 micro-batches
  const double layer = layer_parameters(w.model);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).count == 2 * passes);
  CHECK(n.at({CollectiveKind::AllGather, Group::Dp}).bytes == doctest::Approx(2 * passes * layer * 2));   // bf16
  // One reduce-scatter per layer pass (fp32 gradients), and the embedding's and the head's with the next layer's
  // or the micro-batch's last: at most two more per micro-batch.
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::Dp}).count >= passes);
  CHECK(n.at({CollectiveKind::ReduceScatter, Group::Dp}).count <= passes + 2 * 2);
  // DeepSpeed's ZeRO-3 gathers the same layer as four modules.
  Workload zero3 = w;
  zero3.plan.fsdp = Fsdp::None;
  const auto z = tally_collectives(generate_step(zero3, topology::find_gpu("h100-sxm5-80gb")).classes[0]);
  CHECK(z.at({CollectiveKind::AllGather, Group::Dp}).count == 4 * 2 * passes);
  CHECK(z.at({CollectiveKind::AllGather, Group::Dp}).bytes ==
        doctest::Approx(n.at({CollectiveKind::AllGather, Group::Dp}).bytes));
}

TEST_CASE("fsdp hybrid: gathers and reduce-scatters within the node, each shard all-reduced with its replicas") {
  const Workload w = fsdp_job(Fsdp::Hybrid, 32, 8);
  const StepGraph g = generate_step(w, topology::find_gpu("h100-sxm5-80gb"));
  CHECK(g.group_ranks(9, Group::Shard) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(g.group_ranks(9, Group::Replica) == std::vector<int>{1, 9, 17, 25});
  const auto n = tally_collectives(g.classes[0]);
  CHECK_FALSE(n.contains({CollectiveKind::AllGather, Group::Dp}));
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
  CHECK_THROWS_WITH(check_plan(w, 8), "parallelism.pp: is not modelled with FSDP (which gathers each layer's parameters "
                                      "every micro-batch): pp '2' (allowed: 1 with parallelism.fsdp)");
  Workload h = fsdp_job(Fsdp::Full, 12);
  h.plan.fsdp = Fsdp::Hybrid;
  h.plan.shard_ranks = 8;
  CHECK_THROWS_WITH(check_plan(h, 12), "parallelism.fsdp: needs the data-parallel ranks of a node (8) to divide the 12 "
                                       "of the job, so not 'hybrid' (allowed: full, or a placement whose data-parallel "
                                       "groups fill whole nodes)");
}
