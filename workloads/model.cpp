#include "workloads/model.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/name_table.hpp"

namespace dtsim::workloads {
namespace {

using topology::NameTable;
using topology::name_of;
using topology::value_of;

constexpr NameTable<Activation, 2> kActivations{{{Activation::Gelu, "gelu"}, {Activation::Swiglu, "swiglu"}}};
constexpr NameTable<Norm, 2> kNorms{{{Norm::LayerNorm, "layernorm"}, {Norm::RmsNorm, "rmsnorm"}}};
constexpr NameTable<ModelKind, 2> kModelKinds{{{ModelKind::Transformer, "transformer"}, {ModelKind::Layers, "layers"}}};
constexpr NameTable<Positions, 2> kPositions{{{Positions::Learned, "learned"}, {Positions::Rotary, "rotary"}}};

double norm_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  return m.norm == Norm::LayerNorm ? 2.0 * h : h;   // scale (+ shift)
}

void require_positive(int value, std::string_view prefix, const char* key) {
  if (value <= 0)
    throw InputError(fmt::format("{}.{}", prefix, key), std::to_string(value), "must be positive, got", "an integer >= 1");
}

}  // namespace

std::string_view to_string(ModelKind k) { return name_of(kModelKinds, k); }
std::optional<ModelKind> parse_model_kind(std::string_view name) { return value_of(kModelKinds, name); }
std::string_view to_string(Activation a) { return name_of(kActivations, a); }
std::string_view to_string(Norm n) { return name_of(kNorms, n); }
std::string_view to_string(Positions p) { return name_of(kPositions, p); }
std::optional<Activation> parse_activation(std::string_view name) { return value_of(kActivations, name); }
std::optional<Norm> parse_norm(std::string_view name) { return value_of(kNorms, name); }
std::optional<Positions> parse_positions(std::string_view name) { return value_of(kPositions, name); }

// Attention: Q (h x heads x head_dim), K and V (h x kv_dim each), the output projection (heads x head_dim x h);
// with MLA, Q's down and up projections (and the norm between them), the latent KV's down projection with the
// shared rope key, its norm, and its up projection to the heads' keys and values. Biases on the column-parallel
// Q K V and on the row-parallel output when `bias`.
double attention_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  const double out = static_cast<double>(m.value_dim()) * h + (m.bias ? h : 0.0);
  if (!m.mla()) {
    const double qkv = static_cast<double>(m.q_dim()) + 2.0 * m.kv_dim();
    return h * qkv + (m.bias ? qkv : 0.0) + out;
  }
  const double q_lora = m.q_lora_rank;
  const double q = q_lora > 0 ? h * q_lora + q_lora + q_lora * m.q_dim() : h * m.q_dim();
  const double kv_lora = m.kv_lora_rank;
  const double kv = h * (kv_lora + m.rope_head_dim) + kv_lora +
                    kv_lora * static_cast<double>(m.heads) * (m.head_dim() + m.v_head_dim);
  return q + kv + out;
}

namespace {

double mlp_matrices(const ModelSpec& m) { return m.activation == Activation::Swiglu ? 3.0 : 2.0; }

// An MLP of width f: up (and gate) and down, with their biases.
double mlp_up_parameters(const ModelSpec& m, double f) {
  return (mlp_matrices(m) - 1.0) * f * (m.hidden + (m.bias ? 1.0 : 0.0));
}
double mlp_down_parameters(const ModelSpec& m, double f) { return f * m.hidden + (m.bias ? m.hidden : 0.0); }

}  // namespace

// A dense layer: attention, an MLP of ffn_hidden, two norms.
double layer_parameters(const ModelSpec& m) {
  const double f = m.ffn_hidden;
  return attention_parameters(m) + mlp_up_parameters(m, f) + mlp_down_parameters(m, f) + 2.0 * norm_parameters(m);
}

std::array<double, 4> layer_module_parameters(const ModelSpec& m) {
  const double f = m.ffn_hidden;
  const double proj = static_cast<double>(m.value_dim()) * m.hidden;
  const double up = (mlp_matrices(m) - 1.0) * m.hidden * f;
  const double down = m.hidden * f;
  return {layer_parameters(m) - proj - up - down, proj, up, down};
}

MoeLayerParameters moe_layer_parameters(const ModelSpec& m) {
  const double f = m.expert_width();
  MoeLayerParameters p;
  p.attention = attention_parameters(m) + 2.0 * norm_parameters(m);
  p.router = static_cast<double>(m.hidden) * m.experts;
  p.shared_up = m.shared_experts * mlp_up_parameters(m, f);
  p.shared_down = m.shared_experts * mlp_down_parameters(m, f);
  p.expert_up = m.experts * mlp_up_parameters(m, f);
  p.expert_down = m.experts * mlp_down_parameters(m, f);
  return p;
}

double layer_parameters(const ModelSpec& m, int layer) {
  if (!m.moe_layer(layer)) return layer_parameters(m);
  const MoeLayerParameters p = moe_layer_parameters(m);
  return p.dense() + p.routed();
}

double layer_dense_parameters(const ModelSpec& m, int layer) {
  return m.moe_layer(layer) ? moe_layer_parameters(m).dense() : layer_parameters(m);
}

double layer_routed_parameters(const ModelSpec& m, int layer) {
  return m.moe_layer(layer) ? moe_layer_parameters(m).routed() : 0.0;
}

int moe_layer_count(const ModelSpec& m) {
  int n = 0;
  for (int l = 0; l < m.layers; ++l) n += m.moe_layer(l) ? 1 : 0;
  return n;
}

