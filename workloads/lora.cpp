// LoRA's adapter parameters (lora.hpp).
//
// Megatron-Bridge's adapters (src/megatron/bridge/peft/utils.py, ParallelLinearAdapter; NeMo 1.x's
// parallel_adapters.py is the same design), beside a column-parallel layer (qkv, fc1): A a column-parallel h x rank
// (split over the rank), B a column-parallel rank x out (split over the output); beside a row-parallel one (proj,
// fc2): A a row-parallel in x rank (split over the input), B a column-parallel rank x h. Every adapter matrix is so
// split over tp.
#include "workloads/lora.hpp"

#include <numeric>

namespace dtsim::workloads {

std::array<double, 4> lora_module_parameters(const ModelSpec& m, const LoraSpec& l) {
  if (!l.on()) return {0, 0, 0, 0};
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double r = l.rank;
  const double qkv_out = static_cast<double>(m.q_dim()) + 2.0 * m.kv_dim();
  const double fc1_out = m.activation == Activation::Swiglu ? 2.0 * f : f;   // linear_fc1 holds gate and up
  const auto adapter = [&](LoraTarget t, double in, double out) { return l.targets_module(t) ? r * (in + out) : 0.0; };
  return {adapter(LoraTarget::Qkv, h, qkv_out), adapter(LoraTarget::Proj, m.value_dim(), h),
          adapter(LoraTarget::Fc1, h, fc1_out), adapter(LoraTarget::Fc2, f, h)};
}

double lora_layer_parameters(const ModelSpec& m, const LoraSpec& l) {
  const auto parts = lora_module_parameters(m, l);
  return std::accumulate(parts.begin(), parts.end(), 0.0);
}

double trained_layer_dense_parameters(const ModelSpec& m, const TrainingSpec& t, int layer) {
  return t.lora.on() ? lora_layer_parameters(m, t.lora) : layer_dense_parameters(m, layer);
}

double trained_layer_routed_parameters(const ModelSpec& m, const TrainingSpec& t, int layer) {
  return t.lora.on() ? 0.0 : layer_routed_parameters(m, layer);
}

double trained_embedding_parameters(const ModelSpec& m, const TrainingSpec& t) {
  return t.lora.on() ? 0.0 : embedding_parameters(m);
}

double trained_logits_parameters(const ModelSpec& m, const TrainingSpec& t) {
  return t.lora.on() ? 0.0 : logits_parameters(m);
}

double trained_final_norm_parameters(const ModelSpec& m, const TrainingSpec& t) {
  return t.lora.on() ? 0.0 : final_norm_parameters(m);
}

double trained_parameter_count(const ModelSpec& m, const TrainingSpec& t) {
  return t.lora.on() ? m.layers * lora_layer_parameters(m, t.lora) : parameter_count(m);
}

}  // namespace dtsim::workloads
