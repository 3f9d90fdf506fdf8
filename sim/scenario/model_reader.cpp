// A scenario's `model` section -> workloads::ModelSpec: a preset or a Hugging Face config.json (model.hf_config)
// gives every field, explicit keys override them; without either every size is required. workloads::validate's
// cross-key checks are reported at the offending key.
#include <array>

#include <fmt/format.h>

#include "sim/scenario/hf_config.hpp"
#include "sim/scenario/workload_reader.hpp"
#include "workloads/layer_list.hpp"

namespace dtsim::scenario {
namespace {

using workloads::ModelSpec;

// The sizes a model without a preset must give; the rest default to a GPT-style layer (ModelSpec's defaults).
constexpr std::array<const char*, 6> kShapeKeys = {"layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_length"};

// A preset or a Hugging Face config.json (`hf_config`, relative to the scenario's folder) gives every size; without
// either every size is required and the model is named after the scenario.
ModelSpec model_base(const YamlMap& m, const std::string& scenario_name, const std::string& file) {
  if (m.has("preset") && m.has("hf_config"))
    m.fail("hf_config", m.text("hf_config").value_or(""), "gives the model a second time beside model.preset:",
           "model.preset or model.hf_config, not both");
  if (const auto preset = m.text("preset"))
    return located(m, "preset", [&] { return workloads::find_model(*preset, m.dotted("preset")); });
  if (const auto hf = m.text("hf_config"))
    return read_hf_config(resolve_path(file, *hf), *hf, m.dotted("hf_config"), m.where("hf_config"));
  for (const char* key : kShapeKeys)
    if (!m.has(key))
      m.fail(key, "", "missing required key (no model.preset or model.hf_config to take it from)", "an integer >= 1");
  ModelSpec base;
  base.name = scenario_name;
  base.source = "scenario";
  return base;
}

// kv_heads follows heads for multi-head attention (no preset, or an MHA preset whose heads are overridden).
int default_kv_heads(const ModelSpec& base, int heads) {
  return base.kv_heads == 0 || base.kv_heads == base.heads ? heads : base.kv_heads;
}

// Mixture of experts and MLA: each key overrides the base's; experts 0 leaves a dense model.
void read_moe_and_mla(const YamlMap& m, ModelSpec& model) {
  model.head_size = read_int(m, "head_dim", model.head_size, 1, kMaxWidth);
  model.q_lora_rank = read_int(m, "q_lora_rank", model.q_lora_rank, 0, kMaxWidth);
  model.kv_lora_rank = read_int(m, "kv_lora_rank", model.kv_lora_rank, 0, kMaxWidth);
  model.rope_head_dim = read_int(m, "rope_head_dim", model.rope_head_dim, 0, kMaxWidth);
  model.v_head_dim = read_int(m, "v_head_dim", model.v_head_dim, 0, kMaxWidth);
  model.experts = read_int(m, "experts", model.experts, 0, kMaxExperts);
  model.experts_per_token = read_int(m, "experts_per_token", model.experts_per_token, 1, kMaxExperts);
  model.shared_experts = read_int(m, "shared_experts", model.shared_experts, 0, kMaxExperts);
  model.expert_ffn_hidden = read_int(m, "expert_ffn_hidden", model.expert_ffn_hidden, 1, kMaxWidth);
  model.moe_layer_freq = read_int(m, "moe_layer_freq", model.moe_layer_freq, 1, kMaxLayers);
  model.dense_layers = read_int(m, "dense_layers", model.dense_layers, 0, kMaxLayers);
  model.expert_imbalance = m.number("expert_imbalance", 1.0, true, kMaxImbalance).value_or(model.expert_imbalance);
  if (model.experts == 0) {   // a dense override of an MoE base drops the MoE sizes the base carried
    for (const char* key : {"experts_per_token", "shared_experts", "expert_ffn_hidden", "moe_layer_freq",
                            "dense_layers", "expert_imbalance"})
      if (m.has(key))
        m.fail(key, m.text(key).value_or(""), "is an MoE key, but model.experts is 0:", "model.experts >= 2 beside it");
    model.experts_per_token = model.shared_experts = model.expert_ffn_hidden = model.dense_layers = 0;
    model.moe_layer_freq = 1;
    model.expert_imbalance = 1.0;
  }
}

void read_model_options(const YamlMap& m, ModelSpec& model) {
  model.activation = read_enum(m, "activation", model.activation, workloads::parse_activation,
                               workloads::kActivationNames);
  model.norm = read_enum(m, "norm", model.norm, workloads::parse_norm, workloads::kNormNames);
  model.positions = read_enum(m, "positions", model.positions, workloads::parse_positions, workloads::kPositionNames);
  model.tied_embeddings = m.boolean("tied_embeddings").value_or(model.tied_embeddings);
  model.bias = m.boolean("bias").value_or(model.bias);
  model.causal = m.boolean("causal").value_or(model.causal);
  model.hidden_dropout = m.number("hidden_dropout", 0.0, true, kMaxDropout).value_or(model.hidden_dropout);
  model.attention_dropout = m.number("attention_dropout", 0.0, true, kMaxDropout).value_or(model.attention_dropout);
}

// workloads::validate's cross-key checks (heads divide hidden, ...), located at the offending key.
void validate_model(const YamlMap& m, const ModelSpec& model) {
  try {
    workloads::validate(model, "model");
  } catch (const InputError& e) {
    // Named where the map sits: model.heads, or inference.speculative.draft.heads for a draft.
    const std::string field = e.key().substr(e.key().find('.') + 1);
    throw InputError(m.dotted(field), e.value(), e.reason(), e.allowed(), m.where(field));
  }
}

// A layer-list model: a preset (resnet50) or model.layers_list, each layer {name, kind, flops, bytes, params,
// activation, gemm: [m, n, k]} per sample.
ModelSpec read_layer_list(const YamlMap& m, const std::string& scenario_name) {
  m.allow_only({"kind", "preset", "layers_list"});
  if (m.has("preset") == m.has("layers_list"))
    m.fail(m.has("preset") ? "layers_list" : "preset", "", "a layer-list model needs exactly one of", "model.preset (" +
           std::string(workloads::kLayerListPresetNames) + ") or model.layers_list");
  if (const auto preset = m.text("preset")) {
    if (!workloads::is_layer_list_preset(*preset))
      m.fail("preset", *preset, "is not a layer-list preset", std::string(workloads::kLayerListPresetNames));
    return workloads::layer_list_preset(*preset, 2.0);   // the activations' width is set with the training section
  }
  ModelSpec model;
  model.name = scenario_name;
  model.source = "scenario";
  model.kind = workloads::ModelKind::Layers;
  model.seq_length = 1;
  constexpr double kMax = 1e18;
  int i = 0;
  for (const YamlMap& l : m.maps("layers_list")) {
    l.allow_only({"name", "kind", "flops", "bytes", "params", "activation", "gemm"});
    workloads::LayerSpec spec;
    spec.name = l.text("name").value_or(fmt::format("layer{}", i++));
    if (!l.has("kind")) l.fail("kind", "", "missing:", std::string(workloads::kLayerKindNames));
    spec.kind = read_enum(l, "kind", spec.kind, workloads::parse_layer_kind, workloads::kLayerKindNames);
    spec.flops = l.number("flops", 0.0, true, kMax).value_or(0.0);
    spec.bytes = l.number("bytes", 0.0, true, kMax).value_or(0.0);
    spec.params = l.number("params", 0.0, true, kMax).value_or(0.0);
    spec.activation = l.number("activation", 0.0, true, kMax).value_or(0.0);
    if (const auto g = l.integers("gemm", 1, 1'000'000'000)) {
      if (g->size() != 3) l.fail("gemm", std::to_string(g->size()) + " numbers", "is not a GEMM shape:", "[m, n, k]");
      spec.gemm_m = static_cast<double>((*g)[0]);
      spec.gemm_n = static_cast<double>((*g)[1]);
      spec.gemm_k = static_cast<double>((*g)[2]);
    }
    if (spec.flops <= 0 && spec.bytes <= 0) l.fail("bytes", "0", "a layer with no FLOPs moves bytes, so not", "bytes > 0");
    model.layer_list.push_back(spec);
  }
  model.layers = static_cast<int>(model.layer_list.size());
  return model;
}

}  // namespace

ModelSpec read_model(const YamlMap& m, const std::string& scenario_name, const std::string& file) {
  const auto preset = m.text("preset");
  const auto kind = read_enum(m, "kind",
                              preset && workloads::is_layer_list_preset(*preset) ? workloads::ModelKind::Layers
                                                                                  : workloads::ModelKind::Transformer,
                              workloads::parse_model_kind, workloads::kModelKindNames);
  if (kind == workloads::ModelKind::Layers) {
    ModelSpec model = read_layer_list(m, scenario_name);
    validate_model(m, model);
    return model;
  }
  if (m.has("layers_list"))
    m.fail("layers_list", "[...]", "lists a layer-list model's layers, but model.kind is transformer:",
           "model.kind: layers beside it");
  m.allow_only({"preset", "hf_config", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "head_vocab",
                "seq_length", "activation", "norm", "positions", "tied_embeddings", "bias", "causal",
                "hidden_dropout", "attention_dropout", "head_dim", "q_lora_rank", "kv_lora_rank", "rope_head_dim",
                "v_head_dim", "experts", "experts_per_token", "shared_experts", "expert_ffn_hidden",
                "moe_layer_freq", "dense_layers", "expert_imbalance", "kind"});
  const ModelSpec base = model_base(m, scenario_name, file);
  ModelSpec model = base;
  model.layers = read_int(m, "layers", base.layers, 1, kMaxLayers);
  model.hidden = read_int(m, "hidden", base.hidden, 1, kMaxWidth);
  model.heads = read_int(m, "heads", base.heads, 1, kMaxWidth);
  model.kv_heads = read_int(m, "kv_heads", default_kv_heads(base, model.heads), 1, kMaxWidth);
  model.ffn_hidden = read_int(m, "ffn_hidden", base.ffn_hidden, 1, kMaxWidth);
  model.vocab = read_int(m, "vocab", base.vocab, 1, kMaxTokens);
  model.head_vocab = read_int(m, "head_vocab", base.head_vocab, 0, kMaxTokens);
  if (model.head_vocab == model.vocab) model.head_vocab = 0;   // the default, however it was written
  model.seq_length = read_int(m, "seq_length", base.seq_length, 1, kMaxTokens);
  read_model_options(m, model);
  read_moe_and_mla(m, model);
  validate_model(m, model);
  return model;
}


}  // namespace dtsim::scenario
