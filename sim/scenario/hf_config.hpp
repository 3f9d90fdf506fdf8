// `model: {hf_config: path/to/config.json}`: a Hugging Face model configuration read into a ModelSpec. Private to
// the scenario loader.
#pragma once

#include <string>

#include "workloads/model.hpp"

namespace dtsim::scenario {

// The model `path` describes: Llama, Mistral, Qwen2 and Qwen3 (decoders with RMSNorm, rotary positions, SwiGLU,
// grouped KV heads), their mixtures of experts Mixtral, Qwen2-MoE and Qwen3-MoE, DeepSeek-V3 (multi-head latent
// attention, leading dense layers, shared experts), GPT-2 (LayerNorm, learned positions, GELU, biases, tied
// embeddings) and BERT (the same, bidirectional). Errors are InputErrors on `key` (the scenario's model.hf_config)
// located at `where`, naming the file and the field: an unreadable or non-JSON file, an architecture outside
// these, a missing field or one of the wrong type, an MoE layout dtsim does not describe. `written` is the path as the scenario gives it (the errors' value).
workloads::ModelSpec read_hf_config(const std::string& path, const std::string& written, const std::string& key,
                                    const std::string& where);

}  // namespace dtsim::scenario
