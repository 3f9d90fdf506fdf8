// A transformer model's shape: what a scenario's `model` section says, resolved from a preset and overrides.
//
// GPT-style decoder (and BERT-style encoder: the same layer, bidirectional attention, which costs the same).
// Per layer: attention (Q from hidden, K and V from kv_heads x head_dim, an output projection) and an MLP
// (gelu: up + down; swiglu: gate + up + down), each behind a norm, with residual adds.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dtsim::workloads {

enum class Activation { Gelu, Swiglu };
enum class Norm { LayerNorm, RmsNorm };
enum class Positions { Learned, Rotary };

std::string_view to_string(Activation a);
std::string_view to_string(Norm n);
std::string_view to_string(Positions p);
std::optional<Activation> parse_activation(std::string_view name);
std::optional<Norm> parse_norm(std::string_view name);
std::optional<Positions> parse_positions(std::string_view name);
inline constexpr std::string_view kActivationNames = "gelu, swiglu";
inline constexpr std::string_view kNormNames = "layernorm, rmsnorm";
inline constexpr std::string_view kPositionNames = "learned, rotary";

struct ModelSpec {
  std::string name;            // preset name, or the scenario's own
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;            // = heads for multi-head attention; fewer for GQA, 1 for MQA
  int ffn_hidden = 0;
  int vocab = 0;
  int head_vocab = 0;          // logits per token of the output layer; 0 = vocab. Tied to the embedding it holds
                               // no weights of its own and only sets the width (a head over a fraction of the
                               // tokens, BERT's masked-token MLM head, as that fraction of the vocabulary over all)
  int seq_length = 0;
  Activation activation = Activation::Gelu;
  Norm norm = Norm::LayerNorm;
  Positions positions = Positions::Learned;
  bool tied_embeddings = true;
  bool bias = true;            // linear layers carry biases (GPT, BERT) or not (LLaMA)
  bool causal = true;          // decoder attention under a causal mask (GPT, LLaMA); false: bidirectional (BERT)
  // Dropout probabilities as Megatron names them (--hidden-dropout, --attention-dropout; 0.1 by default, as GPT and
  // BERT trained): after the embedding, the projection and the MLP; over the attention probabilities. At 0 the
  // kernels skip it (torch's dropout returns its input) and no mask is kept, as LLaMA-style recipes train.
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  std::string source;          // where a preset's figures come from

  [[nodiscard]] int head_dim() const { return hidden / heads; }
  [[nodiscard]] int kv_dim() const { return kv_heads * head_dim(); }
  [[nodiscard]] int logits_width() const { return head_vocab > 0 ? head_vocab : vocab; }
};

// Parameter counts, exact (weights, biases, norms, embeddings), in parameters.
double layer_parameters(const ModelSpec& m);
// One layer's parameters by linear module, as ZeRO-3 gathers them one sub-module at a time: Q K V (with the
// norms and biases), the output projection, the MLP's up (and gate), its down projection. Sums to
// layer_parameters(m).
std::array<double, 4> layer_module_parameters(const ModelSpec& m);
double embedding_parameters(const ModelSpec& m);   // token (+ learned positions) embedding
double logits_parameters(const ModelSpec& m);      // output projection: 0 when tied to the embedding
double final_norm_parameters(const ModelSpec& m);
double parameter_count(const ModelSpec& m);

std::span<const ModelSpec> model_presets();
// Throws InputError naming `key` and listing the presets when `name` is unknown.
const ModelSpec& find_model(std::string_view name, std::string_view key = "model.preset");
std::string model_names();

// Checks a resolved model: positive sizes, hidden divisible by heads, heads by kv_heads; throws InputError with
// the offending key under `prefix` ("model").
void validate(const ModelSpec& m, std::string_view prefix = "model");

}  // namespace dtsim::workloads
