#include "results/energy.hpp"

#include <algorithm>
#include <variant>

namespace dtsim::results {

Joules gpu_step_energy(const workloads::StepGraph& g, const sim::Timeline& t, const topology::GpuSpec& gpu,
                       const topology::PowerModelSpec& model) {
  const Watts compute(model.compute_bound * gpu.tdp.value());
  const Watts memory(std::max(model.memory_bound * gpu.tdp.value(), gpu.idle_power.value()));
  double joules = 0;
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    Seconds busy(0), streaming(0);
    for (const auto& op : g.classes[c].ops)
      if (const auto* k = std::get_if<workloads::ComputeOp>(&op.body)) {
        busy += k->duration;
        streaming += std::min(k->memory_time, k->duration);
      }
    const Seconds lost = t.classes[c].interference;
    const Seconds idle(std::max(0.0, (t.step_time - busy - lost).value()));
    const Joules rank = compute * (busy - streaming + lost) + memory * streaming + gpu.idle_power * idle;
    joules += rank.value() * static_cast<double>(g.classes[c].ranks.size());
  }
  return Joules(joules);
}

StepEnergy step_energy(Joules gpus, Seconds step, Watts network, const topology::PowerModelSpec& model, double pue) {
  StepEnergy e;
  e.gpus = gpus;
  e.servers = Joules(gpus.value() * (1.0 / model.gpu_share - 1.0));
  e.network = network * step;
  e.it = e.gpus + e.servers + e.network;
  e.facility = Joules(e.it.value() * pue);
  return e;
}

}  // namespace dtsim::results
