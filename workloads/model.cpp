#include "workloads/model.hpp"

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

std::string_view to_string(Activation a) { return name_of(kActivations, a); }
std::string_view to_string(Norm n) { return name_of(kNorms, n); }
std::string_view to_string(Positions p) { return name_of(kPositions, p); }
std::optional<Activation> parse_activation(std::string_view name) { return value_of(kActivations, name); }
std::optional<Norm> parse_norm(std::string_view name) { return value_of(kNorms, name); }
std::optional<Positions> parse_positions(std::string_view name) { return value_of(kPositions, name); }

// Attention: Q and O are h x h, K and V are h x kv_dim. MLP: gelu has up and down (h x ffn each), swiglu adds
// a gate. Biases on every linear layer when `bias`; two norms per layer.
double layer_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  const double kv = m.kv_dim();
  const double f = m.ffn_hidden;
  const double mlp_matrices = m.activation == Activation::Swiglu ? 3.0 : 2.0;
  double weights = 2.0 * h * h + 2.0 * h * kv + mlp_matrices * h * f;
  double biases = 0.0;
  if (m.bias) biases = (h + 2.0 * kv) + h + (mlp_matrices - 1.0) * f + h;
  return weights + biases + 2.0 * norm_parameters(m);
}

std::array<double, 4> layer_module_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double up = (m.activation == Activation::Swiglu ? 2.0 : 1.0) * h * f;
  const double proj = h * h;
  const double down = h * f;
  return {layer_parameters(m) - proj - up - down, proj, up, down};
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
  return m.layers * layer_parameters(m) + embedding_parameters(m) + logits_parameters(m) + final_norm_parameters(m);
}

void validate(const ModelSpec& m, std::string_view prefix) {
  require_positive(m.layers, prefix, "layers");
  require_positive(m.hidden, prefix, "hidden");
  require_positive(m.heads, prefix, "heads");
  require_positive(m.kv_heads, prefix, "kv_heads");
  require_positive(m.ffn_hidden, prefix, "ffn_hidden");
  require_positive(m.vocab, prefix, "vocab");
  require_positive(m.seq_length, prefix, "seq_length");
  if (m.hidden % m.heads != 0)
    throw InputError(fmt::format("{}.heads", prefix), std::to_string(m.heads),
                     fmt::format("does not divide hidden {}:", m.hidden), "a divisor of hidden");
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    throw InputError(fmt::format("{}.kv_heads", prefix), std::to_string(m.kv_heads),
                     fmt::format("does not divide heads {}:", m.heads), "a divisor of heads (1 = MQA, heads = MHA)");
}

}  // namespace dtsim::workloads
