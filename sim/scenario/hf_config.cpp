// Field names are the transformers library's configuration classes' (LlamaConfig, MistralConfig, MixtralConfig,
// Qwen2Config, Qwen2MoeConfig, Qwen3Config, Qwen3MoeConfig, DeepseekV3Config, GPT2Config, BertConfig); defaults
// are theirs where a config.json may leave a field out.
#include "sim/scenario/hf_config.hpp"
#include "sim/scenario/workload_reader.hpp"

#include <array>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

using nlohmann::json;
using workloads::Activation;
using workloads::ModelSpec;
using workloads::Norm;
using workloads::Positions;

constexpr const char* kArchitectures = "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v3, gpt2, bert";

// The model_type of an `architectures` class name (its prefix), longest prefixes first.
constexpr std::array<std::pair<const char*, const char*>, 10> kClassTypes{{{"Qwen2Moe", "qwen2_moe"},
                                                                          {"Qwen3Moe", "qwen3_moe"},
                                                                          {"DeepseekV3", "deepseek_v3"},
                                                                          {"Llama", "llama"},
                                                                          {"Mistral", "mistral"},
                                                                          {"Mixtral", "mixtral"},
                                                                          {"Qwen2", "qwen2"},
                                                                          {"Qwen3", "qwen3"},
                                                                          {"GPT2", "gpt2"},
                                                                          {"Bert", "bert"}}};


class Config {
 public:
  Config(json doc, std::string path, std::string key, std::string where)
      : doc_(std::move(doc)), path_(std::move(path)), key_(std::move(key)), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& reason, const std::string& allowed) const {
    throw InputError(key_, path_, reason, allowed, where_);
  }

  // An integer field in [1, max] (the scenario's own limit for the key it fills); `fallback` when the field may
  // be absent (or null, as transformers writes it).
  int integer(const char* field, long long max, std::optional<long long> fallback = std::nullopt, long long min = 1) const {
    const auto it = doc_.find(field);
    long long v = 0;
    if (it == doc_.end() || it->is_null()) {
      if (!fallback) fail(fmt::format("config.json has no '{}', which a {} model needs:", field, type()), "a config.json with it");
      v = *fallback;
    } else {
      if (!it->is_number_integer())
        fail(fmt::format("config.json's '{}' is {}, not an integer:", field, it->dump()),
             fmt::format("an integer in [{}, {}]", min, max));
      v = it->get<long long>();
    }
    if (v < min || v > max)
      fail(fmt::format("config.json's '{}' is {}, out of range:", field, v), fmt::format("an integer in [{}, {}]", min, max));
    return static_cast<int>(v);
  }
  bool has(const char* field) const {
    const auto it = doc_.find(field);
    return it != doc_.end() && !it->is_null();
  }
  // A list field that must be empty or absent (a feature dtsim does not describe when it is not).
  void require_empty(const char* field, const char* allowed) const {
    const auto it = doc_.find(field);
    if (it != doc_.end() && !it->is_null() && !(it->is_array() && it->empty()))
      fail(fmt::format("config.json's '{}' is {}, which dtsim does not describe:", field, it->dump()), allowed);
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
      for (const auto& [prefix, type] : kClassTypes)
        if (a.starts_with(prefix)) return type;
      return a;
    }
    fail("config.json names no model_type and no architectures:", fmt::format("one of {}", kArchitectures));
  }

 private:
  json doc_;
  std::string path_, key_, where_;
};

// The sizes every decoder's config.json names alike (LlamaConfig's names, which DeepSeek's keep).
void decoder_sizes(const Config& c, ModelSpec& m) {
  m.layers = c.integer("num_hidden_layers", kMaxLayers);
  m.hidden = c.integer("hidden_size", kMaxWidth);
  m.heads = c.integer("num_attention_heads", kMaxWidth);
  m.kv_heads = c.integer("num_key_value_heads", kMaxWidth, m.heads);
  m.ffn_hidden = c.integer("intermediate_size", kMaxWidth);
  m.vocab = c.integer("vocab_size", kMaxTokens);
  m.seq_length = c.integer("max_position_embeddings", kMaxTokens);
}

