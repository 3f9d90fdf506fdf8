// `topo`, `memory`, `graph` and `catalog`: a driver's result through a writer of results/, and the scenario loading
// every command shares.
#include "sim/cli/commands.hpp"

#include <fmt/format.h>

#include <iostream>

#include "results/catalog_report.hpp"
#include "results/files.hpp"
#include "results/memory_report.hpp"
#include "results/step_graph_report.hpp"
#include "results/topology_report.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/cost.hpp"
#include "sim/drivers/inspect.hpp"
#include "sim/drivers/run.hpp"
#include "topology/error.hpp"
#include "topology/user_graph.hpp"
#include "workloads/memory_plan.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::cli {
namespace {

// One configuration prints one object, several an array.
int print_json(const std::vector<drivers::DescribedTopology>& described) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& d : described) {
    rows.push_back(results::topology_json(d.row));
    rows.back()["bill_of_materials"] = drivers::bom_json(d.bom);
  }
  std::cout << (rows.size() == 1 ? rows[0] : rows).dump(2) << "\n";
  return 0;
}

}  // namespace

int topo_command(const ScenarioArgs& args, const std::string& dot_file) {
  const auto scenarios = load(args);
  std::vector<drivers::DescribedTopology> described;
  for (const scenario::Scenario& s : scenarios) described.push_back(drivers::describe_topology(s));
  if (!dot_file.empty()) {
    if (described.size() != 1)
      throw InputError("--dot", dot_file, fmt::format("the scenario holds {} topologies; --dot takes", described.size()),
                       "a scenario with one topology");
    results::write_file(dot_file, topology::to_dot(described.front().built.topology), "--dot");
  }
  if (args.format == Format::Json) return print_json(described);
  if (described.size() > 1) {   // several documents or sweep points: side by side
    std::vector<results::TopologyRow> rows;
    for (const auto& d : described) rows.push_back(d.row);
    std::cout << results::topology_comparison(rows);
    return 0;
  }
  std::cout << results::topology_table(described.front().row) << drivers::bom_table(described.front().bom);
  return 0;
}

int memory_command(const ScenarioArgs& args) {
  const auto scenarios = load(args);
  std::vector<workloads::MemoryPlan> plans;
  for (const scenario::Scenario& s : scenarios) plans.push_back(drivers::memory_plan(s));
  if (args.format == Format::Json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& p : plans) rows.push_back(results::memory_json(p));
    std::cout << (rows.size() == 1 ? rows[0] : rows).dump(2) << "\n";
    return 0;
  }
  for (std::size_t i = 0; i < plans.size(); ++i)
    std::cout << (i == 0 ? "" : "\n") << results::memory_table(scenarios[i].name, scenarios[i].cluster.gpu, plans[i]);
  return 0;
}

int graph_command(const ScenarioArgs& args, const std::string& dot_file, bool kernels) {
  const auto scenarios = load(args);
  if (!dot_file.empty() && scenarios.size() != 1)
    throw InputError("--dot", dot_file, fmt::format("the scenario holds {} documents; --dot takes", scenarios.size()),
                     "a scenario with one document");
  nlohmann::json rows = nlohmann::json::array();
  for (const scenario::Scenario& s : scenarios) {
    const auto graph = drivers::step_graph(s, kernels ? workloads::Granularity::Kernel : workloads::Granularity::Layer);
    const auto timeline = sim::play_analytic(graph, sim::free_communication());
    if (!dot_file.empty()) results::write_file(dot_file, drivers::located(s, [&] { return workloads::to_dot(graph); }), "--dot");
    if (args.format == Format::Json) rows.push_back(results::step_graph_json(graph, timeline));
    else std::cout << (&s == &scenarios.front() ? "" : "\n") << results::step_graph_table(s.name, graph, timeline);
  }
  if (args.format == Format::Json) std::cout << (rows.size() == 1 ? rows[0] : rows).dump(2) << "\n";
  return 0;
}

int catalog_command(Format format) {
  if (format == Format::Json) std::cout << results::catalog_json().dump(2) << "\n";
  else std::cout << results::catalog_table();
  return 0;
}

std::vector<scenario::Scenario> load(const ScenarioArgs& args, bool keep_invalid_points) {
  return scenario::load({args.file, args.text, args.sets}, keep_invalid_points);
}

}  // namespace dtsim::cli
