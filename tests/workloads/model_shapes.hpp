// Model shapes as the presets give them, built here so the workload tests depend on no preset table (a preset
// that drifted would otherwise move the expected figures with it).
#pragma once

#include "workloads/model.hpp"

namespace dtsim::workloads::test_shapes {

inline ModelSpec shape(int layers, int hidden, int heads, int kv_heads, int ffn, int vocab, int seq) {
  ModelSpec m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.seq_length = seq;
  return m;   // GPT style: gelu, LayerNorm, learned positions, biases, tied embeddings
}
inline ModelSpec llama(int layers, int hidden, int heads, int kv_heads, int ffn, int seq) {
  ModelSpec m = shape(layers, hidden, heads, kv_heads, ffn, 32000, seq);
  m.activation = Activation::Swiglu;
  m.norm = Norm::RmsNorm;
  m.positions = Positions::Rotary;
  m.tied_embeddings = false;
  m.bias = false;
  return m;
}
inline ModelSpec llama2_7b() { return llama(32, 4096, 32, 32, 11008, 4096); }
inline ModelSpec llama2_13b() { return llama(40, 5120, 40, 40, 13824, 4096); }
inline ModelSpec llama2_70b() { return llama(80, 8192, 64, 8, 28672, 4096); }
inline ModelSpec gpt3_175b() { return shape(96, 12288, 96, 96, 49152, 51200, 2048); }

}  // namespace dtsim::workloads::test_shapes
