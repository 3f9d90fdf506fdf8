// LoRA's adapters (training.lora, training.hpp's LoraSpec) as parameters: what a step trains, reduces and updates
// when the model's own weights are frozen.
#pragma once

#include <array>

#include "workloads/model.hpp"
#include "workloads/training.hpp"

namespace dtsim::workloads {

// The adapters of one dense layer by module, in layer_module_parameters' order (qkv, proj, fc1, fc2), whole: rank x
// (the layer's input width + its output width) for each target, 0 for the others. Every adapter is split over tp
// (lora_tp_split in lora.cpp).
std::array<double, 4> lora_module_parameters(const ModelSpec& m, const LoraSpec& l);
double lora_layer_parameters(const ModelSpec& m, const LoraSpec& l);

// What a step trains, whole (not per GPU): with LoRA the adapters only (the embedding, the head and every layer's
// own weights frozen); without, the model's own.
double trained_layer_dense_parameters(const ModelSpec& m, const TrainingSpec& t, int layer);
double trained_layer_routed_parameters(const ModelSpec& m, const TrainingSpec& t, int layer);
double trained_embedding_parameters(const ModelSpec& m, const TrainingSpec& t);
double trained_logits_parameters(const ModelSpec& m, const TrainingSpec& t);
double trained_final_norm_parameters(const ModelSpec& m, const TrainingSpec& t);
// The whole model's: parameter_count(m), or with LoRA every layer's adapters.
double trained_parameter_count(const ModelSpec& m, const TrainingSpec& t);

}  // namespace dtsim::workloads
