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
#include <vector>

namespace dtsim::workloads {

enum class Activation { Gelu, Swiglu };
// What a model is (model.kind): a transformer described by its shape, or a network given as a list of layers
// (layer_list.hpp), trained with data parallelism.
enum class ModelKind { Transformer, Layers };
std::string_view to_string(ModelKind k);
std::optional<ModelKind> parse_model_kind(std::string_view name);
inline constexpr std::string_view kModelKindNames = "transformer, layers";

// One layer of a layer-list model, per sample: forward FLOPs (2 per multiply-add), the bytes it reads and writes
// forward, its parameters, the bytes the backward needs kept, and for a conv or matmul its GEMM per sample (m
// output positions, n output channels, k input channels x kernel area; all 0: timed as a large GEMM).
enum class LayerKind { Conv, BatchNorm, Pool, Matmul, Elementwise };
struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::Elementwise;
  double flops = 0;
  double bytes = 0;
  double params = 0;
  double activation = 0;
  double gemm_m = 0, gemm_n = 0, gemm_k = 0;
};
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
  ModelKind kind = ModelKind::Transformer;
  std::vector<LayerSpec> layer_list{};   // kind Layers: the network, in forward order (the sizes below unused but
                                       // layers = its length and seq_length = 1: a sample is one "token")
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
  int head_size = 0;           // model.head_dim: per-head width of Q, K and V; 0 = hidden / heads (Qwen3: 128
                               // with hidden 4096 and 64 heads, so Q is wider than the hidden state)
  // Multi-head latent attention (DeepSeek-V2/V3), when kv_lora_rank > 0: Q through a rank q_lora_rank bottleneck
  // (0 = a full h x heads x (head_dim + rope_head_dim) projection), K and V through one rank kv_lora_rank latent
  // (cached at inference) plus a shared rope_head_dim key; heads of head_dim + rope_head_dim for Q K^T and of
  // v_head_dim for the values.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int rope_head_dim = 0;
  int v_head_dim = 0;
  // Mixture of experts (Megatron-Core's MoE layer, dropless): experts > 0 replaces the MLP of every
  // moe_layer_freq-th layer from dense_layers on (Megatron's --moe-layer-freq; layer i, counted from 0, is MoE
  // when i >= dense_layers and i % moe_layer_freq == 0) by a router over `experts` SwiGLU/gelu experts of width
  // expert_ffn_hidden, each token sent to experts_per_token of them, plus shared_experts always-on experts of the
  // same width. The other layers keep the dense MLP of ffn_hidden.
  int experts = 0;
  int experts_per_token = 0;
  int shared_experts = 0;
  int expert_ffn_hidden = 0;   // 0 = ffn_hidden
  int moe_layer_freq = 1;
  int dense_layers = 0;
  // The busiest expert-parallel rank's tokens over the mean (1 = balanced, as NVIDIA's benchmarks force with
  // --moe-router-force-load-balancing): its expert GEMMs and token exchange take that much longer, and every rank
  // waits for it at the combine.
  double expert_imbalance = 1.0;
  std::string source;          // where a preset's figures come from

  [[nodiscard]] int head_dim() const { return head_size > 0 ? head_size : hidden / heads; }
  [[nodiscard]] int kv_dim() const { return kv_heads * head_dim(); }
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
  [[nodiscard]] int q_dim() const { return heads * (head_dim() + rope_head_dim); }   // Q's width (= Q K^T's)
  [[nodiscard]] int value_dim() const { return heads * (mla() ? v_head_dim : head_dim()); }   // the projection's input
  [[nodiscard]] bool moe() const { return experts > 0; }
  [[nodiscard]] int expert_width() const { return expert_ffn_hidden > 0 ? expert_ffn_hidden : ffn_hidden; }
  [[nodiscard]] bool moe_layer(int layer) const {
    return moe() && layer >= dense_layers && layer % moe_layer_freq == 0;
  }
  [[nodiscard]] int logits_width() const { return head_vocab > 0 ? head_vocab : vocab; }
};

// Parameter counts, exact (weights, biases, norms, embeddings), in parameters.
// A dense layer (attention and the MLP of ffn_hidden).
double layer_parameters(const ModelSpec& m);
// A dense layer's parameters by linear module, as ZeRO-3 gathers them one sub-module at a time: Q K V (with the
// norms and biases), the output projection, the MLP's up (and gate), its down projection. Sums to
// layer_parameters(m).
std::array<double, 4> layer_module_parameters(const ModelSpec& m);
// Attention's parameters (Q K V or MLA's projections, the output projection, their biases) without the norms.
double attention_parameters(const ModelSpec& m);
// An MoE layer's parts: what every rank of the expert-parallel group holds (attention, norms, the router, the
// shared experts) and the routed experts (sharded over ep x etp).
struct MoeLayerParameters {
  double attention = 0;   // attention with its biases and the two norms
  double router = 0;      // h x experts
  double shared_up = 0;   // shared experts' up (and gate) and down projections
  double shared_down = 0;
  double expert_up = 0;   // all routed experts'
  double expert_down = 0;
  [[nodiscard]] double dense() const { return attention + router + shared_up + shared_down; }
  [[nodiscard]] double routed() const { return expert_up + expert_down; }
};
MoeLayerParameters moe_layer_parameters(const ModelSpec& m);
// Layer `layer`'s parameters (dense or MoE, all experts counted), and the parts of them every expert-parallel
// rank holds (dense) and the routed experts' (routed).
double layer_parameters(const ModelSpec& m, int layer);
double layer_dense_parameters(const ModelSpec& m, int layer);
double layer_routed_parameters(const ModelSpec& m, int layer);
int moe_layer_count(const ModelSpec& m);
// Parameters one token computes with: every expert it is not routed to left out.
double active_parameter_count(const ModelSpec& m);
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
