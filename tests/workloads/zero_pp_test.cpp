// ZeRO++ (training.zero_pp): qwZ's int8 parameter gathers and their dequantisation, hpZ's backward gathers within
// the node and its secondary partition, qgZ's two int4 all-to-alls in place of the gradients' reduce-scatter.
#include <doctest/doctest.h>

#include <string>

#include "topology/catalog.hpp"
#include "workloads/collective_tally.hpp"
#include "workloads/gpt_job.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

using namespace dtsim;
using namespace dtsim::workloads;
using dtsim::test::tally_collectives;

namespace {

// Llama-2-7B cut to 4 layers, ZeRO-3 in fp16 over 16 GPUs on 4 nodes of 4, with `zpp`.
Workload zero_pp_job(ZeroPp zpp) {
  Workload w = dtsim::test::preset_job("llama2-7b", 4);
  w.training->precision = topology::Precision::Fp16;
  w.training->weight_dtype = topology::Precision::Fp16;
  w.training->grad_dtype = topology::Precision::Fp16;
  w.training->global_batch = 16;
  w.training->attention = AttentionKernel::Flash;
  w.training->zero_pp = zpp;
  w.plan.dp = 16;
  w.plan.zero = 3;
  w.gpus_per_node = 4;
  check_plan(w, 16);
  return w;
}

int quantize_ops(const RankClass& c) {
  int n = 0;
  for (const Op& op : c.ops)
    if (const auto* k = std::get_if<ComputeOp>(&op.body); k != nullptr && k->kernel == KernelClass::Quantize) ++n;
  return n;
}

double quantize_bytes(const RankClass& c) {
  double bytes = 0;
  for (const Op& op : c.ops)
    if (const auto* k = std::get_if<ComputeOp>(&op.body); k != nullptr && k->kernel == KernelClass::Quantize) bytes += k->bytes.value();
  return bytes;
}

}  // namespace

TEST_CASE("zero++ qwz: the parameter gathers carry int8 and a scale per 8,000 weights, dequantised before use") {
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  GenerateOptions fine;
  fine.granularity = Granularity::Kernel;
  const StepGraph base = generate_step(zero_pp_job({}), gpu, fine);
  const StepGraph qwz = generate_step(zero_pp_job({true, false, false}), gpu, fine);
  const auto b = tally_collectives(base.classes[0]);
  const auto q = tally_collectives(qwz.classes[0]);
  const auto gather = std::pair{CollectiveKind::AllGather, Group::Dp};
  CHECK(q.at(gather).count == b.at(gather).count);
  CHECK(q.at(gather).bytes == doctest::Approx(b.at(gather).bytes * (1 + 4.0 / 8000) / 2));
  CHECK(quantize_bytes(base.classes[0]) == 0);
  // Each gathered layer dequantised once where it is used: 4 layers x 2 micro-batches x forward and backward.
  CHECK(quantize_ops(qwz.classes[0]) == 4 * 1 * 2);
}

TEST_CASE("zero++ hpz: the backward gathers stay within the node, at the cost of a secondary partition") {
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const Workload base_job = zero_pp_job({});
  const Workload hpz_job = zero_pp_job({false, true, false});
  const StepGraph hpz = generate_step(hpz_job, gpu);
  const auto b = tally_collectives(generate_step(base_job, gpu).classes[0]);
  const auto h = tally_collectives(hpz.classes[0]);
  const auto dp_gather = std::pair{CollectiveKind::AllGather, Group::Dp};
  const auto node_gather = std::pair{CollectiveKind::AllGather, Group::Shard};
  CHECK(h.at(node_gather).count + h.at(dp_gather).count == b.at(dp_gather).count);
  CHECK(h.at(node_gather).count == h.at(dp_gather).count);   // the backward's half
  CHECK(hpz.group_ranks(0, Group::Shard) == std::vector<int>{0, 1, 2, 3});
  CHECK(hpz.group_ranks(5, Group::Replica) == std::vector<int>{1, 5, 9, 13});
  const double secondary = plan_memory(hpz_job, gpu).parts.params.value() - plan_memory(base_job, gpu).parts.params.value();
  CHECK(secondary == doctest::Approx(parameter_count(hpz_job.model) * 2 / 4));
}

TEST_CASE("zero++ qgz: the gradients' reduce-scatter becomes int4 all-to-alls within the node, then across") {
  const auto& gpu = topology::find_gpu("h100-sxm5-80gb");
  const auto b = tally_collectives(generate_step(zero_pp_job({}), gpu).classes[0]);
  const auto q = tally_collectives(generate_step(zero_pp_job({false, false, true}), gpu).classes[0]);
  const auto scatter = std::pair{CollectiveKind::ReduceScatter, Group::Dp};
  REQUIRE(b.contains(scatter));
  CHECK_FALSE(q.contains(scatter));
  const auto intra = std::pair{CollectiveKind::AllToAll, Group::Shard};
  const auto inter = std::pair{CollectiveKind::AllToAll, Group::Replica};
  CHECK(q.at(intra).count == b.at(scatter).count);
  CHECK(q.at(inter).count == b.at(scatter).count);
  CHECK(q.at(intra).bytes == doctest::Approx(b.at(scatter).bytes / 4));       // fp16 to int4
  CHECK(q.at(inter).bytes == doctest::Approx(b.at(scatter).bytes / 4 / 4));   // the node's slice
}

TEST_CASE("zero++ needs ZeRO-3's collectives and node groups that fill whole nodes: the plan checks name the key") {
  Workload w = zero_pp_job({true, true, true});
  w.plan.zero = 1;
  CHECK(dtsim::test::plan_error(w, 16).find("training.zero_pp") != std::string::npos);
  // 16 data-parallel ranks on nodes of 6: the first node holds 6 of them, which do not cut 16 into whole nodes.
  Workload odd = zero_pp_job({false, true, false});
  odd.gpus_per_node = 6;
  CHECK(dtsim::test::plan_error(odd, 16).find("do not cut the 16 data-parallel ranks into whole nodes") != std::string::npos);
  // qwZ alone needs no node group.
  Workload qwz = zero_pp_job({true, false, false});
  qwz.gpus_per_node = 6;
  CHECK(dtsim::test::plan_error(qwz, 16) == "no error");
}
