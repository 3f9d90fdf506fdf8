// Context parallelism: the CP group's ranks, each rank's share of the FLOPs and the tokens, ring attention's
// schedule and bytes (and the all-gather variant's), the memory plan's share, the plan checks.
#include <doctest/doctest.h>

#include "workloads/gpt_job.hpp"

#include <map>
#include <string>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/kernels.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::h100;
using dtsim::test::plan_error;
using dtsim::test::tally_collectives;

namespace {

// Llama-3-8B's layers, 4 of them, a sequence of 8192, on tp x cp x dp GPUs.
Workload cp_job(int tp, int cp, int dp, int layers = 4) {
  Workload w = test::preset_job("llama3-8b", layers);
  w.training->global_batch = 2 * dp;
  w.training->sequence_parallel = tp > 1;
  w.training->attention = AttentionKernel::Flash;   // Megatron-Core's default, which context parallelism needs
  w.plan.tp = tp;
  w.plan.cp = cp;
  w.plan.dp = dp;
  w.plan.zero = 1;
  check_plan(w, tp * cp * dp);
  return w;
}

}  // namespace

TEST_CASE("context parallelism: the cp peers are consecutive data-parallel coordinates, inside the gradients' group") {
  ParallelPlan p;
  p.tp = 2;
  p.cp = 2;
  p.dp = 2;
  const Placement place(p);
  CHECK(place.ranks() == 8);
  CHECK(place.cp_group(0) == std::vector<int>{0, 2});
  CHECK(place.cp_group(5) == std::vector<int>{5, 7});
  CHECK(place.group(0, Axis::Dp) == std::vector<int>{0, 2, 4, 6});   // gradients reduce over dp x cp
  CHECK(p.dp_ranks() == 4);
  CHECK(p.gpus() == 8);
}

TEST_CASE("context parallelism: a rank computes 1 / cp of the layer, attention included, and the step's FLOPs stay") {
  const ModelSpec m = find_model("llama3-8b");
  TrainingSpec t = training_defaults(topology::Precision::Bf16);
  t.attention = AttentionKernel::Flash;
  const auto one = layer_kernels(m, t, Sharding{1, false, 1, 1, 1}, 1, Pass::Forward);
  const auto two = layer_kernels(m, t, Sharding{1, false, 1, 1, 4}, 1, Pass::Forward);
  CHECK(total_flops(two).value() == doctest::Approx(total_flops(one).value() / 4));
  for (const Kernel& k : two)
    if (k.kind == KernelClass::FlashAttention) {
      CHECK(k.attention->seq == 8192.0 / 4);   // each ring step a block of s / cp queries and keys
      CHECK(k.flops.value() == doctest::Approx(4.0 * 32 * 8192.0 * 8192 * 128 / 4));
    }
  // The whole step: the same model FLOPs on 2 x 4 GPUs as on 8 data-parallel ones.
  const StepGraph ring = generate_step(cp_job(1, 4, 2), h100());
  Workload flat_job = cp_job(1, 1, 8);
  flat_job.training->global_batch = 4;   // the same sequences as the 2 replicas' 2 each
  flat_job.plan.dp = 4;
  flat_job.plan.tp = 2;
  flat_job.training->sequence_parallel = true;
  check_plan(flat_job, 8);
  const StepGraph flat = generate_step(flat_job, h100());
  CHECK(model_flops(ring).value() == doctest::Approx(model_flops(flat).value()).epsilon(1e-9));
  CHECK(context_kv_bytes(m, t, Sharding{1, false, 1, 1, 4}, 1).value() == 8192.0 * 2 * 8 * 128 * 2);
}

