// The topology and step graph of a scenario (inspect.hpp).
#include "sim/drivers/inspect.hpp"

#include "sim/drivers/auto_knobs.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/cost.hpp"
#include "sim/drivers/mixed.hpp"
#include "topology/error.hpp"
#include "topology/properties.hpp"
#include "workloads/plan.hpp"

namespace dtsim::drivers {

DescribedTopology describe_topology(const scenario::Scenario& s) {
  auto built = located(s, [&] { return topology::build_cluster(s.cluster); });
  auto props = topology::describe(built);
  auto bom = scenario_bom(s, built.topology);
  return DescribedTopology{std::move(built), results::TopologyRow{s.name, &s.cluster, props}, std::move(bom)};
}

workloads::StepGraph step_graph(const scenario::Scenario& s, workloads::Granularity granularity) {
  if (!s.workload || !s.workload->training)
    throw InputError("training", "", "missing section: the graph command needs a model and a training section to build",
                     "a scenario with model and training", s.file);
  located(s, [&] { workloads::check_plan(*s.workload, cluster_gpus(s)); });
  scenario::Scenario resolved = balance(resolve_auto(s));
  if (!resolved.cluster.groups.empty()) {   // each stage on its GPU kind, as run plays it
    resolved.simulation.granularity = granularity;
    return mixed_step(resolved).graph;
  }
  return located(s, [&] { return workloads::generate_step(*resolved.workload, s.cluster.gpu, {granularity}); });
}

}  // namespace dtsim::drivers
