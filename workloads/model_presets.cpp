// Model presets: published transformer shapes as data, each with the source of its figures. A scenario's
// `model.preset` names one; explicit keys override its fields.
//
// Families share their style (activation, norm, positions, biases, tying); each row gives the sizes:
// - GPT (GPT-3, Megatron-LM's GPT sizes) and BERT: gelu MLP of 4h, LayerNorm, learned positions, biases, tied
//   embeddings,
//   dropout 0.1;
// - LLaMA 1/2/3: SwiGLU MLP, RMSNorm, rotary positions, no biases, untied output projection, no dropout.
// Megatron-LM pads its GPT vocabulary to 51200 (GPT-2/3's BPE has 50257); its parameter counts, which the
// presets reproduce, use 51200.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "topology/error.hpp"
#include "workloads/model.hpp"

namespace dtsim::workloads {
namespace {

constexpr int kMegatronVocab = 51200;
constexpr int kMegatronSeq = 2048;

struct Sizes {
  const char* name;
  int layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_length;
  const char* source;
};

ModelSpec shape(const Sizes& s) {
  return {.name = s.name, .layers = s.layers, .hidden = s.hidden, .heads = s.heads, .kv_heads = s.kv_heads,
          .ffn_hidden = s.ffn_hidden, .vocab = s.vocab, .seq_length = s.seq_length, .source = s.source};
}

// GPT-3 / Megatron GPT / BERT: gelu, LayerNorm, learned positions, biases, tied embeddings (ModelSpec's defaults).
ModelSpec gpt_style(const Sizes& s) { return shape(s); }

ModelSpec llama_style(const Sizes& s) {
  ModelSpec m = shape(s);
  m.activation = Activation::Swiglu;
  m.norm = Norm::RmsNorm;
  m.positions = Positions::Rotary;
  m.tied_embeddings = false;
  m.bias = false;
  m.hidden_dropout = m.attention_dropout = 0.0;   // LLaMA trains without dropout (Megatron's and NeMo's recipes)
  return m;
}

// One of Megatron-LM SC'21 Table 1's GPT models (../shared/calibration/megatron_sc21.csv): layers, hidden and
// heads from the row; ffn 4h, vocab 51200 and seq 2048 as the paper states for all of them.
ModelSpec megatron_gpt(const char* name, int layers, int hidden, int heads) {
  return gpt_style({name, layers, hidden, heads, heads, 4 * hidden, kMegatronVocab, kMegatronSeq,
                    "Narayanan et al., SC'21, Table 1 (megatron_sc21.csv): layers, hidden, heads; ffn 4h, "
                    "vocab 51200, seq 2048 as stated there"});
}

std::vector<ModelSpec> make_gpt() {
  return {
      gpt_style({"gpt3-175b", 96, 12288, 96, 96, 4 * 12288, kMegatronVocab, kMegatronSeq,
                 "Brown et al. 2020 (GPT-3), Table 2.1: 96 layers, d_model 12288, 96 heads, context 2048; vocab "
                 "51200 as Megatron-LM pads it (GPT-3's BPE has 50257), giving Megatron's 174.6B (SC'21 Table 2); "
                 "the article's 'GPT-3 175B' and '175B model' (S9, S12, S15, S16, S19)"}),
      megatron_gpt("gpt-1.7b", 24, 2304, 24),
      megatron_gpt("gpt-3.6b", 30, 3072, 32),
      megatron_gpt("gpt-7.5b", 36, 4096, 32),
      megatron_gpt("gpt-18.4b", 40, 6144, 48),
      megatron_gpt("gpt-39.1b", 48, 8192, 64),
      megatron_gpt("gpt-76.1b", 60, 10240, 80),
      megatron_gpt("gpt-145.6b", 80, 12288, 96),
      megatron_gpt("gpt-310.1b", 96, 16384, 128),
      megatron_gpt("gpt-529.6b", 105, 20480, 128),
      megatron_gpt("gpt-1008b", 128, 25600, 160),
      gpt_style({"gpt-22b", 48, 6144, 64, 64, 4 * 6144, kMegatronVocab, kMegatronSeq,
                 "Korthikanti et al., MLSys'23, Table 3: 48 layers, hidden 6144, 64 heads, seq 2048 (the model of "
                 "layer_times_22b.csv); ffn 4h and vocab 51200 as Megatron-LM's GPT: 22.1B by this count"}),
  };
}

std::vector<ModelSpec> make_llama() {
  return {
      llama_style({"llama-7b", 32, 4096, 32, 32, 11008, 32000, 2048,
                   "Touvron et al. 2023 (LLaMA), Table 2: 32 layers, dim 4096, 32 heads, context 2048; ffn 11008, "
                   "vocab 32000 from the released weights; the article's 'LLaMA-7B' (S7)"}),
      llama_style({"llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096,
                   "Touvron et al. 2023 (Llama 2) and its released config.json: 6.74B; the article's "
                   "'7B model' (S5, S19)"}),
      llama_style({"llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096,
                   "Touvron et al. 2023 (Llama 2) and its released config.json: 13.0B; the article's "
                   "'13B model' (S19)"}),
      llama_style({"llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096,
                   "Touvron et al. 2023 (Llama 2), GQA with 8 KV heads, and its released config.json: 69.0B; the "
                   "article's 'LLaMA-70B' (LLaMA 1 had no 70B) and '70B model' (S1, S4, S14, S18-S20)"}),
      llama_style({"llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192,
                   "Meta Llama 3 model card and released config.json: 8.03B, GQA with 8 KV heads, context 8192"}),
      llama_style({"llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192,
                   "Meta Llama 3 model card and released config.json: 70.6B, GQA with 8 KV heads, context 8192"}),
      llama_style({"llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192,
                   "Dubey et al. 2024 (The Llama 3 Herd of Models), Table 3: 405.9B, GQA with 8 KV heads; "
                   "pre-training context 8192 (extended to 128K afterwards)"}),
  };
}

// Counted: encoder layers, token and position embeddings, the embedding LayerNorm (in the final norm's place,
// same size). Not counted: the pooler and the token-type embeddings (HF BertModel's 109.5M / 335.1M include
// them; the MLM head is outside BertModel).
std::vector<ModelSpec> make_bert() {
  std::vector<ModelSpec> bert = {
      gpt_style({"bert-base", 12, 768, 12, 12, 3072, 30522, 512,
                 "Devlin et al. 2019 (BERT): L 12, H 768, A 12, ffn 4H, WordPiece vocab 30522, 512 positions; "
                 "108.9M without pooler and token-type embeddings (the paper's 110M with them); the article's "
                 "'BERT-base' (S8)"}),
      gpt_style({"bert-large", 24, 1024, 16, 16, 4096, 30522, 512,
                 "Devlin et al. 2019 (BERT): L 24, H 1024, A 16, ffn 4H, WordPiece vocab 30522, 512 positions; "
                 "334.1M without pooler and token-type embeddings (the paper's 340M with them)"}),
  };
  for (ModelSpec& m : bert) m.causal = false;   // an encoder attends both ways
  // Pre-training as MLPerf's BERT benchmark runs it: sequence 512, the masked-LM head over the masked tokens only
  // (at most 76 of 512, max_predictions_per_seq), counted as that share of the vocabulary over every token.
  ModelSpec pretraining = bert[1];
  pretraining.name = "bert-large-pretraining";
  pretraining.head_vocab = static_cast<int>(30522LL * 76 / 512);
  pretraining.source = "BERT-large (Devlin et al. 2019) as MLPerf Training pre-trains it (mlcommons/training "
                       "language_model/tensorflow/bert: sequence 512, max_predictions_per_seq 76): the MLM head over "
                       "76/512 of the tokens, written as head_vocab 4530 over all; its transform and the NSP head not "
                       "counted";
  bert.push_back(pretraining);
  return bert;
}

// Mixtures of experts: LLaMA-style layers (SwiGLU experts, RMSNorm, rotary positions, no biases, untied, no
// dropout) whose MLPs are MoE layers.
ModelSpec moe_style(const Sizes& s, int experts, int top_k, int expert_ffn) {
  ModelSpec m = llama_style(s);
  m.experts = experts;
  m.experts_per_token = top_k;
  m.expert_ffn_hidden = expert_ffn;
  return m;
}

// DeepSeek-V3's multi-head latent attention is simulated with its exact parameters and FLOPs, but as one fused
// QKV GEMM (its four projections' FLOPs in one GEMM of h rows) and a fused attention kernel of the mean head
// width of Q K^T (192) and probabilities x V (128); Megatron-Core replicates the down projections over TP where
// dtsim splits them (its rows run TP 1 or 2). Its multi-token-prediction module (one extra layer in training) is
// not counted.
ModelSpec deepseek_v3() {
  ModelSpec m = moe_style({"deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096,
                           "DeepSeek-AI 2024 (DeepSeek-V3 Technical Report, arXiv:2412.19437) and "
                           "deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json: 61 layers (the first 3 dense, "
                           "ffn 18432), dim 7168, 128 heads, MLA (q_lora_rank 1536, kv_lora_rank 512, head dims 128 "
                           "+ 64 rope, v 128), 256 routed experts of 2048, top-8, one shared expert, vocab 129280, "
                           "pre-training sequence 4K: 671.0B by this count (MTP not counted), 37.5B active"},
                          256, 8, 2048);
  m.shared_experts = 1;
  m.dense_layers = 3;
  m.head_size = 128;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.rope_head_dim = 64;
  m.v_head_dim = 128;
  return m;
}

std::vector<ModelSpec> make_moe() {
  ModelSpec qwen3_235b = moe_style({"qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 151936, 4096,
                                    "Qwen3 (Qwen team 2025) released config.json, as Megatron-LM's "
                                    "examples/moe_recipes/qwen3_235b: 94 layers, hidden 4096, 64 heads of 128 (Q "
                                    "8192 wide), 4 KV groups, 128 experts of 1536, top-8, vocab 151936, untied; "
                                    "pre-training sequence 4096: 235.1B by this count, 22.1B active (QK norms not "
                                    "counted)"},
                                   128, 8, 1536);
  qwen3_235b.head_size = 128;
  ModelSpec qwen3_30b = moe_style({"qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 4096,
                                   "Qwen3 released config.json, as Megatron-LM's examples/moe_recipes/qwen3_30b: 48 "
                                   "layers, hidden 2048, 32 heads of 128, 4 KV groups, 128 experts of 768, top-8, "
                                   "vocab 151936, untied: 30.5B by this count, 3.3B active"},
                                  128, 8, 768);
  qwen3_30b.head_size = 128;
  return {
      moe_style({"mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768,
                 "Jiang et al. 2024 (Mixtral of Experts) and mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, "
                 "dim 4096, 32 heads, 8 KV heads, 8 experts of 14336, top-2, vocab 32000, context 32768: 46.7B, "
                 "12.9B active"},
                8, 2, 14336),
      moe_style({"mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 65536,
                 "mistralai/Mixtral-8x22B-v0.1 config.json: 56 layers, dim 6144, 48 heads, 8 KV heads, 8 experts "
                 "of 16384, top-2, vocab 32768, context 65536: 140.6B, 39.2B active"},
                8, 2, 16384),
      deepseek_v3(),
      qwen3_235b,
      qwen3_30b,
  };
}

std::vector<ModelSpec> make_presets() {
  std::vector<ModelSpec> all;
  for (auto family : {make_gpt(), make_llama(), make_bert(), make_moe()})
    all.insert(all.end(), family.begin(), family.end());
  return all;
}

}  // namespace

std::span<const ModelSpec> model_presets() {
  static const std::vector<ModelSpec> presets = make_presets();
  return presets;
}

const ModelSpec& find_model(std::string_view name, std::string_view key) {
  const auto presets = model_presets();
  const auto it = std::ranges::find(presets, name, &ModelSpec::name);
  if (it == presets.end()) throw InputError(std::string(key), std::string(name), "unknown model preset", model_names());
  return *it;
}

std::string model_names() {
  std::string out;
  for (const auto& m : model_presets()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

}  // namespace dtsim::workloads