TEST_CASE("ring attention: one KV all-gather over cp a layer each way, the attention core in cp chunks around it") {
  const Workload w = cp_job(1, 4, 2);
  const StepGraph g = generate_step(w, h100(), GenerateOptions{Granularity::Kernel});
  const auto n = tally_collectives(g.classes[0]);
  const int passes = 4 * 2;   // 4 layers x 2 micro-batches
  const double kv = context_kv_bytes(w.model, *w.training, Sharding{1, false, 1, 1, 4}, 1).value();
  CHECK(n.at({CollectiveKind::AllGather, Group::Cp}).count == 2 * passes);
  CHECK(n.at({CollectiveKind::AllGather, Group::Cp}).bytes == doctest::Approx(passes * kv * 3));   // KV, then KV and dKV
  CHECK_FALSE(n.contains({CollectiveKind::ReduceScatter, Group::Cp}));
  // In each forward layer pass: cp attention chunks, cp - 1 of them before the ring's gather ends (beside it), the
  // last one after it.
  const auto& ops = g.classes[0].ops;
  int chunks = 0, after_gather = 0;
  for (const Op& op : ops) {
    const auto* c = std::get_if<ComputeOp>(&op.body);
    if (!c || c->kernel != KernelClass::FlashAttention || c->pass != Pass::Forward || c->layer != 0 || c->micro_batch != 0)
      continue;
    ++chunks;
    for (const auto d : op.deps)
      if (const auto* k = std::get_if<CollectiveOp>(&ops[d].body); k && k->group == Group::Cp) ++after_gather;
  }
  CHECK(chunks == 4);
  CHECK(after_gather == 1);
  // The all-gather variant: exposed, and backward a reduce-scatter of the gradients after the core.
  Workload gathered = w;
  gathered.training->cp_comm = CpComm::AllGather;
  const auto a = tally_collectives(generate_step(gathered, h100()).classes[0]);
  CHECK(a.at({CollectiveKind::AllGather, Group::Cp}).count == 2 * passes);
  CHECK(a.at({CollectiveKind::ReduceScatter, Group::Cp}).count == passes);
  // PyTorch's (torchtitan's): the 32 query heads' K and V (repeated before SDPA), gathered again for the backward,
  // whose fp32 gradients go round the ring beside the blocks (twice the bytes) instead of a reduce-scatter after.
  Workload titan = gathered;
  titan.training->framework = Framework::Torchtitan;
  const double kv32 = context_kv_bytes(titan.model, *titan.training, Sharding{1, false, 1, 1, 4}, 1).value();
  CHECK(kv32 == doctest::Approx(kv * titan.model.heads / titan.model.kv_heads));
  const auto b = tally_collectives(generate_step(titan, h100()).classes[0]);
  CHECK(b.at({CollectiveKind::AllGather, Group::Cp}).count == 3 * passes);
  CHECK(b.at({CollectiveKind::AllGather, Group::Cp}).bytes == doctest::Approx(passes * kv32 * 4));   // KV, KV, 2 dKV
  CHECK_FALSE(b.contains({CollectiveKind::ReduceScatter, Group::Cp}));
  // Selective recomputation reruns the attention core, and with it the ring.
  Workload selective = w;
  selective.training->recompute = Recompute::Selective;
  CHECK(tally_collectives(generate_step(selective, h100()).classes[0]).at({CollectiveKind::AllGather, Group::Cp}).count ==
        3 * passes);
}

TEST_CASE("context parallelism: activations per GPU are 1 / cp, the parameters' shard over dp x cp") {
  const MemoryPlan one = plan_memory(cp_job(1, 1, 8), h100());
  const MemoryPlan four = plan_memory(cp_job(1, 4, 2), h100());
  CHECK(four.parts.activations.value() == doctest::Approx(one.parts.activations.value() / 4));
  CHECK(four.parts.optimizer.value() == doctest::Approx(one.parts.optimizer.value()));   // 8 ranks share the states either way
}

TEST_CASE("context parallelism's plan checks name the key and what is allowed") {
  Workload w = cp_job(1, 2, 4);
  w.plan.cp = 3;
  w.plan.dp = 2;
  w.training->global_batch = 4;
  w.model.seq_length = 8191;
  CHECK(plan_error(w, 6) == "parallelism.cp: does not divide model.seq_length 8191 into 6 equal chunks (2 x cp): cp "
                               "'3' (allowed: a cp whose 2 x cp (x tp with sequence parallelism) divides seq_length)");
  w.model.seq_length = 8192 * 3;
  w.training->attention = AttentionKernel::Unfused;
  CHECK(plan_error(w, 6).starts_with("training.attention: cannot run context parallelism"));
  w.training->attention = AttentionKernel::Flash;
  CHECK(plan_error(w, 8) == "parallelism.dp: tp 1 x pp 1 x cp 3 x dp 2 = 6 GPUs, but the cluster has 8; dp '2' "
                               "(allowed: degrees whose product is 8)");
}
