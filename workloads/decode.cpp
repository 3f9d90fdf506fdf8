#include "workloads/decode.hpp"

#include "workloads/memory_plan.hpp"

namespace dtsim::workloads {

DecodeStep decode_step(const ModelSpec& m, const InferenceSpec& inf) {
  const double batch = inf.batch;
  // The logits GEMM multiplies by the vocabulary matrix whether or not it is tied to the embedding; the
  // embedding lookup itself is a gather of `batch` rows, no FLOPs.
  const double matmul_weights = m.layers * layer_parameters(m) + static_cast<double>(m.logits_width()) * m.hidden;
  const double attention = 4.0 * m.layers * m.hidden * static_cast<double>(inf.context);
  const FlopCount flops(batch * (2.0 * matmul_weights + attention));
  const Bytes bytes(parameter_count(m) * bytes_per_element(inf.weights) + kv_cache_bytes(m, inf, 1).value());
  return {flops, bytes};
}

}  // namespace dtsim::workloads