// LLaMA's style: a SwiGLU MLP, RMSNorm, rotary positions, untied unless said, no hidden dropout.
void llama_style(const Config& c, ModelSpec& m) {
  m.activation = Activation::Swiglu;
  m.norm = Norm::RmsNorm;
  m.positions = Positions::Rotary;
  m.tied_embeddings = c.boolean("tie_word_embeddings", false);
  m.hidden_dropout = 0;
  m.attention_dropout = c.probability("attention_dropout", 0);
}

// Llama, Mistral, Qwen2, Qwen3: pre-norm decoders with RMSNorm, rotary positions, a SwiGLU MLP, no biases but
// Qwen2's query/key/value biases (3 x hidden per layer, not counted: 0.002 % of Qwen2-7B) and Qwen3's QK norms
// (2 x head_dim per layer, not counted); heads of head_dim when it is given (Qwen3: 128 whatever the hidden size).
ModelSpec llama_family(const Config& c) {
  ModelSpec m;
  decoder_sizes(c, m);
  if (const std::string act = c.text("hidden_act", "silu"); act != "silu")
    c.fail(fmt::format("config.json's hidden_act is '{}': dtsim's gated MLP is SwiGLU,", act), "silu");
  if (c.has("head_dim")) {
    const int head_dim = c.integer("head_dim", kMaxWidth);
    if (m.hidden % m.heads != 0 || head_dim != m.hidden / m.heads) m.head_size = head_dim;
  }
  llama_style(c, m);
  m.bias = c.boolean("attention_bias", false) && c.boolean("mlp_bias", false);
  return m;
}

// Mixtral: Mistral's layers with every MLP a router over num_local_experts experts of intermediate_size.
ModelSpec mixtral(const Config& c) {
  ModelSpec m = llama_family(c);
  m.experts = c.integer("num_local_experts", kMaxExperts);
  m.experts_per_token = c.integer("num_experts_per_tok", kMaxExperts);
  m.expert_ffn_hidden = m.ffn_hidden;
  return m;
}

// Qwen2-MoE and Qwen3-MoE: num_experts of moe_intermediate_size; Qwen2-MoE's shared expert of
// shared_expert_intermediate_size is counted as that many experts of moe_intermediate_size (its sigmoid gate, h
// per layer, is not counted). Every layer sparse: decoder_sparse_step 1 and no mlp_only_layers (transformers
// makes layer i sparse when (i + 1) % step == 0, which model.moe_layer_freq does not express for other steps).
ModelSpec qwen_moe(const Config& c) {
  ModelSpec m = llama_family(c);
  m.experts = c.integer("num_experts", kMaxExperts);
  m.experts_per_token = c.integer("num_experts_per_tok", kMaxExperts);
  m.expert_ffn_hidden = c.integer("moe_intermediate_size", kMaxWidth);
  if (c.has("shared_expert_intermediate_size")) {
    const int shared = c.integer("shared_expert_intermediate_size", kMaxWidth);
    if (shared % m.expert_ffn_hidden != 0)
      c.fail(fmt::format("config.json's shared_expert_intermediate_size {} is not a multiple of moe_intermediate_size "
                         "{}: dtsim counts shared experts of the routed experts' width, so it needs",
                         shared, m.expert_ffn_hidden),
             "a multiple of moe_intermediate_size");
    m.shared_experts = shared / m.expert_ffn_hidden;
  }
  if (c.integer("decoder_sparse_step", kMaxLayers, 1) != 1)
    c.fail(fmt::format("config.json's decoder_sparse_step is {}: dtsim reads", c.integer("decoder_sparse_step", kMaxLayers)),
           "1 (every layer sparse)");
  c.require_empty("mlp_only_layers", "an empty list (every layer sparse)");
  return m;
}

