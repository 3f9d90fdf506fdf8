// The Player's collectives (player.hpp): each rank's collective stream per group, the group instances it
// reaches, and how a collective is played: replayed from the memo, in full in SimGrid (its aggregate where
// aggregation applies), or as lanes, one per image of the played rank (symmetry).
#include "sim/simgrid/player.hpp"

#include <algorithm>
#include <variant>

#include "topology/error.hpp"

namespace dtsim::sim::flow {
namespace {

using topology::NodeId;
using workloads::CollectiveOp;

}  // namespace

void Player::try_collective(int rank, std::size_t group) {
  RankState& s = state(rank);
  const auto& order = index(rank).collective_order[group];
  if (laned(group)) {   // each lane keeps its own order (GroupSite::lane_next): the rank reaches it when ready
    for (std::size_t k = s.next_collective[group]; k < order.size() && s.waiting[order[k]] == 0;
         k = s.next_collective[group]) {
      ++s.next_collective[group];
      arrive(rank, order[k], k, s.times[order[k]].start);
    }
    return;
  }
  const std::size_t k = s.next_collective[group];
  if (s.communicating[group] || k == order.size() || s.waiting[order[k]] > 0) return;
  s.communicating[group] = true;
  const std::uint32_t op = order[k];
  arrive(rank, op, k, std::max(s.times[op].start, s.group_free[group]));
}

// The group instance `rank` is in, resolved once per instance and remembered per rank.
Player::GroupSite& Player::site(int rank, workloads::Group group) {
  std::int32_t& index = state(rank).site[index_of(group)];
  if (index >= 0) return group_sites_[static_cast<std::size_t>(index)];
  std::vector<int> members = members_of(g_, rank, group);
  auto [it, added] = site_index_.emplace(GroupInstance{index_of(group), members.front()}, group_sites_.size());
  index = static_cast<std::int32_t>(it->second);
  if (!added) return group_sites_[it->second];
  GroupSite& s = group_sites_.emplace_back();
  s.instance = it->first;
  s.gpus = gpus_of(topo_, members);
  s.layout = sites_.layout(s.gpus);
  s.played = static_cast<std::size_t>(std::count_if(members.begin(), members.end(), [this](int r) { return played(r); }));
  s.isolated = memo_ != nullptr && memo_->isolated(s.instance);
  return s;
}

void Player::arrive(int rank, std::uint32_t op, std::size_t k, Seconds at) {
  const auto& c = std::get<CollectiveOp>(ops(rank)[op].body);
  GroupSite& s = site(rank, c.group);
  if (s.played == 1 && s.isolated && !laned(index_of(c.group))) {   // memoized, waits for no other played rank
    const Memo::Played& played = *plan_of(s, c).played;
    ++replayed_;
    record_replay(played, s.gpus, at);
    RankState& st = state(rank);
    const std::size_t group = index_of(c.group);
    st.times[op].start = at;
    st.communicating[group] = false;
    st.group_free[group] = at + played.duration;
    ++st.next_collective[group];
    ended(rank, op, st.group_free[group]);
    return try_collective(rank, group);
  }
  const InstanceKey key{s.instance.first, s.instance.second, k};
  Instance& inst = instances_[key];
  inst.members = s.played;
  inst.arrived.emplace_back(rank, op);
  inst.start = std::max(inst.start, at);
  if (inst.arrived.size() == inst.members) begin(key, inst, c, s);
}

const Player::GroupSite::Plan& Player::plan_of(GroupSite& site, const CollectiveOp& c) {
  auto [known, added] = site.plans.emplace(std::pair{static_cast<int>(c.kind), c.bytes.value()}, GroupSite::Plan{});
  if (added) {
    known->second.plan = plans_.get(c.kind, c.bytes, site.layout);
    if (site.isolated) known->second.played = &memo_->played(site.instance, known->second.plan.get());
  }
  return known->second;
}

void Player::begin(const InstanceKey& key, Instance& inst, const CollectiveOp& c, GroupSite& site) {
  const std::vector<NodeId>& gpus = site.gpus;
  if (laned(std::get<0>(key))) {
    inst.op = &c;
    return begin_lanes(key, inst, site);
  }
  const GroupSite::Plan& known = plan_of(site, c);
  if (memo_ != nullptr) {
    if (site.isolated) return replay(key, *known.played, gpus);
    ++refused_;
  }
  inst.run = play_in_full(known.plan, gpus, inst.start, [this, key](Seconds end) {
    collective_ended(key, end);
    drain();
  });
}

// A collective played in SimGrid (its aggregate, where aggregation applies), started at `start`.
std::unique_ptr<CollectiveRun> Player::play_in_full(std::shared_ptr<const CollectivePlan> plan,
                                                    const std::vector<NodeId>& gpus, Seconds start,
                                                    CollectiveRun::Finished finished) {
  Seconds tail;
  if (aggregates_ != nullptr)
    if (auto choice = aggregates_->of(plan, gpus)) {
      ++aggregated_;
      plan = std::move(choice->plan);
      tail = choice->tail;
    }
  std::vector<NodeId> nodes = sites_.endpoint_nodes(*plan, gpus);
  auto run = std::make_unique<CollectiveRun>(sim_, std::move(plan), std::move(nodes), record_, std::move(finished), tail);
  at_time(start, [r = run.get()] { r->start(); });
  return run;
}

// The memoized duration from the instance's start; the memoized transfers are recorded on this group's nodes,
// shifted to that start.
void Player::replay(const InstanceKey& key, const Memo::Played& played, const std::vector<NodeId>& gpus) {
  ++replayed_;
  const Seconds start = instances_.at(key).start;
  record_replay(played, gpus, start);
  collective_ended(key, start + played.duration);
}

void Player::record_replay(const Memo::Played& played, const std::vector<NodeId>& gpus, Seconds start) {
  if (record_ == nullptr) return;
  const std::vector<NodeId> nodes = sites_.endpoint_nodes(*played.plan, gpus);
  for (const auto& r : played.transfers)
    record_->push_back(TransferRecord{nodes.at(r.src), nodes.at(r.dst), r.bytes, start + r.start, start + r.end});
}

// Every member has reached the k-th collective of the instance: each lane whose (k-1)-th has ended starts it.
void Player::begin_lanes(const InstanceKey& key, Instance& inst, GroupSite& site) {
  const std::size_t lanes = lane_count();
  if (site.lane_sites.empty()) {
    site.lane_sites.push_back(&site);
    for (std::size_t l = 1; l < lanes; ++l)
      site.lane_sites.push_back(&this->site(lane_rank(site.instance.second, l), static_cast<workloads::Group>(site.instance.first)));
    site.lane_free.assign(lanes, Seconds(0));
    site.lane_next.assign(lanes, 0);
  }
  inst.lane_runs.resize(lanes);
  inst.lanes_pending = lanes;
  inst.starting = true;
  for (std::size_t l = 0; l < lanes; ++l)
    if (site.lane_next[l] == std::get<2>(key)) start_lane(key, inst, site, l);
  inst.starting = false;
  if (inst.lanes_pending == 0) lanes_ended(key);
}

// One lane of a collective, on its image's GPUs and routes, from the later of the members' arrival and the end
// of the lane's previous collective on the group.
void Player::start_lane(const InstanceKey& key, Instance& inst, GroupSite& site, std::size_t lane) {
  GroupSite& image = *site.lane_sites[lane];
  const GroupSite::Plan& known = plan_of(image, *inst.op);
  const Seconds start = std::max(inst.start, site.lane_free[lane]);
  if (memo_ != nullptr) {
    if (image.isolated) {
      ++replayed_;
      record_replay(*known.played, image.gpus, start);
      return lane_ended(key, lane, start + known.played->duration);
    }
    ++refused_;
  }
  inst.lane_runs[lane] = play_in_full(known.plan, image.gpus, start, [this, key, lane](Seconds end) {
    lane_ended(key, lane, end);
    drain();
  });
}

// A lane's collective ended: the lane moves on to its next collective on the group, if every member has
// reached it; the op ends when its last lane does.
void Player::lane_ended(const InstanceKey& key, std::size_t lane, Seconds end) {
  Instance& inst = instances_.at(key);
  const auto [group, first, k] = key;
  GroupSite& site = group_sites_[static_cast<std::size_t>(state(first).site[group])];
  inst.lanes_end = std::max(inst.lanes_end, end);
  site.lane_free[lane] = end;
  site.lane_next[lane] = k + 1;
  if (auto next = instances_.find(InstanceKey{group, first, k + 1}); next != instances_.end() && next->second.op != nullptr)
    start_lane(next->first, next->second, site, lane);
  if (--inst.lanes_pending == 0 && !inst.starting) lanes_ended(key);
}

void Player::lanes_ended(const InstanceKey& key) {
  auto node = instances_.extract(key);   // destroys the runs when this returns
  const Instance& inst = node.mapped();
  for (const auto& [rank, op] : inst.arrived) {
    state(rank).times[op].start = inst.start;
    ended(rank, op, inst.lanes_end);
  }
}

// Every member's op ends together; then each member moves on to what follows.
void Player::collective_ended(const InstanceKey& key, Seconds end) {
  auto node = instances_.extract(key);   // destroys the run when this returns
  const Instance& inst = node.mapped();
  const std::size_t group = std::get<0>(key);
  for (const auto& [rank, op] : inst.arrived) {
    RankState& s = state(rank);
    s.times[op].start = inst.start;
    s.communicating[group] = false;
    s.group_free[group] = end;
    ++s.next_collective[group];
    ended(rank, op, end);
  }
  for (const auto& [rank, op] : inst.arrived) try_collective(rank, group);
}

}  // namespace dtsim::sim::flow
