#include "results/roofline.hpp"

#include <string>

#include "workloads/compute_model.hpp"
#include "workloads/kernels.hpp"
#include "workloads/layer_list.hpp"
#include "workloads/lora.hpp"

namespace dtsim::results {

using nlohmann::json;

namespace {

json kernel_row(const workloads::Kernel& k, const std::string& scope, const topology::GpuSpec& gpu,
                topology::Precision precision, double ridge) {
  const double flops = k.flops.value();
  const double bytes = workloads::moved_bytes(k, gpu).value();   // what the GPU moves (no fp8 transpose on Blackwell)
  const double seconds = workloads::kernel_time(k, gpu, precision).value();
  const double intensity = bytes > 0 ? flops / bytes : 0.0;
  return {{"kernel", std::string(workloads::to_string(k.kind))},
          {"pass", std::string(workloads::to_string(k.pass))},
          {"scope", scope},
          {"flops", flops},
          {"bytes", bytes},
          {"flop_per_byte", intensity},
          {"time_s", seconds},
          {"achieved_tflops", seconds > 0 ? flops / seconds / 1e12 : 0.0},
          {"bound", intensity >= ridge ? "compute" : "memory"}};
}

}  // namespace

json roofline_json(const workloads::Workload& w, const topology::GpuSpec& gpu) {
  const auto& t = w.training.value();
  const double peak = gpu.peak_for(t.precision).value_or(FlopsPerSecond(0)).value();
  const double bandwidth = gpu.memory_bandwidth.value();
  const double ridge = gpu.ridge_point(t.precision);
  const workloads::Sharding sharding{w.plan.tp, t.sequence_parallel, w.plan.ep, w.plan.expert_tp(), w.plan.cp};
  json kernels = json::array();
  if (w.model.kind == workloads::ModelKind::Layers) {   // a layer-list model: each layer, forward and backward
    for (const auto pass : {workloads::Pass::Forward, workloads::Pass::Backward})
      for (const auto& l : w.model.layer_list)
        kernels.push_back(kernel_row(workloads::layer_list_kernel(l, pass, t.micro_batch), "layer", gpu, t.precision, ridge));
    kernels.push_back(kernel_row(workloads::optimizer_kernel(t, workloads::parameter_count(w.model)), "optimizer", gpu,
                                 t.precision, ridge));
    return {{"precision", std::string(to_string(t.precision))},
            {"peak_tflops", peak / 1e12},
            {"memory_bandwidth_GBps", bandwidth / 1e9},
            {"ridge_flop_per_byte", ridge},
            {"kernels", kernels}};
  }
  // A mixture of experts: its MoE layer ("moe-layer"), and its dense layers' when it has some.
  const bool moe = w.model.moe();
  const bool dense = !moe || workloads::moe_layer_count(w.model) < w.model.layers;
  for (const auto pass : {workloads::Pass::Forward, workloads::Pass::Backward, workloads::Pass::Recompute}) {
    if (dense)
      for (const auto& k : workloads::layer_kernels(w.model, t, sharding, t.micro_batch, pass))
        kernels.push_back(kernel_row(k, "layer", gpu, t.precision, ridge));
    if (moe)
      for (const auto& k : workloads::layer_kernels(w.model, t, sharding, t.micro_batch, pass, true))
        kernels.push_back(kernel_row(k, "moe-layer", gpu, t.precision, ridge));
  }
  for (const auto pass : {workloads::Pass::Forward, workloads::Pass::Backward})
    for (const auto& k : workloads::logits_kernels(w.model, t, sharding, t.micro_batch, pass))
      kernels.push_back(kernel_row(k, "logits", gpu, t.precision, ridge));
  // A stage's even share of the trained parameters (with LoRA, the adapters), its ZeRO shard when ZeRO partitions
  // the optimizer states (the routed experts split over ep x etp and sharded over their own replicas).
  const int moe_layers = workloads::moe_layer_count(w.model);
  const double routed = moe_layers * workloads::moe_layer_parameters(w.model).routed();
  double dense_params = (workloads::trained_parameter_count(w.model, t) - (t.lora.on() ? 0.0 : routed)) / (w.plan.tp * w.plan.pp);
  double expert_params = routed / (w.plan.ep * w.plan.expert_tp() * w.plan.pp);
  if (w.plan.zero >= 1) {
    dense_params /= w.plan.zero_ranks();
    expert_params /= w.plan.expert_dp();
  }
  const double params = dense_params + expert_params;
  kernels.push_back(kernel_row(workloads::optimizer_kernel(t, params), "optimizer", gpu, t.precision, ridge));
  return {{"precision", std::string(to_string(t.precision))},
          {"peak_tflops", peak / 1e12},
          {"memory_bandwidth_GBps", bandwidth / 1e9},
          {"ridge_flop_per_byte", ridge},
          {"kernels", kernels}};
}

}  // namespace dtsim::results