// DeepSeek-V3 (and V2's shape): multi-head latent attention, first_k_dense_replace dense layers of
// intermediate_size, then MoE layers of n_routed_experts (moe_intermediate_size each) and n_shared_experts, every
// moe_layer_freq-th layer. q_lora_rank null (V2-Lite) is a full Q projection.
ModelSpec deepseek_v3(const Config& c) {
  ModelSpec m;
  decoder_sizes(c, m);
  m.head_size = c.integer("qk_nope_head_dim", kMaxWidth);
  m.rope_head_dim = c.integer("qk_rope_head_dim", kMaxWidth);
  m.v_head_dim = c.integer("v_head_dim", kMaxWidth);
  m.q_lora_rank = c.integer("q_lora_rank", kMaxWidth, 0, 0);
  m.kv_lora_rank = c.integer("kv_lora_rank", kMaxWidth);
  m.experts = c.integer("n_routed_experts", kMaxExperts);
  m.experts_per_token = c.integer("num_experts_per_tok", kMaxExperts);
  m.shared_experts = c.integer("n_shared_experts", kMaxExperts, 0, 0);
  m.expert_ffn_hidden = c.integer("moe_intermediate_size", kMaxWidth);
  m.dense_layers = c.integer("first_k_dense_replace", kMaxLayers, 0, 0);
  m.moe_layer_freq = c.integer("moe_layer_freq", kMaxLayers, 1);
  llama_style(c, m);
  m.bias = c.boolean("attention_bias", false);
  return m;
}

// GPT-2's and BERT's configs: the same layer (LayerNorm, learned positions, GELU, biases everywhere, the output
// layer tied to the embedding) under each one's own field names.
struct Gpt2Fields {
  const char* layers;
  const char* hidden;
  const char* heads;
  const char* ffn;
  const char* positions;
  const char* hidden_dropout;
  const char* attention_dropout;
};

ModelSpec gpt2_layer(const Config& c, const Gpt2Fields& f, bool ffn_optional) {
  ModelSpec m;
  m.layers = c.integer(f.layers, kMaxLayers);
  m.hidden = c.integer(f.hidden, kMaxWidth);
  m.heads = c.integer(f.heads, kMaxWidth);
  m.kv_heads = m.heads;
  m.ffn_hidden = c.integer(f.ffn, kMaxWidth, ffn_optional ? std::optional<long long>(4LL * m.hidden) : std::nullopt);
  m.vocab = c.integer("vocab_size", kMaxTokens);
  m.seq_length = c.integer(f.positions, kMaxTokens);
  m.tied_embeddings = c.boolean("tie_word_embeddings", true);
  m.hidden_dropout = c.probability(f.hidden_dropout, 0.1);
  m.attention_dropout = c.probability(f.attention_dropout, 0.1);
  return m;
}

// GPT-2: n_inner, when absent, is four times the width.
ModelSpec gpt2(const Config& c) {
  return gpt2_layer(c, {"n_layer", "n_embd", "n_head", "n_inner", "n_positions", "resid_pdrop", "attn_pdrop"}, true);
}

// BERT: GPT-2's layer, attending both ways. Its pooler, token-type embeddings and the MLM head's transform are not
// counted (BERT-base: 0.6 M of 109.5 M), as in the presets.
ModelSpec bert(const Config& c) {
  ModelSpec m = gpt2_layer(c,
                           {"num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                            "max_position_embeddings", "hidden_dropout_prob", "attention_probs_dropout_prob"},
                           false);
  m.causal = false;
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
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") m = llama_family(c);
  else if (type == "mixtral") m = mixtral(c);
  else if (type == "qwen2_moe" || type == "qwen3_moe") m = qwen_moe(c);
  else if (type == "deepseek_v3") m = deepseek_v3(c);
  else if (type == "gpt2") m = gpt2(c);
  else if (type == "bert") m = bert(c);
  else
    c.fail(fmt::format("has model_type '{}', an architecture dtsim does not read:", type), kArchitectures);
  // Its name: the model's own (_name_or_path), else the file's (a bare config.json: its folder's, as a checkpoint is).
  const std::filesystem::path file(path);
  m.name = c.text("_name_or_path", "");
  if (m.name.empty()) m.name = file.stem() == "config" ? file.parent_path().filename().string() : file.stem().string();
  m.source = "Hugging Face config.json: " + path;
  return m;
}

}  // namespace dtsim::scenario
