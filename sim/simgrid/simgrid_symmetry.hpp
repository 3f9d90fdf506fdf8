// Private to dtsim_simgrid: symmetry across the ranks of each TP group (DESIGN.md "Scale", SimgridOptions::symmetry).
//
// sigma_k moves every rank k places along its TP group (its tp coordinate plus k, modulo tp): it maps each rank
// onto a rank of the same class (the same stage), each data-parallel or embedding group onto another, each
// pipeline send onto another. The shortcut applies when
//  (1) every TP group instance is isolated: its collectives use resources nothing else uses;
//  (2) for each k, sigma_k maps the rest of the traffic onto itself: the image of a group instance has the
//      images of its members, in order, and runs the same lowered collectives; the image of a send is a send;
//      no such collective reduces in a switch;
//  (3) for each k, the routes map onto each other hop by hop through one map of resources that keeps
//      capacities and latencies (a pi_k with route(sigma_k p) = pi_k(route(p)) for every pair p);
//  (4) every resource a flow of the played ranks crosses is crossed only by the images of flows that cross it
//      themselves, each by the same number m of them.
// Then max-min sharing gives every flow and its images the same rate at every instant (the constraint system
// is invariant under sigma_k, and its max-min solution is unique), so by induction on events every rank runs the
// timeline of its TP group's first rank. Only those ranks are played: their sends and their data-parallel and
// embedding collectives on resources at 1/m of their capacity (the m images that share them in the full run),
// their TP collectives in full (every GPU of the group, on resources nobody else uses).
//
// Where (1) and (2) hold but (3) or (4) does not (routes that do not map, as a flow hash gives them), the images
// still compute alike: only their traffic differs. Then the first rank of each TP group is played with its
// images as lanes: every send and every data-parallel or embedding collective of a played rank is played for
// each lane on that lane's own routes, at full capacity; a lane's collectives on one group run in order on that
// lane (each lane its own stream); the op ends when its last lane does. The played rank's other times are the
// latest over its lanes, which is what each lane has after its next TP collective (max-plus: compute ops add a
// duration, a TP collective waits for every member). That is exact when every lane starts each send and each
// such collective at the same time: when between a pipeline receive, a send or such a collective and the next
// send or such collective on the way, a TP collective resynchronises the lanes (check_lanes).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "sim/simgrid/simgrid_isolation.hpp"
#include "sim/timeline.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim::flow {

struct Symmetry {
  std::vector<int> representative;                 // per rank, the played rank whose timeline it has; empty: refused
  std::vector<std::vector<int>> images;             // per played rank, sigma_1 .. sigma_{tp-1} of it
  std::unordered_map<Resource, double> shares;      // resources a played flow shares with m > 1 images: m
  std::string refused;                             // why the shortcut does not apply (when it does not)
  std::string lanes;                               // played as lanes: why routes or shares did not map; empty: not
  [[nodiscard]] bool applies() const { return !representative.empty(); }
};

// Adds to `transfers` the images along TP of those between two played ranks' GPUs (sends, data-parallel and
// embedding collectives), at the same times: what the full run records. Not for lanes: they record their own.
void add_images(std::vector<TransferRecord>& transfers, const Symmetry& symmetry, const topology::Topology& topo);

Symmetry find_symmetry(const workloads::StepGraph& g, const topology::Topology& topo, const Traffic& traffic,
                       const std::set<GroupInstance>& isolated, RouteResources& resources);

}  // namespace dtsim::sim::flow
