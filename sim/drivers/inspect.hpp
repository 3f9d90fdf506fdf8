// What `topo` and `graph` show of a scenario without simulating it: the cluster's topology with its properties and
// bill of materials, and the step graph of its training step (auto knobs resolved).
#pragma once

#include "results/topology_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/bill_of_materials.hpp"
#include "topology/builders.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::drivers {

struct DescribedTopology {
  topology::BuiltTopology built;
  results::TopologyRow row;        // points into the scenario's cluster: the scenario outlives it
  topology::BillOfMaterials bom;
};

DescribedTopology describe_topology(const scenario::Scenario& s);

// The step graph at `granularity`; a scenario without a training section, or a plan the cluster cannot hold, is
// a one-line InputError located at the scenario's file.
workloads::StepGraph step_graph(const scenario::Scenario& s, workloads::Granularity granularity);

}  // namespace dtsim::drivers
