// `model: {hf_config: config.json}`: each architecture's config read into the model, with the parameter count its
// checkpoint has, overrides on top, and every bad config a one-line error naming the file and the field.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "scenario/scenario_support.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/model.hpp"

using namespace dtsim;
using namespace dtsim::scenario;
using namespace dtsim::scenario::test;

namespace {

std::string hf_file(const std::string& name) { return std::string(DTSIM_SOURCE_DIR) + "/tests/data/hf/" + name; }

// A serving scenario on one H100 whose model is `model` (a YAML map's body).
std::string hf_scenario(const std::string& model) {
  return fmt::format("name: hf\ncluster: {{gpu: h100-sxm5-80gb, gpus_per_node: 1}}\nmodel: {{{}}}\ninference: {{batch: 1}}\n",
                     model);
}

workloads::ModelSpec hf_model(const std::string& file) {
  return load_one(hf_scenario("hf_config: " + hf_file(file))).workload->model;
}

// A mixture of experts read from its config: on a training scenario.
workloads::ModelSpec hf_moe(const std::string& file) {
  return load_one(fmt::format("name: hf\ncluster: {{gpu: h100-sxm5-80gb, gpus_per_node: 8}}\nmodel: {{hf_config: {}}}\n"
                              "training: {{global_batch: 8}}\nparallelism: {{ep: 8}}\n",
                              hf_file(file)))
      .workload->model;
}

}  // namespace

TEST_CASE("hf_config: Llama, Mistral, Qwen2, GPT-2 and BERT configs give their checkpoints' parameter counts") {
  struct Case {
    const char* file;
    double params;     // the checkpoint's, as its model card or the transformers count gives it
    double tolerance;  // relative
  };
  // Llama-3-8B 8,030,261,248; Mistral-7B 7,241,732,096; Qwen2-7B 7,615,616,512 (dtsim leaves out its QKV biases,
  // 129,024); GPT-2 124,439,808; BERT-base 108,890,112: 109,482,240 less its pooler (590,592) and token-type
  // embeddings (1,536).
  for (const Case c : {Case{"llama3-8b.json", 8'030'261'248.0, 1e-9}, Case{"mistral-7b.json", 7'241'732'096.0, 1e-9},
                       Case{"qwen2-7b.json", 7'615'616'512.0, 2e-5}, Case{"gpt2.json", 124'439'808.0, 1e-9},
                       Case{"bert-base-uncased.json", 108'890'112.0, 1e-9}}) {
    CAPTURE(c.file);
    CHECK(workloads::parameter_count(hf_model(c.file)) == doctest::Approx(c.params).epsilon(c.tolerance));
  }
  const auto llama = hf_model("llama3-8b.json");
  CHECK(llama.kv_heads == 8);
  CHECK(llama.activation == workloads::Activation::Swiglu);
  CHECK(llama.norm == workloads::Norm::RmsNorm);
  CHECK(llama.positions == workloads::Positions::Rotary);
  CHECK_FALSE(llama.tied_embeddings);
  CHECK_FALSE(llama.bias);
  CHECK(llama.seq_length == 8192);
  CHECK(llama.name == "llama3-8b");
  // The same model as the preset, field by field.
  const auto preset = workloads::find_model("llama3-8b");
  CHECK(llama.layers == preset.layers);
  CHECK(llama.ffn_hidden == preset.ffn_hidden);
  CHECK(llama.vocab == preset.vocab);
  const auto gpt2 = hf_model("gpt2.json");
  CHECK(gpt2.ffn_hidden == 4 * 768);   // n_inner null: 4 x n_embd
  CHECK(gpt2.tied_embeddings);
  CHECK(gpt2.positions == workloads::Positions::Learned);
  CHECK_FALSE(hf_model("bert-base-uncased.json").causal);
  CHECK(hf_model("mistral-7b.json").kv_heads == 8);
}

TEST_CASE("hf_config: Mixtral, Qwen2-MoE, Qwen3-MoE and DeepSeek-V3 configs give their experts and parameter counts") {
  // Mixtral-8x7B's checkpoint: 46,702,792,704; Qwen1.5-MoE-A2.7B: "14.3B" (its shared expert's gate, 2,048 a
  // layer, not counted); Qwen3-30B-A3B and DeepSeek-V3: the presets' (from the same sources).
  const auto mixtral = hf_moe("mixtral-8x7b.json");
  CHECK(workloads::parameter_count(mixtral) == 46'702'792'704.0);
  CHECK(mixtral.experts == 8);
  CHECK(mixtral.experts_per_token == 2);
  CHECK(mixtral.expert_width() == 14336);
  const auto qwen15 = hf_moe("qwen1.5-moe-a2.7b.json");
  CHECK(qwen15.shared_experts == 4);   // 5632 = 4 x 1408
  CHECK(workloads::parameter_count(qwen15) == doctest::Approx(14.3e9).epsilon(0.002));
  const auto qwen3 = hf_moe("qwen3-30b-a3b.json");
  CHECK(qwen3.head_dim() == 128);
  CHECK(workloads::parameter_count(qwen3) == workloads::parameter_count(workloads::find_model("qwen3-30b-a3b")));
  const auto v3 = hf_moe("deepseek-v3.json");
  CHECK(v3.mla());
  CHECK(v3.dense_layers == 3);
  CHECK(v3.shared_experts == 1);
  CHECK(workloads::parameter_count(v3) == workloads::parameter_count(workloads::find_model("deepseek-v3")));
}

TEST_CASE("hf_config: keys beside it override the config, a path is relative to the scenario") {
  const auto m = load_one(hf_scenario("hf_config: " + hf_file("llama3-8b.json") + ", seq_length: 4096")).workload->model;
  CHECK(m.seq_length == 4096);
  CHECK(m.layers == 32);
  const auto all = load_scenarios(hf_scenario("hf_config: hf/gpt2.json"), std::string(DTSIM_SOURCE_DIR) + "/tests/data/s.yaml");
  CHECK(all.front().workload->model.layers == 12);
}

TEST_CASE("hf_config: a missing file, broken JSON, a missing field, an MoE layout dtsim does not describe or a preset beside it are one-line errors") {
  struct Bad {
    std::string model;
    std::string expect;
  };
  for (const Bad& b :
       {Bad{"hf_config: " + hf_file("absent.json"), "model.hf_config: cannot read the file"},
        Bad{"hf_config: " + hf_file("not-json.json"), "model.hf_config: is not a JSON object"},
        Bad{"hf_config: " + hf_file("llama-no-heads.json"),
            "model.hf_config: config.json has no 'num_attention_heads', which a llama model needs:"},
        Bad{"hf_config: " + hf_file("qwen2-moe-sparse-step.json"),
            "model.hf_config: config.json's decoder_sparse_step is 2: dtsim reads"},
        Bad{"hf_config: " + hf_file("gpt2-too-deep.json"),
            "model.hf_config: config.json's 'n_layer' is 200000, out of range:"},
        Bad{"preset: llama3-8b, hf_config: " + hf_file("gpt2.json"),
            "model.hf_config: gives the model a second time beside model.preset:"}}) {
    CAPTURE(b.model);
    const std::string e = error_of(hf_scenario(b.model));
    CHECK(e.find(b.expect) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
}
