// generate_step builds each kind of layer pass once per stage and copies it (GenerateOptions::reuse_passes): the
// copies must be the ops, dependencies, layers and micro-batches that building every pass afresh gives, on every
// path a pass can take (TP styles, recomputation, ZeRO-3 and FSDP gathers, expert and context parallelism, host
// ops, per-module gradients, combined steps, kernel granularity).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "topology/catalog.hpp"
#include "workloads/model.hpp"
#include "workloads/plan.hpp"
#include "workloads/step_graph.hpp"
#include "workloads/training.hpp"

using namespace dtsim;
using namespace dtsim::workloads;

namespace {

const topology::GpuSpec& reuse_gpu() { return topology::find_gpu("h100-sxm5-80gb"); }

Workload reuse_job(const char* preset, int layers, int tp, int pp, int dp, int batch, const std::function<void(Workload&)>& set) {
  Workload w;
  w.model = find_model(preset);
  w.model.layers = layers;
  w.training = training_defaults(topology::Precision::Bf16);
  w.training->global_batch = batch;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  set(w);
  check_plan(w, tp * pp * dp * w.plan.cp);
  return w;
}

struct ReuseCase {
  std::string name;
  Workload w;
};

std::vector<ReuseCase> reuse_cases() {
  std::vector<ReuseCase> out;
  const auto add = [&](std::string name, Workload w) { out.push_back({std::move(name), std::move(w)}); };
  add("gpt tp 2 pp 2 vpp 2, sequence parallel, selective, TP overlapped both ways",
      reuse_job("gpt-1.7b", 8, 2, 2, 2, 16, [](Workload& w) {
        w.plan.vpp = 2;
        w.training->sequence_parallel = true;
        w.training->recompute = Recompute::Selective;
        w.training->tp_comm_overlap = true;
        w.training->tp_backward_overlap = true;
      }));
  add("gpt tp 4 pp 2, full recompute, exposed TP, no bucket overlap",
      reuse_job("gpt-1.7b", 6, 4, 2, 1, 8, [](Workload& w) {
        w.training->recompute = Recompute::Full;
        w.training->dp_overlap = false;
      }));
  add("gpt zero 3 with prefetch over 4", reuse_job("gpt-1.7b", 5, 1, 1, 4, 8, [](Workload& w) { w.plan.zero = 3; }));
  add("llama fsdp hybrid, shards of 4", reuse_job("llama3-8b", 4, 1, 1, 8, 16, [](Workload& w) {
        w.plan.zero = 3;
        w.plan.fsdp = Fsdp::Hybrid;
        w.plan.shard_ranks = 4;
        w.training->attention = AttentionKernel::Flash;
      }));
  add("llama tp 2 cp 2, ring attention", reuse_job("llama3-8b", 4, 2, 1, 2, 4, [](Workload& w) {
        w.plan.cp = 2;
        w.plan.dp = 2;
        w.training->sequence_parallel = true;
        w.training->attention = AttentionKernel::Flash;
        w.training->recompute = Recompute::Selective;
      }));
  add("llama cp 2, all-gathered keys and values", reuse_job("llama3-8b", 4, 1, 1, 2, 4, [](Workload& w) {
        w.plan.cp = 2;
        w.training->attention = AttentionKernel::Flash;
        w.training->cp_comm = CpComm::AllGather;
      }));
  add("mixtral ep 8 etp 1 tp 2, distributed optimizer", reuse_job("mixtral-8x7b", 4, 2, 1, 8, 32, [](Workload& w) {
        w.plan.ep = 8;
        w.plan.etp = 1;
        w.plan.zero = 1;
        w.training->sequence_parallel = true;
      }));
  add("qwen3 MoE under Megatron-Core (host ops), DeepEP, first layer dense",
      reuse_job("qwen3-30b-a3b", 3, 1, 1, 16, 32, [](Workload& w) {
        w.model.dense_layers = 1;
        apply_framework(*w.training, Framework::MegatronCore);
        w.training->micro_batch = 1;
        w.training->moe_dispatcher = MoeDispatcher::DeepEp;
        w.plan.ep = 16;
      }));
  add("mixtral pp 4 vpp 2, exchanges overlapped in combined steps", reuse_job("mixtral-8x7b", 8, 1, 4, 4, 32, [](Workload& w) {
        w.plan.vpp = 2;
        w.plan.ep = 4;
        w.plan.zero = 1;
        w.training->overlap_moe_expert_parallel_comm = true;
      }));
  add("mixtral, every second layer MoE (dense and MoE passes alternating), full recompute",
      reuse_job("mixtral-8x7b", 6, 1, 2, 4, 32, [](Workload& w) {
        w.model.moe_layer_freq = 2;
        w.plan.ep = 4;
        w.plan.zero = 1;
        w.training->recompute = Recompute::Full;
      }));
  add("llama under torchtitan, tp 2, per-op recompute", reuse_job("llama3-8b", 4, 2, 1, 2, 4, [](Workload& w) {
        apply_framework(*w.training, Framework::Torchtitan);
        w.training->sequence_parallel = true;
        w.training->recompute = Recompute::Op;
      }));
  return out;
}

bool holds_host_op(const StepGraph& g) {
  for (const RankClass& c : g.classes)
    if (std::ranges::any_of(c.ops, [](const Op& op) { return std::holds_alternative<HostOp>(op.body); })) return true;
  return false;
}

}  // namespace