double embedding_parameters(const ModelSpec& m) {
  const double positions = m.positions == Positions::Learned ? static_cast<double>(m.seq_length) : 0.0;
  return (static_cast<double>(m.vocab) + positions) * m.hidden;
}

double logits_parameters(const ModelSpec& m) {
  return m.tied_embeddings ? 0.0 : static_cast<double>(m.logits_width()) * m.hidden;
}

double final_norm_parameters(const ModelSpec& m) { return norm_parameters(m); }

double parameter_count(const ModelSpec& m) {
  if (m.kind == ModelKind::Layers) {
    double n = 0;
    for (const LayerSpec& l : m.layer_list) n += l.params;
    return n;
  }
  const int moe = moe_layer_count(m);
  const MoeLayerParameters p = moe_layer_parameters(m);
  return (m.layers - moe) * layer_parameters(m) + moe * (p.dense() + p.routed()) + embedding_parameters(m) +
         logits_parameters(m) + final_norm_parameters(m);
}

double active_parameter_count(const ModelSpec& m) {
  if (!m.moe()) return parameter_count(m);
  const MoeLayerParameters p = moe_layer_parameters(m);
  const double inactive = p.routed() * (1.0 - static_cast<double>(m.experts_per_token) / m.experts);
  return parameter_count(m) - moe_layer_count(m) * inactive;
}

void validate(const ModelSpec& m, std::string_view prefix) {
  if (m.kind == ModelKind::Layers) {
    if (m.layer_list.empty())
      throw InputError(fmt::format("{}.layers_list", prefix), "", "is empty:", "at least one layer");
    return;   // each layer's values are range-checked as they are read
  }
  require_positive(m.layers, prefix, "layers");
  require_positive(m.hidden, prefix, "hidden");
  require_positive(m.heads, prefix, "heads");
  require_positive(m.kv_heads, prefix, "kv_heads");
  require_positive(m.ffn_hidden, prefix, "ffn_hidden");
  require_positive(m.vocab, prefix, "vocab");
  require_positive(m.seq_length, prefix, "seq_length");
  const auto key = [&](const char* name) { return fmt::format("{}.{}", prefix, name); };
  if (m.head_size == 0 && m.hidden % m.heads != 0)
    throw InputError(key("heads"), std::to_string(m.heads), fmt::format("does not divide hidden {}:", m.hidden),
                     "a divisor of hidden, or model.head_dim given");
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    throw InputError(key("kv_heads"), std::to_string(m.kv_heads),
                     fmt::format("does not divide heads {}:", m.heads), "a divisor of heads (1 = MQA, heads = MHA)");
  // Q's, the values' and K/V's widths stay ints (and within what any GPU holds).
  constexpr long long kMostWidth = 100'000'000;
  const long long head = static_cast<long long>(m.head_size > 0 ? m.head_size : m.hidden / m.heads);
  for (const long long width : {static_cast<long long>(m.heads) * (head + m.rope_head_dim),
                                static_cast<long long>(m.heads) * std::max(head, static_cast<long long>(m.v_head_dim))})
    if (width > kMostWidth)
      throw InputError(key("head_dim"), std::to_string(head),
                       fmt::format("makes the attention {} wide with {} heads, more than dtsim holds:", width, m.heads),
                       fmt::format("heads x head_dim <= {}", kMostWidth));
  if (m.mla() && (m.rope_head_dim <= 0 || m.v_head_dim <= 0))
    throw InputError(key(m.rope_head_dim <= 0 ? "rope_head_dim" : "v_head_dim"),
                     std::to_string(m.rope_head_dim <= 0 ? m.rope_head_dim : m.v_head_dim),
                     "must be positive with kv_lora_rank (MLA), got", "an integer >= 1");
  if (!m.mla() && (m.q_lora_rank > 0 || m.rope_head_dim > 0 || m.v_head_dim > 0))
    throw InputError(key(m.q_lora_rank > 0 ? "q_lora_rank" : m.rope_head_dim > 0 ? "rope_head_dim" : "v_head_dim"),
                     std::to_string(m.q_lora_rank > 0 ? m.q_lora_rank : m.rope_head_dim > 0 ? m.rope_head_dim : m.v_head_dim),
                     "is an MLA size, but model.kv_lora_rank is not set:", "model.kv_lora_rank > 0 beside it");
  if (!m.moe()) {
    if (m.experts_per_token > 0 || m.shared_experts > 0 || m.expert_ffn_hidden > 0 || m.dense_layers > 0 ||
        m.moe_layer_freq != 1 || m.expert_imbalance != 1.0)
      throw InputError(key("experts"), "0", "is not set, but an MoE key is:",
                       "model.experts >= 2 beside experts_per_token, shared_experts, expert_ffn_hidden, "
                       "moe_layer_freq, dense_layers or expert_imbalance");
    return;
  }
  if (m.experts < 2)
    throw InputError(key("experts"), std::to_string(m.experts), "too few for a mixture of experts:", "an integer >= 2");
  if (m.experts_per_token < 1 || m.experts_per_token > m.experts)
    throw InputError(key("experts_per_token"), std::to_string(m.experts_per_token),
                     fmt::format("out of range for {} experts:", m.experts), fmt::format("1..{}", m.experts));
  if (m.dense_layers >= m.layers)
    throw InputError(key("dense_layers"), std::to_string(m.dense_layers),
                     fmt::format("leaves no MoE layer of {}:", m.layers), fmt::format("0..{}", m.layers - 1));
  if (moe_layer_count(m) == 0)
    throw InputError(key("moe_layer_freq"), std::to_string(m.moe_layer_freq), "leaves no MoE layer:",
                     "a frequency that reaches a layer from dense_layers on");
}

}  // namespace dtsim::workloads
