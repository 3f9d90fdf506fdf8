// Field names are the transformers library's configuration classes' (LlamaConfig, MistralConfig, Qwen2Config,
// GPT2Config, BertConfig); defaults are theirs where a config.json may leave a field out.
#include "sim/cli/hf_config.hpp"
#include "sim/cli/workload_reader.hpp"

#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "topology/error.hpp"

namespace dtsim::cli {
namespace {

using nlohmann::json;
using workloads::Activation;
using workloads::ModelSpec;
using workloads::Norm;
using workloads::Positions;

constexpr const char* kArchitectures = "llama, mistral, qwen2, gpt2, bert";


class Config {
 public:
  Config(json doc, std::string path, std::string key, std::string where)
      : doc_(std::move(doc)), path_(std::move(path)), key_(std::move(key)), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& reason, const std::string& allowed) const {
    throw InputError(key_, path_, reason, allowed, where_);
  }

  // An integer field in [1, max] (the scenario's own limit for the key it fills); `fallback` when the field may
  // be absent (or null, as transformers writes it).
  int integer(const char* field, long long max, std::optional<long long> fallback = std::nullopt) const {
    const auto it = doc_.find(field);
    long long v = 0;
    if (it == doc_.end() || it->is_null()) {
      if (!fallback) fail(fmt::format("config.json has no '{}', which a {} model needs:", field, type()), "a config.json with it");
      v = *fallback;
    } else {
      if (!it->is_number_integer())
        fail(fmt::format("config.json's '{}' is {}, not an integer:", field, it->dump()), fmt::format("an integer in [1, {}]", max));
      v = it->get<long long>();
    }
    if (v < 1 || v > max)
      fail(fmt::format("config.json's '{}' is {}, out of range:", field, v), fmt::format("an integer in [1, {}]", max));
    return static_cast<int>(v);
  }
  bool boolean(const char* field, bool fallback) const {
    const auto it = doc_.find(field);
    if (it == doc_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(fmt::format("config.json's '{}' is {}, not true or false:", field, it->dump()), "true, false");
    return it->get<bool>();
  }
  double probability(const char* field, double fallback) const {
    const auto it = doc_.find(field);
    if (it == doc_.end() || it->is_null()) return fallback;
    if (!it->is_number() || it->get<double>() < 0 || it->get<double>() > kMaxDropout)
      fail(fmt::format("config.json's '{}' is {}, not a dropout probability:", field, it->dump()),
           fmt::format("a number in [0, {}]", kMaxDropout));
    return it->get<double>();
  }
  std::string text(const char* field, const std::string& fallback) const {
    const auto it = doc_.find(field);
    return it != doc_.end() && it->is_string() ? it->get<std::string>() : fallback;
  }
  // model_type, else the first of `architectures` (LlamaForCausalLM: llama).
  std::string type() const {
    std::string t = text("model_type", "");
    if (!t.empty()) return t;
    const auto it = doc_.find("architectures");
    if (it != doc_.end() && it->is_array() && !it->empty() && it->front().is_string()) {
      const std::string a = it->front().get<std::string>();
      for (const char* known : {"Llama", "Mistral", "Mixtral", "Qwen2", "GPT2", "Bert", "DeepseekV3"})
        if (a.starts_with(known)) {
          std::string lower = known;
          for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          return lower == "deepseekv3" ? "deepseek_v3" : lower;
        }
      return a;
    }
    fail("config.json names no model_type and no architectures:", fmt::format("one of {}", kArchitectures));
  }

 private:
  json doc_;
  std::string path_, key_, where_;
};

// Llama, Mistral, Qwen2: pre-norm decoders with RMSNorm, rotary positions, a SwiGLU MLP, no biases but Qwen2's
// query/key/value biases (3 x hidden per layer, not counted: 0.002 % of Qwen2-7B).
ModelSpec llama_family(const Config& c) {
  ModelSpec m;
  m.layers = c.integer("num_hidden_layers", kMaxLayers);
  m.hidden = c.integer("hidden_size", kMaxWidth);
  m.heads = c.integer("num_attention_heads", kMaxWidth);
  m.kv_heads = c.integer("num_key_value_heads", kMaxWidth, m.heads);
  m.ffn_hidden = c.integer("intermediate_size", kMaxWidth);
  m.vocab = c.integer("vocab_size", kMaxTokens);
  m.seq_length = c.integer("max_position_embeddings", kMaxTokens);
  if (const std::string act = c.text("hidden_act", "silu"); act != "silu")
    c.fail(fmt::format("config.json's hidden_act is '{}': dtsim's gated MLP is SwiGLU,", act), "silu");
  if (m.hidden % m.heads == 0 && c.integer("head_dim", kMaxWidth, m.hidden / m.heads) != m.hidden / m.heads)
    c.fail(fmt::format("config.json's head_dim {} is not hidden_size / num_attention_heads = {}: dtsim's attention "
                       "takes", c.integer("head_dim", kMaxWidth), m.hidden / m.heads),
           "head_dim = hidden_size / num_attention_heads");
  m.activation = Activation::Swiglu;
  m.norm = Norm::RmsNorm;
  m.positions = Positions::Rotary;
  m.tied_embeddings = c.boolean("tie_word_embeddings", false);
  m.bias = c.boolean("attention_bias", false) && c.boolean("mlp_bias", false);
  m.hidden_dropout = 0;
  m.attention_dropout = c.probability("attention_dropout", 0);
  return m;
}

// GPT-2: LayerNorm, learned positions, GELU, biases everywhere, the output layer tied to the embedding.
ModelSpec gpt2(const Config& c) {
  ModelSpec m;
  m.layers = c.integer("n_layer", kMaxLayers);
  m.hidden = c.integer("n_embd", kMaxWidth);
  m.heads = c.integer("n_head", kMaxWidth);
  m.kv_heads = m.heads;
  m.ffn_hidden = c.integer("n_inner", kMaxWidth, 4LL * m.hidden);
  m.vocab = c.integer("vocab_size", kMaxTokens);
  m.seq_length = c.integer("n_positions", kMaxTokens);
  m.tied_embeddings = c.boolean("tie_word_embeddings", true);
  m.hidden_dropout = c.probability("resid_pdrop", 0.1);
  m.attention_dropout = c.probability("attn_pdrop", 0.1);
  return m;
}

// BERT: GPT-2's layer, attending both ways. Its pooler, token-type embeddings and the MLM head's transform are not
// counted (BERT-base: 0.6 M of 109.5 M), as in the presets.
ModelSpec bert(const Config& c) {
  ModelSpec m;
  m.layers = c.integer("num_hidden_layers", kMaxLayers);
  m.hidden = c.integer("hidden_size", kMaxWidth);
  m.heads = c.integer("num_attention_heads", kMaxWidth);
  m.kv_heads = m.heads;
  m.ffn_hidden = c.integer("intermediate_size", kMaxWidth);
  m.vocab = c.integer("vocab_size", kMaxTokens);
  m.seq_length = c.integer("max_position_embeddings", kMaxTokens);
  m.causal = false;
  m.tied_embeddings = c.boolean("tie_word_embeddings", true);
  m.hidden_dropout = c.probability("hidden_dropout_prob", 0.1);
  m.attention_dropout = c.probability("attention_probs_dropout_prob", 0.1);
  return m;
}

}  // namespace

ModelSpec read_hf_config(const std::string& path, const std::string& written, const std::string& key,
                         const std::string& where) {
  std::ifstream in(path);
  if (!in) throw InputError(key, written, "cannot read the file", "a Hugging Face config.json", where);
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  if (!doc.is_object()) throw InputError(key, written, "is not a JSON object", "a Hugging Face config.json", where);
  const Config c(std::move(doc), written, key, where);
  const std::string type = c.type();
  ModelSpec m;
  if (type == "llama" || type == "mistral" || type == "qwen2") m = llama_family(c);
  else if (type == "gpt2") m = gpt2(c);
  else if (type == "bert") m = bert(c);
  else if (type == "mixtral" || type == "deepseek_v3" || type == "qwen2_moe")
    c.fail(fmt::format("is a mixture-of-experts model ({}), which dtsim cannot describe yet (model.experts, issue 22):", type),
           kArchitectures);
  else
    c.fail(fmt::format("has model_type '{}', an architecture dtsim does not read:", type), kArchitectures);
  // Its name: the model's own (_name_or_path), else the file's (a bare config.json: its folder's, as a checkpoint is).
  const std::filesystem::path file(path);
  m.name = c.text("_name_or_path", "");
  if (m.name.empty()) m.name = file.stem() == "config" ? file.parent_path().filename().string() : file.stem().string();
  m.source = "Hugging Face config.json: " + path;
  return m;
}

}  // namespace dtsim::cli
