// The scenario's job sections (model, training or inference, parallelism): presets and explicit keys, defaults,
// derived dp, every key's checks, and the resolved YAML of a workload loading back to the same workload.
#include <doctest/doctest.h>

#include <array>

#include "scenario/scenario_support.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

using namespace dtsim;
using namespace dtsim::scenario;
using namespace dtsim::scenario::test;

TEST_CASE("a preset gives the model, training takes mixed-precision defaults, dp is what tp x pp leave") {
  const Scenario s = load_one(kLlamaTp8);
  REQUIRE(s.workload.has_value());
  const workloads::Workload& w = *s.workload;
  CHECK(w.model.name == "llama2-7b");
  CHECK(w.model.layers == 32);
  CHECK(w.model.ffn_hidden == 11008);
  CHECK(w.model.activation == workloads::Activation::Swiglu);
  CHECK(w.model.source == workloads::find_model("llama2-7b").source);
  REQUIRE(w.training.has_value());
  CHECK_FALSE(w.inference.has_value());
  CHECK(w.training->global_batch == 64);
  CHECK(w.training->micro_batch == 1);
  CHECK(w.training->precision == topology::Precision::Bf16);
  CHECK(w.training->weight_dtype == topology::Precision::Bf16);
  CHECK(w.training->grad_dtype == topology::Precision::Fp32);
  CHECK(w.training->master_weights);
  CHECK(w.training->optimizer == workloads::Optimizer::AdamW);
  CHECK(w.training->dp_bucket == Bytes(4e7 * 4));   // Megatron-Core's 40M parameters, fp32 gradients
  CHECK(w.training->dp_overlap);
  CHECK(w.training->sequence_parallel);             // megatron-core: where tp > 1
  CHECK(w.training->tp_comm_overlap);
  CHECK(w.training->distributed_optimizer);
  CHECK(w.plan.tp == 8);
  CHECK(w.plan.pp == 1);
  CHECK(w.plan.dp == 1);
  CHECK(w.plan.vpp == 1);
  CHECK(w.plan.zero == 1);                           // the distributed optimizer
  CHECK(w.plan.schedule == workloads::Schedule::OneFOneB);
  CHECK(workloads::order_name(w.plan.order) == "tp-dp-pp");
  CHECK(w.plan.layers_per_stage.empty());
  CHECK(w.plan.scatter_gather);
  CHECK(locate(s, "parallelism.tp") == "test.yaml:6");
  CHECK(locate(s, "model.preset") == "test.yaml:4");
}

