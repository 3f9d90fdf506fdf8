// The SimGrid engine with the lowering as a parameter (simgrid_player.hpp): play_graph finds the shortcuts that
// apply (memoization, aggregated flows, symmetry), builds the simulation, plays the graph with a Player
// (player.hpp) and fills the Timeline; time_lowered plays collectives one after the other.
#include "sim/simgrid/simgrid_player.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/simgrid/player.hpp"
#include "sim/simgrid/simgrid_isolation.hpp"
#include "sim/simgrid/simgrid_memo.hpp"
#include "sim/simgrid/simgrid_symmetry.hpp"
#include "topology/error.hpp"

namespace dtsim::sim::flow {
namespace {

using topology::NodeId;
using workloads::StepGraph;

void check_fits(std::size_t ranks, const topology::Topology& topo) {
  if (ranks <= topo.gpus().size()) return;
  throw InputError("parallelism", std::to_string(ranks),
                   fmt::format("the plan needs more GPUs than the cluster's {}: tp x pp x dp is", topo.gpus().size()),
                   fmt::format("at most {}", topo.gpus().size()));
}

}  // namespace

Timeline play_graph(const StepGraph& graph, const topology::Topology& topology, const SimgridOptions& options,
                    const LowerFn& lower) {
  std::size_t ranks = 0;
  for (const auto& c : graph.classes) ranks += c.ranks.size();
  check_fits(ranks, topology);
  const Sites sites(topology);
  PlanCache plans(lower, options.aggregate);
  const Traffic traffic = collect_traffic(graph, topology, plans, sites);
  RouteResources resources(topology, options.routing);
  std::set<GroupInstance> isolated;
  if (options.memoize || options.symmetry) isolated = isolated_instances(traffic, resources);
  Symmetry symmetry;
  const auto uneven_in = [](const std::vector<double>& v) {
    return std::ranges::adjacent_find(v, std::not_equal_to<>()) != v.end();
  };
  const bool uneven = uneven_in(options.compute_scale) || uneven_in(options.forward_scale);
  if (uneven)
    symmetry.refused = "stragglers: ranks compute at different speeds";
  else if (options.symmetry)
    symmetry = find_symmetry(graph, topology, traffic, isolated, resources);
  else
    symmetry.refused = "switched off";
  Aggregates aggregates(topology, options.routing);
  Aggregates* aggregating = options.aggregate ? &aggregates : nullptr;
  std::optional<Memo> memo;
  if (options.memoize)
    memo.emplace(traffic, std::move(isolated), topology, sites, plans, resources, aggregating,
                 options.record_transfers, options.routing);
  const std::vector<int>* representative = symmetry.applies() ? &symmetry.representative : nullptr;
  const bool lanes = symmetry.applies() && !symmetry.lanes.empty();
  // Lanes route their images too: every rank's traffic is played.
  const RouteNeeds needs = route_needs(traffic, topology, sites, lanes ? nullptr : representative,
                                       memo ? &memo->isolated() : nullptr);
  Simulation sim(topology, needs, resources, symmetry.shares);
  Timeline t;
  Player player(graph, topology, sim, plans, sites, options.record_transfers ? &t.transfers : nullptr,
                memo ? &*memo : nullptr, aggregating, representative, lanes ? &symmetry.images : nullptr);
  player.scale_compute(options.compute_scale, options.forward_scale);
  player.start();
  sim.run();
  player.fill(t);
  if (symmetry.applies() && !lanes && options.record_transfers) add_images(t.transfers, symmetry, topology);
  t.memoized_collectives = player.replayed();
  t.memo_refused_collectives = player.refused();
  t.memo_shapes = memo ? memo->shapes() : 0;
  t.aggregated_collectives = player.aggregated();
  if (lanes)
    t.symmetry = fmt::format("one rank of each TP group played, its images' sends and data-parallel collectives "
                             "as lanes beside it ({})",
                             symmetry.lanes);
  else if (symmetry.applies())
    t.symmetry = fmt::format("one rank of each TP group played, {} resources shared by its images",
                             symmetry.shares.size());
  else
    t.symmetry = fmt::format("not applied: {}", symmetry.refused);
  t.network_model = std::string(Simulation::network_model());
  return t;
}

// One collective per size over `ranks`, each starting when the previous one ends.
std::vector<Seconds> time_lowered(workloads::CollectiveKind kind, const std::vector<Bytes>& sizes,
                                  const std::vector<int>& ranks, const topology::Topology& topology,
                                  const GroupLayout& layout, const LowerFn& lower, topology::Routing routing, bool aggregate) {
  DTSIM_ASSERT(layout.machine.size() == ranks.size(), "a group layout gives one machine per rank");
  GroupLayout labelled = layout;   // machines as Sites labels them
  labelled.machine = label_machines(layout.machine).first;
  std::vector<NodeId> gpus;
  for (int r : ranks) gpus.push_back(topology.gpus().at(static_cast<std::size_t>(r)));
  const Sites sites(topology);
  PlanCache plans(lower, aggregate);
  RouteNeeds needs;
  std::vector<std::shared_ptr<const CollectivePlan>> plan;
  std::vector<std::vector<NodeId>> nodes;
  std::vector<Seconds> tails;
  Aggregates aggregates(topology, routing);
  for (Bytes size : sizes) {
    plan.push_back(plans.get(kind, size, labelled));
    tails.emplace_back();
    if (aggregate)
      if (auto choice = aggregates.of(plan.back(), gpus)) {
        plan.back() = std::move(choice->plan);
        tails.back() = choice->tail;
      }
    nodes.push_back(sites.endpoint_nodes(*plan.back(), gpus));
    add_routes(needs, *plan.back(), nodes.back());
  }
  RouteResources routes(topology, routing);
  Simulation sim(topology, needs, routes);
  std::vector<Seconds> times(sizes.size());
  std::unique_ptr<CollectiveRun> run;
  std::function<void(std::size_t)> next = [&](std::size_t i) {
    if (i == sizes.size()) return;
    const Seconds start = sim.now();
    auto finished = [&, i, start](Seconds end) {
      times[i] = end - start;
      next(i + 1);   // replaces (destroys) the run that called
    };
    run = std::make_unique<CollectiveRun>(sim, plan[i], nodes[i], nullptr, finished, tails[i]);
    run->start();
  };
  next(0);
  sim.run();
  return times;
}

}  // namespace dtsim::sim::flow
