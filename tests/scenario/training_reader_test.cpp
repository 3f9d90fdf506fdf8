// The scenario's training section: precisions, optimizer, recomputation and its modules, each framework's
// defaults (training.framework) and those that follow the plan (sequence parallelism, TP overlap, ZeRO-1, buckets).
#include <doctest/doctest.h>

#include <array>

#include "scenario/scenario_support.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

using namespace dtsim;
using namespace dtsim::scenario;
using namespace dtsim::scenario::test;

TEST_CASE("training keys: precisions, optimizer, recompute, bucket in decimal MB") {
  const Scenario s = load_one(with_cluster(R"(
model: {preset: bert-base}
training:
  global_batch: 32
  micro_batch: 4
  precision: fp16
  grad_dtype: fp16
  optimizer: adafactor
  optimizer_dtype: bf16
  master_weights: false
  recompute: selective
  sequence_parallel: true
  dp_bucket_MB: 40
  dp_overlap: false
  zero3_prefetch: none
)"));
  const auto& t = *s.workload->training;
  CHECK(t.micro_batch == 4);
  CHECK(t.precision == topology::Precision::Fp16);
  CHECK(t.weight_dtype == topology::Precision::Fp16);
  CHECK(t.grad_dtype == topology::Precision::Fp16);
  CHECK(t.optimizer == workloads::Optimizer::Adafactor);
  CHECK(t.optimizer_dtype == topology::Precision::Bf16);
  CHECK_FALSE(t.master_weights);
  CHECK(t.recompute == workloads::Recompute::Selective);
  CHECK(t.sequence_parallel);
  CHECK(t.dp_bucket == Bytes(40e6));
  CHECK_FALSE(t.dp_overlap);
  CHECK(t.zero3_prefetch == workloads::Zero3Prefetch::None);
  CHECK(load_one(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}")).workload->training->zero3_prefetch ==
        workloads::Zero3Prefetch::Auto);
}

TEST_CASE("training.recompute_modules and overlap_moe_expert_parallel_comm: Megatron-Core's names, errors otherwise") {
  const auto load = [](const std::string& keys) {
    return load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: mixtral-8x7b}\ntraining: {global_batch: 8" +
                    keys + "}\n");
  };
  using M = workloads::RecomputeModule;
  CHECK(load(", recompute: selective").workload->training->recompute_modules == bit(M::CoreAttn));   // the default
  const Scenario s = load(", recompute: selective, recompute_modules: [layernorm, moe, moe_act]");
  CHECK(s.workload->training->recompute_modules == (bit(M::Layernorm) | bit(M::MoeAct) | bit(M::Moe)));
  // The resolved scenario lists them, in Megatron's order, and loads back to them.
  const std::string yaml = to_yaml(s);
  CHECK(yaml.find("recompute_modules: [moe_act, layernorm, moe]") != std::string::npos);
  CHECK(load_one(yaml).workload->training->recompute_modules == s.workload->training->recompute_modules);
  CHECK(load(", recompute: none, recompute_modules: []").workload->training->recompute == workloads::Recompute::None);
  const auto error = [](const std::string& keys) {
    return error_of("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: mixtral-8x7b}\ntraining: {global_batch: 8" +
                    keys + "}\n");
  };
  CHECK(error(", recompute: selective, recompute_modules: [layernorm, moe_akt]") ==
        "test.yaml:3: training.recompute_modules[1]: unknown name 'moe_akt' (allowed: core_attn, moe_act, layernorm, "
        "mla_up_proj, mlp, moe, shared_experts); did you mean 'moe_act'?");
  CHECK(error(", recompute: full, recompute_modules: [moe]") ==
        "test.yaml:3: training.recompute_modules: chooses what selective recomputation recomputes, but "
        "training.recompute is full: '[moe]' (allowed: training.recompute: selective with it, or recompute_modules: [] "
        "or absent)");
  CHECK(error(", recompute: selective, recompute_modules: []").find("selects nothing") != std::string::npos);
  CHECK(error(", recompute: selective, recompute_modules: moe").find("expected a list") != std::string::npos);
  // Megatron-Core's EP overlap: off by default, read and written back.
  CHECK_FALSE(load("").workload->training->overlap_moe_expert_parallel_comm);
  const Scenario overlap = load(", overlap_moe_expert_parallel_comm: true");
  CHECK(overlap.workload->training->overlap_moe_expert_parallel_comm);
  CHECK(load_one(to_yaml(overlap)).workload->training->overlap_moe_expert_parallel_comm);
  CHECK(error(", overlap_moe_expert_parallel_comm: 2").find("training.overlap_moe_expert_parallel_comm") !=
        std::string::npos);
}

