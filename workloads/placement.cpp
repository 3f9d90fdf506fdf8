// Placement (plan.hpp): where each rank sits in the tensor-, data- and pipeline-parallel grid, in the plan's order,
// and the groups each collective runs over.
#include <algorithm>
#include <map>
#include <numeric>

#include "topology/error.hpp"
#include "workloads/plan.hpp"

namespace dtsim::workloads {
namespace {

std::size_t index(Axis a) { return static_cast<std::size_t>(a); }

}  // namespace

Placement::Placement(const ParallelPlan& plan)
    : tp_(plan.tp), dp_(plan.dp_ranks()), pp_(plan.pp), etp_(plan.expert_tp()), ep_(plan.ep), cp_(plan.cp),
      order_(plan.order) {
  int stride = 1;
  for (Axis a : order_) {
    stride_[index(a)] = stride;
    stride *= size(a);
  }
}

int Placement::size(Axis a) const {
  switch (a) {
    case Axis::Tp: return tp_;
    case Axis::Dp: return dp_;
    case Axis::Pp: return pp_;
  }
  DTSIM_ASSERT(false, "axis missing from Placement::size");
}

int Placement::rank(RankCoord c) const {
  return c.tp * stride_[index(Axis::Tp)] + c.dp * stride_[index(Axis::Dp)] + c.pp * stride_[index(Axis::Pp)];
}

RankCoord Placement::coord(int r) const {
  DTSIM_ASSERT(r >= 0 && r < ranks(), "rank outside the plan");
  const auto along = [&](Axis a) { return (r / stride_[index(a)]) % size(a); };
  return {along(Axis::Tp), along(Axis::Dp), along(Axis::Pp)};
}

std::vector<int> Placement::group(int r, Axis axis) const {
  RankCoord c = coord(r);
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(size(axis)));
  for (int i = 0; i < size(axis); ++i) {
    if (axis == Axis::Tp) c.tp = i;
    if (axis == Axis::Dp) c.dp = i;
    if (axis == Axis::Pp) c.pp = i;
    out.push_back(rank(c));
  }
  return out;
}

std::vector<int> Placement::shard_group(int r, int shard) const {
  RankCoord c = coord(r);
  const int first = c.dp / shard * shard;
  std::vector<int> out;
  for (int i = 0; i < shard; ++i) {
    c.dp = first + i;
    out.push_back(rank(c));
  }
  return out;
}

std::vector<int> Placement::replica_group(int r, int shard) const {
  RankCoord c = coord(r);
  const int place = c.dp % shard;
  std::vector<int> out;
  for (int block = 0; block < dp_ / shard; ++block) {
    c.dp = block * shard + place;
    out.push_back(rank(c));
  }
  return out;
}

std::vector<int> Placement::cp_group(int r) const { return shard_group(r, cp_); }

int node_dp_ranks(const Workload& w) {
  const auto group = Placement(w.plan).group(0, Axis::Dp);
  if (w.gpus_per_node <= 0) return static_cast<int>(group.size());
  return static_cast<int>(std::ranges::count_if(group, [&](int r) { return r / w.gpus_per_node == 0; }));
}

bool every_ep_group_alike(const Workload& w, EpNodes n) {
  if (w.gpus_per_node <= 0) return true;
  const Placement place(w.plan);
  for (int r = 0; r < place.ranks(); ++r) {
    std::map<int, int> on;   // node -> ranks of r's group on it
    for (int g : place.expert_group(r, ExpertAxis::Ep)) ++on[g / w.gpus_per_node];
    if (static_cast<int>(on.size()) != n.nodes) return false;
    for (const auto& [node, count] : on)
      if (count != n.per_node) return false;
  }
  return true;
}

EpNodes ep_nodes(const Workload& w) {
  if (w.gpus_per_node <= 0) return {1, w.plan.ep};
  const std::vector<int> group = Placement(w.plan).expert_group(0, ExpertAxis::Ep);
  std::vector<int> nodes;
  for (int r : group)
    if (std::ranges::find(nodes, r / w.gpus_per_node) == nodes.end()) nodes.push_back(r / w.gpus_per_node);
  const auto on_first = std::ranges::count_if(group, [&](int r) { return r / w.gpus_per_node == nodes.front(); });
  return {static_cast<int>(nodes.size()), static_cast<int>(on_first)};
}

std::vector<int> Placement::expert_group(int r, ExpertAxis axis) const {
  const RankCoord c = coord(r);
  const int flat = c.tp + tp_ * c.dp;
  const int edp = tp_ * dp_ / (etp_ * ep_);
  std::array<int, 3> e{flat % etp_, (flat / etp_) % ep_, flat / (etp_ * ep_)};
  const std::array<int, 3> sizes{etp_, ep_, edp};
  const auto a = static_cast<std::size_t>(axis);
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(sizes[a]));
  for (int i = 0; i < sizes[a]; ++i) {
    e[a] = i;
    const int f = e[0] + etp_ * (e[1] + ep_ * e[2]);
    out.push_back(rank(RankCoord{f % tp_, f / tp_, c.pp}));
  }
  return out;
}

}  // namespace dtsim::workloads