TEST_CASE("explicit model keys override the preset, kv_heads follows heads for an MHA preset") {
  const Scenario s = load_one(with_cluster(R"(
model: {preset: gpt3-175b, layers: 48, heads: 64, vocab: 50257, norm: rmsnorm, bias: false}
training: {global_batch: 8, precision: fp32}
)"));
  const auto& m = s.workload->model;
  CHECK(m.name == "gpt3-175b");
  CHECK(m.layers == 48);
  CHECK(m.hidden == 12288);
  CHECK(m.heads == 64);
  CHECK(m.kv_heads == 64);
  CHECK(m.vocab == 50257);
  CHECK(m.norm == workloads::Norm::RmsNorm);
  CHECK_FALSE(m.bias);
  CHECK(m.positions == workloads::Positions::Learned);
  CHECK(s.workload->training->weight_dtype == topology::Precision::Fp32);   // training_defaults(fp32)
  CHECK_FALSE(s.workload->training->master_weights);
  // A GQA preset keeps its kv_heads when heads change.
  CHECK(load_one(with_cluster("model: {preset: llama2-70b, heads: 32}\ntraining: {global_batch: 8}"))
            .workload->model.kv_heads == 8);
}

TEST_CASE("without a preset every size is required, the model takes the scenario's name") {
  const std::string shape = "layers: 2, hidden: 64, heads: 4, ffn_hidden: 256, vocab: 1000, seq_length: 128";
  const Scenario s = load_one("name: tiny\n" + with_cluster("model: {" + shape + "}\ntraining: {global_batch: 8}"));
  CHECK(s.workload->model.name == "tiny");
  CHECK(s.workload->model.source == "scenario");
  CHECK(s.workload->model.kv_heads == 4);
  CHECK(s.workload->model.activation == workloads::Activation::Gelu);
  CHECK(error_of(with_cluster("model:\n  layers: 2\n  hidden: 64\ntraining: {global_batch: 8}")) ==
        "test.yaml:3: model.heads: missing required key (no model.preset or model.hf_config to take it from) (allowed: an integer >= 1)");
}

TEST_CASE("inference: context defaults to the model's sequence length") {
  const Scenario s = load_one(with_cluster("model: {preset: llama-7b}\ninference: {weights: int4}"));
  REQUIRE(s.workload->inference.has_value());
  CHECK_FALSE(s.workload->training.has_value());
  CHECK(s.workload->inference->context == 2048);
  CHECK(s.workload->inference->batch == 1);
  CHECK(s.workload->inference->weights == topology::Precision::Int4);
  CHECK(s.workload->inference->kv_cache == topology::Precision::Bf16);
  CHECK(load_one(with_cluster("model: {preset: llama-7b}\ninference: {context: 131072, kv_cache: fp8}"))
            .workload->inference->context == 131072);
}

// One rule for a static batch and a stream (issue 47): a sequence holds at most model.seq_length unless
// inference.context is written, which serves a longer context as the user asserts the model can.
TEST_CASE("inference: a static batch longer than the model's context needs inference.context, as a stream does") {
  CHECK(error_of(with_cluster("model: {preset: llama-7b}\ninference: {prompt_tokens: 300000, output_tokens: 16}")) ==
        "test.yaml:3: inference.prompt_tokens: plus the 16 output tokens is longer than the model's 2048-token "
        "context: '300000' (allowed: prompt + output within the context (inference.context, else model.seq_length))");
  const Scenario written = load_one(with_cluster("model: {preset: llama-7b}\n"
                                                "inference: {context: 300016, prompt_tokens: 300000, output_tokens: 16}"));
  CHECK(written.workload->inference->context == 300016);
  CHECK(written.workload->inference->prompt_tokens == 300000);
  // Within the model's context, the batch's context is its sequences' own length, as before.
  CHECK(load_one(with_cluster("model: {preset: llama-7b}\ninference: {prompt_tokens: 1000, output_tokens: 48}"))
            .workload->inference->context == 1048);
}

TEST_CASE("parallelism keys, and dp derived from the cluster") {
  const Scenario s = load_one(R"(
cluster: {gpu: a100-sxm4-80gb, nodes: 4, inter: switch}
model: {preset: gpt-39.1b}
training: {global_batch: 512}
parallelism: {tp: 8, pp: 2, vpp: 3, schedule: gpipe, order: tp-pp-dp, zero: 1, scatter_gather: false,
              layers_per_stage: [8, 8, 8, 8, 8, 8]}
)");
  const auto& p = s.workload->plan;
  CHECK(p.dp == 2);   // 32 GPUs / (8 x 2)
  CHECK(p.vpp == 3);
  CHECK(p.schedule == workloads::Schedule::Gpipe);
  CHECK(workloads::order_name(p.order) == "tp-pp-dp");
  CHECK(p.zero == 1);
  CHECK_FALSE(p.scatter_gather);
  CHECK(p.layers_per_stage == std::vector<int>(6, 8));
  CHECK(load_one(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}")).workload->plan.dp == 8);
  CHECK(load_one(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}\nparallelism: {dp: 2}"))
            .workload->plan.dp == 2);   // given: taken as is (check_plan compares it with the GPUs)
  CHECK(load_one(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}\nparallelism: {layers_per_stage: null}"))
            .workload->plan.layers_per_stage.empty());
}

TEST_CASE("dp of a user graph counts the graph's GPUs") {
  const std::string file = std::string(DTSIM_SOURCE_DIR) + "/scenarios/topologies/x.yaml";
  auto all = load_scenarios("cluster: {gpu: h100-sxm5-80gb, graph: graphs/two-pairs.yaml}\nmodel: {preset: bert-base}\n"
                            "inference: {batch: 4}\nparallelism: {tp: 2}\n", file);
  REQUIRE(all.size() == 1);
  CHECK(all[0].workload->plan.dp == 2);
}

TEST_CASE("dp that cannot be derived is an error naming the GPUs and tp x pp") {
  CHECK(error_of(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}\nparallelism: {tp: 3}")) ==
        "test.yaml:4: parallelism.dp: cannot be derived: the cluster's 8 GPUs are not a multiple of tp x pp = 3 x 1 = "
        "3 (allowed: give parallelism.dp, or tp and pp whose product divides the GPU count)");
  CHECK(error_of(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}\nparallelism: {tp: 4, pp: 4}"))
            .find("parallelism.dp: cannot be derived: tp x pp = 4 x 4 = 16 is more than the cluster's 8 GPUs") != std::string::npos);
  // A tp that fits no GPU count and does not divide the model's heads: the heads are the constraint to name.
  CHECK(error_of(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}\nparallelism: {tp: 5}")) ==
        "test.yaml:4: parallelism.tp: does not divide model.heads 12: tp '5' (allowed: a divisor of heads)");
}

TEST_CASE("sections: a model needs exactly one of training and inference, the others need a model") {
  CHECK(error_of(with_cluster("model: {preset: bert-base}")).find(
            "test.yaml:2: model: needs a training or an inference section, and neither is given") != std::string::npos);
  CHECK(error_of(with_cluster("model: {preset: bert-base}\ntraining: {global_batch: 8}\ninference: {batch: 1}"))
            .starts_with("test.yaml:4: inference: cannot be combined with training"));
  for (const char* section : {"training: {global_batch: 8}", "inference: {batch: 1}", "parallelism: {tp: 1}"}) {
    CAPTURE(section);
    CHECK(error_of(with_cluster(section)).find("given without a model section") != std::string::npos);
  }
  CHECK(error_of(with_cluster("model: {preset: bert-base}\ntraining: {micro_batch: 2}"))
            .find("training.global_batch: missing required key") != std::string::npos);
  CHECK(error_of(with_cluster("model: {preset: bert-base}\ninference: {}\nplots: {engine: analytic}"))
            .find("plots: unknown key") != std::string::npos);
}

TEST_CASE("every key is checked: unknown keys, enums, ranges, types") {
  const auto err = [](const std::string& model, const std::string& job, const std::string& par = "{}") {
    return error_of(with_cluster("model: " + model + "\n" + job + "\nparallelism: " + par));
  };
  const std::string bert = "{preset: bert-base}";
  const std::string train = "training: {global_batch: 8}";
  CHECK(err("{preset: bert-base, depth: 3}", train).find("model.depth: unknown key 'depth' (allowed: preset, hf_config, layers") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, lr: 0.1}").find("training.lr: unknown key") != std::string::npos);
  CHECK(err(bert, "inference: {tokens: 3}").find("inference.tokens: unknown key") != std::string::npos);
  CHECK(err(bert, train, "{xp: 2}").find("parallelism.xp: unknown key") != std::string::npos);
  CHECK(err("{preset: gpt-5}", train).find("model.preset: unknown model preset 'gpt-5' (allowed: gpt3-175b") != std::string::npos);
  CHECK(err("{preset: bert-base, activation: relu}", train).find("model.activation: unknown value 'relu' (allowed: gelu, swiglu)") != std::string::npos);
  CHECK(err("{preset: bert-base, norm: batchnorm}", train).find("(allowed: layernorm, rmsnorm)") != std::string::npos);
  CHECK(err("{preset: bert-base, positions: alibi}", train).find("(allowed: learned, rotary)") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, optimizer: lamb}").find("training.optimizer: unknown value 'lamb' (allowed: adamw, adafactor, sgd)") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, recompute: some}").find("(allowed: none, selective, full, op)") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, zero3_prefetch: always}")
            .find("training.zero3_prefetch: unknown value 'always' (allowed: auto, layer, none)") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, precision: int8}").find("training.precision: unknown or unsupported precision 'int8' (allowed: fp32, tf32, bf16, fp16, fp8, mxfp8, fp4, mxfp4)") != std::string::npos);
  CHECK(err(bert, "inference: {weights: int3}").find("inference.weights: unknown or unsupported precision 'int3' (allowed: fp32, bf16, fp16, fp8, int8, int4, mxfp8, fp4, mxfp4)") != std::string::npos);
  CHECK(err(bert, train, "{schedule: zb}").find("parallelism.schedule: unknown value 'zb' (allowed: 1f1b, gpipe)") != std::string::npos);
  CHECK(err(bert, train, "{order: tp-tp-pp}").find("parallelism.order: unknown value 'tp-tp-pp'") != std::string::npos);
  CHECK(err(bert, train, "{zero: 4}").find("parallelism.zero: out of range '4' (allowed: an integer in [0, 3])") != std::string::npos);
  CHECK(err(bert, train, "{vpp: 0}").find("parallelism.vpp: out of range '0'") != std::string::npos);
  CHECK(err(bert, train, "{tp: [2]}").find("parallelism.tp: expected a single value, got '[...]'") != std::string::npos);
  CHECK(err(bert, train, "{tp: 2.5}").find("parallelism.tp: not an integer '2.5'") != std::string::npos);
  CHECK(err(bert, train, "{layers_per_stage: 12}").find("parallelism.layers_per_stage: expected a list, got '12'") != std::string::npos);
  CHECK(err(bert, train, "{layers_per_stage: [6, 0]}").find("parallelism.layers_per_stage[1]: out of range '0' (allowed: a list of integers in [1, 100000])") != std::string::npos);
  CHECK(err(bert, train, "{layers_per_stage: [6, x]}").find("parallelism.layers_per_stage[1]: not an integer 'x'") != std::string::npos);
  CHECK(err("{preset: bert-base, layers: -2}", train).find("model.layers: out of range '-2'") != std::string::npos);
  CHECK(err("{preset: bert-base, hidden: 0}", train).find("model.hidden: out of range '0'") != std::string::npos);
  CHECK(err("{preset: bert-base, tied_embeddings: 1.5}", train).find("model.tied_embeddings: not a boolean") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, dp_bucket_MB: 0}").find("training.dp_bucket_MB: out of range '0'") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 8, dp_overlap: later}").find("training.dp_overlap: not a boolean 'later'") != std::string::npos);
  CHECK(err(bert, "training: {global_batch: 0}").find("training.global_batch: out of range '0'") != std::string::npos);
}