TEST_CASE("training.framework: megatron-core by default, each framework's features, explicit keys win") {
  const auto training = [](const std::string& keys) {
    return *load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\ntraining: {global_batch: 8" + keys +
                     "}\n")
                .workload->training;
  };
  const workloads::TrainingSpec core = training("");
  CHECK(core.framework == workloads::Framework::MegatronCore);
  CHECK(core.attention == workloads::AttentionKernel::Flash);
  CHECK_FALSE(core.cross_entropy_fusion);  // --cross-entropy-loss-fusion is off by default
  CHECK(core.cross_entropy_fusion_impl == workloads::LossFusion::Native);   // --cross-entropy-fusion-impl's default
  CHECK(core.grad_dtype == workloads::Precision::Fp32);   // bf16: Megatron forces fp32 gradient reduction
  CHECK(training(", precision: fp16").grad_dtype == workloads::Precision::Fp16);   // fp16: the parameters' type
  CHECK_FALSE(core.overlap_p2p_comm.has_value());   // the framework's default for the plan (stage_builder.cpp)
  CHECK(training(", overlap_p2p_comm: false").overlap_p2p_comm == std::optional<bool>(false));
  CHECK(to_yaml(load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\ntraining: {global_batch: 8, "
                         "overlap_p2p_comm: true}\n"))
            .find("overlap_p2p_comm: true") != std::string::npos);
  CHECK(core.fp8 == workloads::Fp8::None);
  // NeMo's performance recipes: fused loss, bf16 gradient reduction, 128 Mi-parameter buckets.
  const workloads::TrainingSpec nemo = training(", framework: nemo");
  CHECK(nemo.framework == workloads::Framework::Nemo);
  CHECK(nemo.attention == workloads::AttentionKernel::Flash);
  CHECK(nemo.cross_entropy_fusion);
  CHECK(nemo.cross_entropy_fusion_impl == workloads::LossFusion::Te);   // Megatron-Bridge's benchmark overrides
  CHECK(training(", framework: nemo, cross_entropy_fusion_impl: native").cross_entropy_fusion_impl ==
        workloads::LossFusion::Native);
  CHECK(to_yaml(load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\ntraining: {global_batch: 8, "
                         "framework: nemo}\n"))
            .find("cross_entropy_fusion_impl: te") != std::string::npos);
  CHECK(nemo.grad_dtype == workloads::Precision::Bf16);
  CHECK(nemo.dp_bucket == Bytes(128.0 * 1024 * 1024 * 2));
  CHECK(nemo.distributed_optimizer);
  for (const char* old : {"megatron-2021", "megatron-2022", "deepspeed", "deepspeed-2021"}) {
    CAPTURE(old);
    const workloads::TrainingSpec t = training(std::string(", framework: ") + old);
    CHECK(to_string(t.framework) == old);
    CHECK(t.attention == workloads::AttentionKernel::Unfused);
    CHECK_FALSE(t.cross_entropy_fusion);
    // ZeRO-3's backward prefetch ahead: DeepSpeed today; not its 2021 ZeRO-3, whose all-gathers blocked.
    CHECK(t.zero3_prefetch_ahead == (std::string(old) != "deepspeed-2021"));
    // DeepSpeed reduces gradients in the model's 16-bit type (its communication_data_type); Megatron-LM in the
    // parameters' type, except bf16, for which it forces fp32 (megatron/training/arguments.py).
    const bool deepspeed = std::string(old).starts_with("deepspeed");
    CHECK(t.grad_dtype == (deepspeed ? workloads::Precision::Bf16 : workloads::Precision::Fp32));
    CHECK(training(std::string(", precision: fp16, framework: ") + old).grad_dtype == workloads::Precision::Fp16);
    CHECK(training(std::string(", precision: fp32, framework: ") + old).grad_dtype == workloads::Precision::Fp32);
  }
  // torchtitan: SDPA's FlashAttention-2, CP by all-gather, DDP's 25 MB buckets; under TP the norms
  // sequence-parallel and async TP off until asked for.
  const auto titan = [](const std::string& extra) {
    return *load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\ntraining: {global_batch: 8, "
                     "framework: torchtitan" + extra + "}\nparallelism: {tp: 8}\n")
                .workload->training;
  };
  const workloads::TrainingSpec torchtitan = titan("");
  CHECK(torchtitan.attention == workloads::AttentionKernel::Flash2);
  CHECK(torchtitan.cp_comm == workloads::CpComm::AllGather);
  CHECK(torchtitan.sequence_parallel);
  CHECK_FALSE(torchtitan.tp_comm_overlap);
  CHECK_FALSE(torchtitan.distributed_optimizer);
  CHECK(torchtitan.dp_bucket == Bytes(25e6));
  CHECK(titan(", tp_comm_overlap: true, recompute: op").tp_comm_overlap);
  CHECK(titan(", recompute: op").recompute == workloads::Recompute::Op);
  const std::string titan_yaml = to_yaml(load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\n"
                                                  "training: {global_batch: 8, framework: torchtitan, recompute: op}\n"));
  for (const char* key : {"framework: torchtitan", "attention: flash2", "recompute: op", "cp_comm: all_gather"})
    CHECK(titan_yaml.find(key) != std::string::npos);
  const workloads::TrainingSpec reloaded = *load_one(titan_yaml).workload->training;
  CHECK(reloaded.recompute == workloads::Recompute::Op);
  CHECK(reloaded.attention == workloads::AttentionKernel::Flash2);
  const workloads::TrainingSpec mixed = training(", framework: megatron-2021, attention: flash, fp8: hybrid");
  CHECK(mixed.attention == workloads::AttentionKernel::Flash);
  CHECK_FALSE(mixed.cross_entropy_fusion);
  CHECK(mixed.fp8 == workloads::Fp8::Hybrid);
  CHECK(training(", cross_entropy_fusion: false").cross_entropy_fusion == false);
  // The resolved scenario names every feature, and loads back to them.
  const Scenario s = load_one("cluster: {gpu: h100-sxm5-80gb}\nmodel: {preset: llama2-7b}\n"
                              "training: {global_batch: 8, fp8: e4m3, framework: nemo}\n");
  const std::string yaml = to_yaml(s);
  for (const char* key : {"framework: nemo", "attention: flash", "cross_entropy_fusion: true", "fp8: e4m3"})
    CHECK(yaml.find(key) != std::string::npos);
  CHECK(load_one(yaml).workload->training->fp8 == workloads::Fp8::E4m3);
}

