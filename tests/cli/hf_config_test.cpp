// `model: {hf_config: config.json}`: each architecture's config read into the model, with the parameter count its
// checkpoint has, overrides on top, and every bad config a one-line error naming the file and the field.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "cli/scenario_support.hpp"
#include "sim/cli/scenario.hpp"
#include "workloads/model.hpp"

using namespace dtsim;
using namespace dtsim::cli;
using namespace dtsim::cli::test;

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

TEST_CASE("hf_config: keys beside it override the config, a path is relative to the scenario") {
  const auto m = load_one(hf_scenario("hf_config: " + hf_file("llama3-8b.json") + ", seq_length: 4096")).workload->model;
  CHECK(m.seq_length == 4096);
  CHECK(m.layers == 32);
  const auto all = load_scenarios(hf_scenario("hf_config: hf/gpt2.json"), std::string(DTSIM_SOURCE_DIR) + "/tests/data/s.yaml");
  CHECK(all.front().workload->model.layers == 12);
}

TEST_CASE("hf_config: a missing file, broken JSON, a missing field, a mixture of experts or a preset beside it are one-line errors") {
  struct Bad {
    std::string model;
    std::string expect;
  };
  for (const Bad& b :
       {Bad{"hf_config: " + hf_file("absent.json"), "model.hf_config: cannot read the file"},
        Bad{"hf_config: " + hf_file("not-json.json"), "model.hf_config: is not a JSON object"},
        Bad{"hf_config: " + hf_file("llama-no-heads.json"),
            "model.hf_config: config.json has no 'num_attention_heads', which a llama model needs:"},
        Bad{"hf_config: " + hf_file("mixtral-8x7b.json"), "model.hf_config: is a mixture-of-experts model (mixtral)"},
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