TEST_CASE("the model's cross-key checks are located at the offending key") {
  CHECK(error_of(with_cluster("model:\n  preset: bert-base\n  heads: 7\ntraining: {global_batch: 8}")) ==
        "test.yaml:4: model.heads: does not divide hidden 768: '7' (allowed: a divisor of hidden, or model.head_dim given)");
  CHECK(error_of(with_cluster("model:\n  preset: llama2-70b\n  kv_heads: 48\ntraining: {global_batch: 8}"))
            .starts_with("test.yaml:4: model.kv_heads: does not divide heads 64: '48'"));
}

TEST_CASE("--set reaches the workload sections") {
  const Scenario s = load_one(kLlamaTp8, {{"model.preset", "llama2-13b"}, {"parallelism.layers_per_stage", "[20, 20]"},
                                          {"parallelism.pp", "2"}, {"parallelism.tp", "4"}});
  CHECK(s.workload->model.name == "llama2-13b");
  CHECK(s.workload->plan.layers_per_stage == std::vector<int>{20, 20});
  CHECK(s.workload->plan.dp == 1);
  CHECK(locate(s, "model.preset") == "--set");
  CHECK(error_of(kLlamaTp8, {{"training.precision", "fp6"}}).starts_with("--set: training.precision: "));
}

TEST_CASE("order names: permutations of tp, dp, pp, innermost first") {
  using workloads::Axis;
  for (const char* name : {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"}) {
    CAPTURE(name);
    const auto order = workloads::parse_order(name);
    REQUIRE(order.has_value());
    CHECK(workloads::order_name(*order) == name);
  }
  CHECK(*workloads::parse_order("pp-dp-tp") == std::array{Axis::Pp, Axis::Dp, Axis::Tp});
  for (const char* bad : {"", "tp", "tp-dp", "tp-dp-pp-", "tp-dp-pp-tp", "tp-dp-dp", "TP-DP-PP", "tp_dp_pp", "-tp-dp"})
    CHECK_FALSE(workloads::parse_order(bad).has_value());
  CHECK(workloads::parse_schedule("1f1b") == workloads::Schedule::OneFOneB);
  CHECK(workloads::to_string(workloads::Schedule::Gpipe) == "gpipe");
  CHECK_FALSE(workloads::parse_schedule("interleaved").has_value());
}

TEST_CASE("the resolved scenario with a workload loads back to the same scenario") {
  const std::string training = R"(
name: rt-train
cluster: {gpu: h100-sxm5-80gb, nodes: 2, inter: switch, inter_link: ib-ndr}
model: {preset: llama3-8b, layers: 30, positions: learned}
training: {global_batch: 256, micro_batch: 2, precision: fp8, optimizer: sgd, recompute: full, dp_bucket_MB: 12.5,
           zero3_prefetch: layer}
parallelism: {tp: 2, pp: 2, vpp: 3, order: dp-tp-pp, zero: 1, layers_per_stage: [5, 5, 5, 5, 5, 5]}
)";
  const std::string inference = R"(
name: rt-serve
cluster: {gpu: mi300x, gpus_per_node: 2}
model: {layers: 3, hidden: 96, heads: 6, kv_heads: 2, ffn_hidden: 300, vocab: 999, seq_length: 77,
        activation: swiglu, tied_embeddings: false}
inference: {batch: 3, context: 5000, weights: int8, kv_cache: fp8}
)";
  for (const std::string& text : {training, inference}) {
    const Scenario s = load_one(text);
    const std::string yaml = to_yaml(s);
    CAPTURE(yaml);
    const Scenario back = load_one(yaml);
    CHECK(to_yaml(back) == yaml);
    REQUIRE(back.workload.has_value());
    const auto& a = *s.workload;
    const auto& b = *back.workload;
    CHECK(b.model.name == a.model.name);
    CHECK(workloads::parameter_count(b.model) == workloads::parameter_count(a.model));
    CHECK(b.model.kv_heads == a.model.kv_heads);
    CHECK(b.model.positions == a.model.positions);
    CHECK(b.training.has_value() == a.training.has_value());
    CHECK(b.inference.has_value() == a.inference.has_value());
    CHECK(b.plan.dp == a.plan.dp);
    CHECK(b.plan.order == a.plan.order);
    CHECK(b.plan.layers_per_stage == a.plan.layers_per_stage);
    if (a.training) {
      CHECK(b.training->dp_bucket == a.training->dp_bucket);
      CHECK(b.training->dp_overlap == a.training->dp_overlap);
      CHECK(b.training->weight_dtype == a.training->weight_dtype);
      CHECK(b.training->recompute == a.training->recompute);
      CHECK(b.training->zero3_prefetch == a.training->zero3_prefetch);
    }
    if (a.inference) CHECK(b.inference->context == a.inference->context);
  }
  const std::string yaml = to_yaml(load_one(training));
  CHECK(yaml.find("preset: llama3-8b\n  layers: 30\n  hidden: 4096\n") != std::string::npos);
  CHECK(yaml.find("  dp: 4\n") != std::string::npos);   // resolved: 16 GPUs / (tp 2 x pp 2)
  CHECK(to_yaml(load_one(inference)).find("preset:") == std::string::npos);
}

TEST_CASE("a request stream's context is the model's unless given, for its static batch too, and loads back alike") {
  const std::string text = with_cluster(
      "model: {preset: llama2-7b}\ninference:\n  prompt_tokens: 100\n  output_tokens: 10\n"
      "  requests: {prompt_tokens: 2000, output_tokens: 200, rate_per_s: 1, duration_s: 5}\n");
  const Scenario s = load_one(text);
  const auto& inf = *s.workload->inference;
  CHECK(inf.context == 4096);                 // not 110: the stream's requests hold up to the model's context
  CHECK(inf.requests->max_context == 4096);
  const Scenario again = load_one(to_yaml(s));
  CHECK(again.workload->inference->context == 4096);
  CHECK(again.workload->inference->requests->max_context == 4096);
  // Interleaving is a training pipeline's: a serving scenario refuses it.
  CHECK(error_of(with_cluster("model: {preset: llama2-7b}\ninference: {batch: 1}\nparallelism: {tp: 2, pp: 2, vpp: 2}\n"))
            .find("parallelism.vpp: interleaves a training pipeline's micro-batches; a serving pass has none: '2'") !=
        std::string::npos);
}