TEST_CASE("Megatron-Core's plan-dependent defaults: sequence parallelism and TP overlap where tp > 1, ZeRO-1, buckets") {
  const auto load = [](const std::string& training, const std::string& parallelism = "{tp: 1}") {
    return *load_one("cluster: {gpu: h100-sxm5-80gb, nodes: 4, inter: fat-tree, inter_link: ib-ndr}\n"
                     "model: {preset: llama2-7b}\ntraining: {global_batch: 64" + training + "}\n"
                     "parallelism: " + parallelism + "\n").workload;
  };
  const workloads::Workload tp1 = load("");
  CHECK_FALSE(tp1.training->sequence_parallel);
  CHECK_FALSE(tp1.training->tp_comm_overlap);
  CHECK(tp1.plan.zero == 1);
  CHECK(tp1.training->overlap_param_gather);
  CHECK(tp1.training->dp_bucket == Bytes(4e7 * 4));   // dp 32: max(40M, 32M) parameters
  const workloads::Workload tp8 = load("", "{tp: 8}");
  CHECK(tp8.training->sequence_parallel);
  CHECK(tp8.training->tp_comm_overlap);
  const workloads::Workload wide = load("", "{tp: 1, dp: 32}");
  CHECK(wide.training->dp_bucket == Bytes(4e7 * 4));
  // Explicit keys win, and decide what follows from them.
  CHECK_FALSE(load(", sequence_parallel: false", "{tp: 8}").training->tp_comm_overlap);
  CHECK_FALSE(load(", tp_comm_overlap: false", "{tp: 8}").training->tp_comm_overlap);
  const workloads::Workload zero3 = load("", "{tp: 1, zero: 3}");
  CHECK_FALSE(zero3.training->distributed_optimizer);
  CHECK_FALSE(zero3.training->overlap_param_gather);
  const workloads::Workload plain = load(", distributed_optimizer: false");
  CHECK(plain.plan.zero == 0);
  CHECK_FALSE(plain.training->overlap_param_gather);
  CHECK(load(", dp_bucket_MB: 25").training->dp_bucket == Bytes(25e6));
  CHECK(load(", overlap_grad_reduce: false").training->dp_overlap == false);
  // The older frameworks keep their defaults: 25 MB buckets, no sequence parallelism, no ZeRO.
  const workloads::Workload old = load(", framework: megatron-2021", "{tp: 8}");
  CHECK_FALSE(old.training->sequence_parallel);
  CHECK_FALSE(old.training->tp_comm_overlap);
  CHECK_FALSE(old.training->tp_backward_overlap);
  CHECK(old.plan.zero == 0);
  CHECK(old.training->dp_bucket == Bytes(25e6));
  CHECK(load(", framework: megatron-2022").training->tp_backward_overlap);
  // DeepSpeed's reduce_bucket_size, 5e8 elements of its 16-bit gradients.
  CHECK(load(", framework: deepspeed", "{tp: 1, zero: 3}").training->dp_bucket == Bytes(5e8 * 2));
  // DeepSpeed overlaps the gradient reduction with the backward under ZeRO-3 only (overlap_comm's default), and
  // never under its pipeline engine; written, overlap_grad_reduce wins.
  CHECK(load(", framework: deepspeed", "{tp: 1, zero: 3}").training->dp_overlap);
  CHECK_FALSE(load(", framework: deepspeed", "{tp: 1, zero: 1}").training->dp_overlap);
  CHECK_FALSE(load(", framework: deepspeed", "{tp: 1, zero: 0}").training->dp_overlap);
  CHECK_FALSE(load(", framework: deepspeed-2021", "{tp: 1, pp: 2, zero: 1}").training->dp_overlap);
  CHECK(load(", framework: deepspeed, overlap_grad_reduce: true", "{tp: 1, zero: 1}").training->dp_overlap);
  // An explicit grad_dtype wins over the framework's, and the bucket follows it.
  const workloads::Workload fp32 = load(", framework: deepspeed, grad_dtype: fp32", "{tp: 1, zero: 3}");
  CHECK(fp32.training->grad_dtype == workloads::Precision::Fp32);
  CHECK(fp32.training->dp_bucket == Bytes(5e8 * 4));
  // A layer-list model trains as PyTorch DDP does: fp32 gradients whatever the framework.
  const auto resnet = [](const std::string& extra) {
    return *load_one("cluster: {gpu: a100-sxm4-80gb}\nmodel: {preset: resnet50}\ntraining: {global_batch: 256, "
                     "precision: fp16" + extra + "}\n")
                .workload->training;
  };
  CHECK(resnet(", framework: deepspeed").grad_dtype == workloads::Precision::Fp32);
  CHECK(resnet(", framework: nemo").grad_dtype == workloads::Precision::Fp32);
  CHECK(resnet(", framework: deepspeed, grad_dtype: fp16").grad_dtype == workloads::Precision::Fp16);
  // What Megatron-Core refuses, refused with the key and the line.
  const auto err = [&](const std::string& training, const std::string& parallelism) {
    try {
      (void)load(training, parallelism);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err(", sequence_parallel: false, tp_comm_overlap: true", "{tp: 8}")
            .find("test.yaml:3: training.tp_comm_overlap: needs training.sequence_parallel") != std::string::npos);
  CHECK(err(", distributed_optimizer: true", "{tp: 1, zero: 2}")
            .find("training.distributed_optimizer: is ZeRO-1 (optimizer states sharded over the data-parallel group) "
                  "and parallelism.zero is 2, so not 'true'") != std::string::npos);
  CHECK(err(", distributed_optimizer: false, overlap_param_gather: true", "{tp: 1}")
            .find("training.overlap_param_gather: needs the distributed optimizer") != std::string::npos);
  CHECK(err(", overlap_grad_reduce: true, dp_overlap: true", "{tp: 1}")
            .find("training.dp_overlap: is training.overlap_grad_reduce's old name") != std::string::npos);
  CHECK(err(", tp_comm_overlap: sometimes", "{tp: 8}").find("training.tp_comm_overlap: not a boolean") !=
        std::string::npos);
}
