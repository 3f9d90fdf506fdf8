#include "workloads/host_model.hpp"

#include "topology/error.hpp"

namespace dtsim::workloads {

Seconds moe_host_time(Pass pass, bool dispatches) {
  switch (pass) {
    case Pass::Forward: return kMoeHostForward;
    case Pass::Backward: return kMoeHostForward * kHostBackwardRatio;
    case Pass::Recompute: return dispatches ? kMoeHostForward : Seconds(0);
  }
  DTSIM_ASSERT(false, "pass missing from moe_host_time");
}

}  // namespace dtsim::workloads