TEST_CASE("a layer pass copied is the pass built afresh, op for op, at layer and kernel granularity") {
  bool host_ops = false;
  for (const ReuseCase& c : reuse_cases())
    for (const Granularity granularity : {Granularity::Layer, Granularity::Kernel}) {
      CAPTURE(c.name);
      CAPTURE(static_cast<int>(granularity));
      const StepGraph copied = generate_step(c.w, reuse_gpu(), {granularity, true});
      const StepGraph built = generate_step(c.w, reuse_gpu(), {granularity, false});
      REQUIRE(copied.classes.size() == built.classes.size());
      for (std::size_t k = 0; k < built.classes.size(); ++k) {
        CAPTURE(k);
        REQUIRE(copied.classes[k].ops.size() == built.classes[k].ops.size());
        CHECK(copied.classes[k].ops.size() > 10);
        std::size_t first_difference = built.classes[k].ops.size();
        for (std::size_t i = 0; i < built.classes[k].ops.size() && first_difference == built.classes[k].ops.size(); ++i)
          if (!(copied.classes[k].ops[i] == built.classes[k].ops[i])) first_difference = i;
        CHECK(first_difference == built.classes[k].ops.size());
      }
      host_ops = host_ops || holds_host_op(built);
    }
  CHECK(host_ops);   // the cases reach the host's ops
}

TEST_CASE("Deps: in place up to four, on the heap past them, copied and moved whole") {
  Deps d{4, 5};
  CHECK(d.size() == 2);
  for (std::uint32_t i = 6; i < 40; ++i) d.push_back(i);
  REQUIRE(d.size() == 36);
  for (std::uint32_t i = 0; i < 36; ++i) CHECK(d[i] == i + 4);
  CHECK(d.front() == 4);
  CHECK(d.back() == 39);
  const Deps copy = d;
  CHECK(copy == d);
  Deps moved = std::move(d);
  CHECK(moved == copy);
  CHECK(d.empty());   // NOLINT(bugprone-use-after-move): a moved-from Deps is empty and usable
  d.push_back(7);
  CHECK(d == Deps{7});
  Deps small{1, 2, 3, 4};
  Deps small_moved = std::move(small);
  CHECK(small_moved == Deps{1, 2, 3, 4});
  small_moved = copy;
  CHECK(small_moved == copy);
  small_moved.append(copy.begin(), copy.begin() + 2);
  CHECK(small_moved.size() == 38);
  CHECK(small_moved[37] == 5);
  CHECK(!(small_moved == copy));
  small_moved.clear();
  CHECK(small_moved.empty());
  CHECK(!(small_moved == copy));
  // Appended to itself, in place and past its capacity on the heap: read before the old buffer goes.
  Deps self{1, 2};
  self.append(self.begin(), self.end());
  CHECK(self == Deps{1, 2, 1, 2});
  self.append(self.begin(), self.end());
  CHECK(self == Deps{1, 2, 1, 2, 1, 2, 1, 2});
  self.append(self.begin(), self.end());
  CHECK(self.size() == 16);
  CHECK(self[15] == 2);
  // A heap one assigned from one in place.
  self = Deps{9};
  CHECK(self == Deps{9});
}
