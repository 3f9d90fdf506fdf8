// Model presets: every preset valid, parameter counts against the published sizes, look-ups and the checks of a
// model section.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "topology/error.hpp"
#include "workloads/model.hpp"

namespace {

using namespace dtsim;
using namespace dtsim::workloads;

double params(const char* preset) { return parameter_count(find_model(preset)); }

// Rounded to `digits` decimals, in billions: how papers print their sizes.
double billions(double count, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(count / 1e9 * scale) / scale;
}

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

ModelSpec small_model() {
  return {.name = "small", .layers = 2, .hidden = 64, .heads = 4, .kv_heads = 4, .ffn_hidden = 256, .vocab = 100,
          .seq_length = 32, .source = "test"};
}

}  // namespace

TEST_CASE("every preset is valid, named once in lower case, and cites its source") {
  std::set<std::string> names;
  for (const auto& m : model_presets()) {
    CAPTURE(m.name);
    CHECK_NOTHROW(validate(m));
    CHECK(names.insert(m.name).second);
    CHECK_FALSE(m.source.empty());
    CHECK(m.name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ _") == std::string::npos);
  }
  for (const char* name : {"gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b",
                           "llama3-405b", "bert-base", "bert-large", "llama-7b", "gpt-22b"})
    CHECK(names.count(name) == 1);
}

// Hugging Face checkpoints' totals: Llama-2-7b-hf 6,738,415,616; -13b 13,015,864,320; -70b 68,976,648,192;
// Meta-Llama-3-8B 8,030,261,248; -70B 70,553,706,496; Llama-3.1-405B 405,853,388,800.
TEST_CASE("LLaMA presets count exactly the published checkpoints' parameters") {
  CHECK(params("llama2-7b") == 6'738'415'616.0);
  CHECK(params("llama2-13b") == 13'015'864'320.0);
  CHECK(params("llama2-70b") == 68'976'648'192.0);
  CHECK(params("llama3-8b") == 8'030'261'248.0);
  CHECK(params("llama3-70b") == 70'553'706'496.0);
  CHECK(params("llama3-405b") == 405'853'388'800.0);
  CHECK(billions(params("llama2-70b"), 1) == 69.0);
  CHECK(billions(params("llama3-405b"), 1) == 405.9);
}

TEST_CASE("LLaMA-7B is Llama 2 7B's shape with a 2048-token context") {
  const ModelSpec& v1 = find_model("llama-7b");
  const ModelSpec& v2 = find_model("llama2-7b");
  CHECK(parameter_count(v1) == parameter_count(v2));   // rotary positions: the context adds no parameters
  CHECK(v1.seq_length == 2048);
  CHECK(v2.seq_length == 4096);
  CHECK(v1.kv_heads == v1.heads);
}

TEST_CASE("GPT-3 175B counts as Megatron-LM does with its padded 51200-token vocabulary") {
  const ModelSpec& m = find_model("gpt3-175b");
  CHECK(m.vocab == 51200);
  CHECK(billions(parameter_count(m), 1) == 174.6);   // SC'21 Table 2
  // Megatron's closed form: 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)), plus the final LayerNorm.
  const double l = m.layers, h = m.hidden;
  CHECK(parameter_count(m) == doctest::Approx(12 * l * h * h * (1 + 13 / (12 * h) + (51200 + 2048) / (12 * l * h)) + 2 * h));
}

// megatron_sc21.csv prints sizes to 0.1 B. Each preset rounds to its row's figure; from 7.5B up that is within
// 1 %, while 1.7B (1.652) and 3.6B (3.562) differ by 2.8 % and 1.1 % from the rounded figures only by rounding.
TEST_CASE("the Megatron-LM SC'21 GPT sizes match the csv") {
  const std::pair<const char*, double> rows[] = {
      {"gpt-1.7b", 1.7},     {"gpt-3.6b", 3.6},     {"gpt-7.5b", 7.5},     {"gpt-18.4b", 18.4},
      {"gpt-39.1b", 39.1},   {"gpt-76.1b", 76.1},   {"gpt-145.6b", 145.6}, {"gpt-310.1b", 310.1},
      {"gpt-529.6b", 529.6}, {"gpt-1008b", 1008.0}};
  for (const auto& [name, published] : rows) {
    CAPTURE(name);
    const double count = params(name);
    CHECK(billions(count, 1) == doctest::Approx(published));
    if (published >= 7.5) CHECK(count / 1e9 == doctest::Approx(published).epsilon(0.01));
    const ModelSpec& m = find_model(name);
    CHECK(m.ffn_hidden == 4 * m.hidden);
    CHECK(m.seq_length == 2048);
  }
  CHECK(billions(params("gpt-22b"), 1) == 22.1);   // Korthikanti et al.'s 22B
}

// Counted: encoder, token and position embeddings, embedding LayerNorm. HF BertModel's 109,482,240 (base) and
// 335,141,888 (large) add the pooler (h^2 + h) and the two token-type embeddings (2h).
TEST_CASE("BERT presets count the encoder and embeddings, not the pooler or token types") {
  CHECK(params("bert-base") == 109'482'240.0 - (768.0 * 768 + 768) - 2 * 768);
  CHECK(params("bert-large") == 335'141'888.0 - (1024.0 * 1024 + 1024) - 2 * 1024);
  CHECK(params("bert-base") / 1e6 == doctest::Approx(110).epsilon(0.02));
}

TEST_CASE("families keep their style") {
  const ModelSpec& gpt = find_model("gpt3-175b");
  CHECK(gpt.activation == Activation::Gelu);
  CHECK(gpt.norm == Norm::LayerNorm);
  CHECK(gpt.positions == Positions::Learned);
  CHECK(gpt.tied_embeddings);
  CHECK(gpt.bias);
  const ModelSpec& llama = find_model("llama3-8b");
  CHECK(llama.activation == Activation::Swiglu);
  CHECK(llama.norm == Norm::RmsNorm);
  CHECK(llama.positions == Positions::Rotary);
  CHECK_FALSE(llama.tied_embeddings);
  CHECK_FALSE(llama.bias);
  CHECK(llama.kv_heads == 8);
  CHECK(find_model("llama2-70b").kv_heads == 8);
  CHECK(find_model("llama2-13b").kv_heads == 40);
}

TEST_CASE("an unknown preset names the key and lists the presets") {
  const std::string msg = error_of([] { find_model("gpt-5"); });
  CHECK(msg.starts_with("model.preset: unknown model preset 'gpt-5' (allowed: gpt3-175b, "));
  CHECK(msg.find("llama3-405b") != std::string::npos);
  CHECK(error_of([] { find_model("x", "sweep.model"); }).starts_with("sweep.model: "));
  CHECK(model_names().starts_with("gpt3-175b, gpt-1.7b, "));
}

TEST_CASE("validate names the offending key and what is allowed") {
  CHECK_NOTHROW(validate(small_model()));
  ModelSpec m = small_model();
  m.heads = 5;
  CHECK(error_of([&] { validate(m); }) == "model.heads: does not divide hidden 64: '5' (allowed: a divisor of hidden, or model.head_dim given)");
  m = small_model();
  m.kv_heads = 3;
  CHECK(error_of([&] { validate(m); }).starts_with("model.kv_heads: does not divide heads 4: '3'"));
  m.kv_heads = 8;
  CHECK(error_of([&] { validate(m); }).starts_with("model.kv_heads: "));
  m = small_model();
  m.layers = 0;
  CHECK(error_of([&] { validate(m, "sweep.model"); }).starts_with("sweep.model.layers: must be positive, got '0'"));
  m = small_model();
  m.vocab = -3;
  CHECK(error_of([&] { validate(m); }).starts_with("model.vocab: "));
}

TEST_CASE("parameter parts add up, and tying drops the output projection") {
  ModelSpec m = small_model();
  const double whole = parameter_count(m);
  CHECK(whole == m.layers * layer_parameters(m) + embedding_parameters(m) + logits_parameters(m) +
                     final_norm_parameters(m));
  CHECK(logits_parameters(m) == 0.0);
  m.tied_embeddings = false;
  CHECK(parameter_count(m) == whole + 100.0 * 64);
}

TEST_CASE("a layer's parameters by linear module, as ZeRO-3 gathers them, count each matrix exactly") {
  // GPT-3 175B: gelu, biases, layer norms. Q K V carries its bias, every other bias and both norms.
  const ModelSpec& gpt = find_model("gpt3-175b");
  const double h = 12288;
  const auto g = layer_module_parameters(gpt);
  CHECK(g[0] == 3 * h * h + (3 * h + h + 4 * h + h) + 2 * (2 * h));
  CHECK(g[1] == h * h);
  CHECK(g[2] == h * 4 * h);
  CHECK(g[3] == 4 * h * h);
  CHECK(g[0] + g[1] + g[2] + g[3] == layer_parameters(gpt));
  // Llama 3 8B: swiglu (gate and up gathered together), grouped-query K and V, no biases, RMS norms.
  const ModelSpec& llama = find_model("llama3-8b");
  const double d = 4096, kv = 8 * 128, f = 14336;
  const auto l = layer_module_parameters(llama);
  CHECK(l[0] == d * d + 2 * d * kv + 2 * d);
  CHECK(l[1] == d * d);
  CHECK(l[2] == 2 * d * f);
  CHECK(l[3] == d * f);
  CHECK(l[0] + l[1] + l[2] + l[3] == layer_parameters(llama));
}
