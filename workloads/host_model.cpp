#include "workloads/host_model.hpp"

#include "topology/error.hpp"

namespace dtsim::workloads {

Seconds moe_host_time(Pass pass, std::size_t pass_kernels, std::size_t forward_kernels) {
  const Seconds forward(kMoeHostForwardMs * 1e-3);
  switch (pass) {
    case Pass::Forward: return forward;
    case Pass::Backward: return forward * kHostBackwardRatio;
    case Pass::Recompute:
      if (forward_kernels == 0) return Seconds(0);
      return forward * (static_cast<double>(pass_kernels) / static_cast<double>(forward_kernels));
  }
  DTSIM_ASSERT(false, "pass missing from moe_host_time");
}

}  // namespace dtsim::workloads
