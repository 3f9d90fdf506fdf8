// Plays a StepGraph on a Simulation, every rank expanded (but where symmetry applies), by the rules of
// workloads/step_graph.hpp as the analytic engine applies them:
//  - an op is ready when its deps have ended;
//  - compute ops run one at a time in list order (a compute op starts when it is ready and the previous
//    compute op of its rank has ended);
//  - collectives on one group run in list order: a rank reaches its k-th collective on a group when it is ready
//    and its (k-1)-th on that group has ended; the k-th collective of a group instance (its sorted member ranks)
//    starts when every member has reached it, and ends for all of them together;
//  - a send starts when ready and ends when its transfer arrives; the recv with the same (sender, tag) ends when
//    both it is ready and that transfer has arrived (it starts when ready).
//
// Only the network is simulated. An op whose duration is known before it runs (a compute op, a memoized
// collective) ends at a time the rules give as soon as the ends it waits for are known: those times propagate
// through the graph without SimGrid, from whatever SimGrid event made them known (they are never earlier than
// it). What touches the network (a collective played in full, a send) starts in SimGrid at the time the rules
// give it, from a timer if that time is ahead of the clock; its end comes back as a SimGrid event. Contention is
// what SimGrid computes for the flows so started, as if every op had been an event.
//
// The scale shortcuts (DESIGN.md "Scale"), each with its switch in SimgridOptions:
//  - memoization (simgrid_memo.hpp): collectives of isolated group instances take a duration played apart,
//    once per (plan, sub-topology);
//  - aggregated flows (Aggregates): a ring's alike steps as one flow per transfer and a latency tail;
//  - symmetry (simgrid_symmetry.hpp): one rank of each TP group is played, its images' share of the links it
//    shares with them taken off their capacity; or, where routes do not map, its images as lanes: their sends
//    and data-parallel and embedding collectives played beside its own, each lane its own stream per group.
#include "sim/simgrid/simgrid_player.hpp"

#include "sim/simgrid/simgrid_isolation.hpp"
#include "sim/simgrid/simgrid_memo.hpp"
#include "sim/simgrid/simgrid_symmetry.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/routing.hpp"

namespace dtsim::sim::flow {
namespace {

using topology::NodeId;
using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::Op;
using workloads::RecvOp;
using workloads::SendOp;
using workloads::StepGraph;

constexpr std::size_t kGroups = 3;   // workloads::Group's values
std::size_t index_of(workloads::Group g) { return static_cast<std::size_t>(g); }

// What every rank of a class shares: dependency structure and the order of its streams.
struct ClassIndex {
  std::vector<std::vector<std::uint32_t>> successors;
  std::vector<std::uint32_t> dep_counts;
  std::vector<std::uint32_t> compute_order;
  std::array<std::vector<std::uint32_t>, kGroups> collective_order;
  Seconds compute_busy;
};

ClassIndex index_class(const workloads::RankClass& c) {
  ClassIndex ix;
  ix.successors.resize(c.ops.size());
  for (std::uint32_t i = 0; i < c.ops.size(); ++i) {
    const Op& op = c.ops[i];
    ix.dep_counts.push_back(static_cast<std::uint32_t>(op.deps.size()));
    for (std::uint32_t d : op.deps) {
      DTSIM_ASSERT(d < i, "an op depends on a later op");
      ix.successors[d].push_back(i);
    }
    if (const auto* comp = std::get_if<ComputeOp>(&op.body)) {
      ix.compute_order.push_back(i);
      ix.compute_busy += comp->duration;
    }
    if (const auto* coll = std::get_if<CollectiveOp>(&op.body)) ix.collective_order[index_of(coll->group)].push_back(i);
  }
  return ix;
}

struct RankState {
  std::size_t cls = 0;
  NodeId gpu = 0;
  std::vector<std::uint32_t> waiting;   // per op: deps not yet ended
  std::vector<OpTime> times;            // start holds the ready time (the latest dep end) until the op starts
  std::size_t ended = 0;
  std::size_t next_compute = 0;
  Seconds compute_free;                 // when the compute stream's last started op ends
  std::array<std::size_t, kGroups> next_collective{};
  std::array<bool, kGroups> communicating{};   // reached a collective of this group that has not ended
  std::array<Seconds, kGroups> group_free{};   // when the group's previous collective ended
  std::array<std::int32_t, kGroups> site{-1, -1, -1};   // per group, its GroupSite; -1 until first needed
};

// (sender rank, receiver rank, micro-batch, chunk, direction)
using PipeKey = std::tuple<int, int, int, int, int>;
// (group, first member rank, k): the k-th collective of one group instance
using InstanceKey = std::tuple<std::size_t, int, std::size_t>;

struct Instance {
  std::size_t members = 0;
  std::vector<std::pair<int, std::uint32_t>> arrived;   // (rank, op)
  Seconds start;                                        // the latest arrival, then the start
  std::unique_ptr<CollectiveRun> run;
  // Lanes (laned groups): each lane's run, once its lane's previous collective on the group has ended.
  const CollectiveOp* op = nullptr;                     // set when every member has arrived
  std::vector<std::unique_ptr<CollectiveRun>> lane_runs;
  std::size_t lanes_pending = 0;
  Seconds lanes_end;                                    // the latest lane's end so far
  bool starting = false;                                // its lanes are being started
};

// An op whose end is known, waiting to be passed on to what waits for it.
struct Ending {
  int rank;
  std::uint32_t op;
  Seconds end;
};

class Player {
 public:
  Player(const StepGraph& g, const topology::Topology& topo, Simulation& sim, PlanCache& plans, const Sites& sites,
         std::vector<TransferRecord>* record, const Memo* memo, Aggregates* aggregates,
         const std::vector<int>* representative, const std::vector<std::vector<int>>* lanes);
  [[nodiscard]] std::size_t replayed() const { return replayed_; }
  [[nodiscard]] std::size_t refused() const { return refused_; }
  [[nodiscard]] std::size_t aggregated() const { return aggregated_; }
  void start();
  void fill(Timeline& t);   // moves the ranks' times out: the last use of the player

 private:
  const std::vector<Op>& ops(int rank) const { return g_.classes[state(rank).cls].ops; }
  const ClassIndex& index(int rank) const { return classes_[state(rank).cls]; }
  RankState& state(int rank) { return ranks_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] bool played(int rank) const {
    return representative_ == nullptr || (*representative_)[static_cast<std::size_t>(rank)] == rank;
  }
  const RankState& state(int rank) const { return ranks_[static_cast<std::size_t>(rank)]; }
  // Lanes: a played rank's images along TP play their sends and collectives but TP ones beside it.
  [[nodiscard]] bool laned(std::size_t group) const { return lanes_ != nullptr && group != index_of(workloads::Group::Tp); }
  [[nodiscard]] std::size_t lane_count() const { return lanes_ == nullptr ? 1 : 1 + lane_images_; }
  [[nodiscard]] int lane_rank(int rank, std::size_t lane) const {
    return lane == 0 ? rank : (*lanes_)[static_cast<std::size_t>(rank)].at(lane - 1);
  }

  void ready(int rank, std::uint32_t op);
  void ended(int rank, std::uint32_t op, Seconds end);   // queues it; drain() passes it on
  void drain();
  void pass_on(const Ending& e);
  void try_compute(int rank);
  void try_collective(int rank, std::size_t group);
  void arrive(int rank, std::uint32_t op, std::size_t k, Seconds at);
  // Runs `what` at `at` (no earlier than now): now, or from a timer.
  void at_time(Seconds at, std::function<void()> what);
  // A group instance as the player needs it, resolved once.
  struct GroupSite {
    GroupInstance instance;
    std::vector<NodeId> gpus;
    GroupLayout layout;
    std::size_t played = 0;   // members played (all, but where symmetry applies)
    bool isolated = false;    // memoized
    // Lanes: per lane, its image's site (lane 0: this one), the end of its latest collective on the group and
    // the index k of the next it runs.
    std::vector<GroupSite*> lane_sites;
    std::vector<Seconds> lane_free;
    std::vector<std::size_t> lane_next;
    struct Plan {
      std::shared_ptr<const CollectivePlan> plan;
      const Memo::Played* played = nullptr;   // isolated: what it takes
    };
    std::map<std::pair<int, double>, Plan> plans;   // by (kind, bytes)
  };
  GroupSite& site(int rank, workloads::Group group);
  const GroupSite::Plan& plan_of(GroupSite& site, const CollectiveOp& c);
  void record_replay(const Memo::Played& played, const std::vector<NodeId>& gpus, Seconds start);
  void begin(const InstanceKey& key, Instance& inst, const CollectiveOp& c, GroupSite& site);
  void collective_ended(const InstanceKey& key, Seconds end);
  void replay(const InstanceKey& key, const Memo::Played& played, const std::vector<NodeId>& gpus);
  std::unique_ptr<CollectiveRun> play_in_full(std::shared_ptr<const CollectivePlan> plan,
                                              const std::vector<NodeId>& gpus, Seconds start,
                                              CollectiveRun::Finished finished);
  void begin_lanes(const InstanceKey& key, Instance& inst, GroupSite& site);
  void start_lane(const InstanceKey& key, Instance& inst, GroupSite& site, std::size_t lane);
  void lane_ended(const InstanceKey& key, std::size_t lane, Seconds end);
  void lanes_ended(const InstanceKey& key);
  void post(int rank, std::uint32_t op, const SendOp& send);
  void receive(int rank, std::uint32_t op, const RecvOp& recv);
  void arrival(const PipeKey& key, Seconds at);

  const StepGraph& g_;
  const topology::Topology& topo_;
  Simulation& sim_;
  PlanCache& plans_;
  const Sites& sites_;
  std::vector<TransferRecord>* record_;
  const Memo* memo_;   // null: play every collective in full
  std::size_t replayed_ = 0;
  std::size_t refused_ = 0;
  Aggregates* aggregates_;   // null: play every step of every collective
  const std::vector<int>* representative_;   // symmetry: per rank the rank played for it; null: all played
  const std::vector<std::vector<int>>* lanes_;   // lanes: per played rank its images along TP; null: no lanes
  std::size_t lane_images_ = 0;
  std::size_t aggregated_ = 0;
  std::vector<ClassIndex> classes_;
  std::vector<RankState> ranks_;
  std::map<InstanceKey, Instance> instances_;
  std::deque<GroupSite> group_sites_;   // a deque: references stay valid as it grows
  std::map<GroupInstance, std::size_t> site_index_;
  std::map<PipeKey, Seconds> arrived_;                              // sends arrived before their recv was ready
  std::map<PipeKey, std::pair<int, std::uint32_t>> waiting_recvs_;   // recvs ready before their send arrived
  std::deque<Ending> endings_;                                      // known ends not yet passed on
  bool draining_ = false;
};

Player::Player(const StepGraph& g, const topology::Topology& topo, Simulation& sim, PlanCache& plans,
               const Sites& sites, std::vector<TransferRecord>* record, const Memo* memo, Aggregates* aggregates,
               const std::vector<int>* representative, const std::vector<std::vector<int>>* lanes)
    : g_(g),
      topo_(topo),
      sim_(sim),
      plans_(plans),
      sites_(sites),
      record_(record),
      memo_(memo),
      aggregates_(aggregates),
      representative_(representative),
      lanes_(lanes) {
  if (lanes_ != nullptr && !lanes_->empty()) lane_images_ = lanes_->front().size();
  std::size_t total = 0;
  for (const auto& c : g.classes) total += c.ranks.size();
  ranks_.resize(total);
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    classes_.push_back(index_class(g.classes[c]));
    for (int r : g.classes[c].ranks) {
      DTSIM_ASSERT(r >= 0 && static_cast<std::size_t>(r) < total, "rank classes do not number ranks 0..n-1");
      RankState& s = state(r);
      s.cls = c;
      s.gpu = topo.gpus().at(static_cast<std::size_t>(r));
      if (!played(r)) continue;
      s.waiting = classes_[c].dep_counts;
      s.times.resize(g.classes[c].ops.size());
    }
  }
}

void Player::start() {
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r)
    if (played(r))
      for (std::uint32_t i = 0; i < ops(r).size(); ++i)
        if (index(r).dep_counts[i] == 0) ready(r, i);
  drain();
}

void Player::at_time(Seconds at, std::function<void()> what) {
  const Seconds now = sim_.now();
  DTSIM_ASSERT(at >= now, "an op would start before the event that made its start known");
  if (at == now) return what();
  sim_.after(at - now, std::move(what));
}

// The op's deps have all ended, the latest at times[op].start.
void Player::ready(int rank, std::uint32_t op) {
  const auto& body = ops(rank)[op].body;
  if (std::holds_alternative<ComputeOp>(body)) return try_compute(rank);
  if (const auto* c = std::get_if<CollectiveOp>(&body)) return try_collective(rank, index_of(c->group));
  if (const auto* s = std::get_if<SendOp>(&body)) return post(rank, op, *s);
  receive(rank, op, std::get<RecvOp>(body));
}

void Player::ended(int rank, std::uint32_t op, Seconds end) {
  state(rank).times[op].end = end;
  endings_.push_back(Ending{rank, op, end});
}

// Passes every queued end on, breadth first (a chain of timed ops would otherwise recurse as deep as it is long).
void Player::drain() {
  if (draining_) return;
  draining_ = true;
  while (!endings_.empty()) {
    const Ending e = endings_.front();
    endings_.pop_front();
    pass_on(e);
  }
  draining_ = false;
}

void Player::pass_on(const Ending& e) {
  RankState& s = state(e.rank);
  ++s.ended;
  for (std::uint32_t next : index(e.rank).successors[e.op]) {
    s.times[next].start = std::max(s.times[next].start, e.end);
    if (--s.waiting[next] == 0) ready(e.rank, next);
  }
}

// Compute ends are known at their start: the stream runs ahead as far as its ops' deps are known.
void Player::try_compute(int rank) {
  RankState& s = state(rank);
  const auto& order = index(rank).compute_order;
  while (s.next_compute < order.size() && s.waiting[order[s.next_compute]] == 0) {
    const std::uint32_t op = order[s.next_compute++];
    OpTime& t = s.times[op];
    t.start = std::max(t.start, s.compute_free);
    s.compute_free = t.start + std::get<ComputeOp>(ops(rank)[op].body).duration;
    ended(rank, op, s.compute_free);
  }
}

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

void Player::post(int rank, std::uint32_t op, const SendOp& send) {
  const int peer = g_.peer_rank(rank, send.peer_stage);
  const PipeKey key{rank, peer, send.tag.micro_batch, send.tag.chunk, static_cast<int>(send.tag.direction)};
  // The send of every lane (without lanes, the rank's own), from one start (check_lanes); it arrives when the
  // last lane's does.
  at_time(state(rank).times[op].start, [this, rank, op, key, peer, bytes = send.bytes] {
    auto pending = std::make_shared<std::pair<std::size_t, Seconds>>(lane_count(), Seconds(0));
    for (std::size_t l = 0; l < lane_count(); ++l) {
      const NodeId src = state(lane_rank(rank, l)).gpu, dst = state(lane_rank(peer, l)).gpu;
      sim_.transfer(src, dst, bytes, [this, rank, op, key, src, dst, bytes, pending](Seconds start, Seconds end) {
        if (record_ != nullptr) record_->push_back(TransferRecord{src, dst, bytes, start, end});
        pending->second = std::max(pending->second, end);
        if (--pending->first > 0) return;
        ended(rank, op, pending->second);
        arrival(key, pending->second);
        drain();
      });
    }
  });
}

void Player::receive(int rank, std::uint32_t op, const RecvOp& recv) {
  const int peer = g_.peer_rank(rank, recv.peer_stage);
  const PipeKey key{peer, rank, recv.tag.micro_batch, recv.tag.chunk, static_cast<int>(recv.tag.direction)};
  auto it = arrived_.find(key);
  if (it == arrived_.end()) {
    waiting_recvs_.emplace(key, std::pair{rank, op});
    return;
  }
  const Seconds arrived = it->second;
  arrived_.erase(it);
  ended(rank, op, std::max(state(rank).times[op].start, arrived));
}

void Player::arrival(const PipeKey& key, Seconds at) {
  auto it = waiting_recvs_.find(key);
  if (it == waiting_recvs_.end()) {
    arrived_.emplace(key, at);
    return;
  }
  const auto [rank, op] = it->second;
  waiting_recvs_.erase(it);
  ended(rank, op, std::max(state(rank).times[op].start, at));
}

// Per class, the timeline of the played rank that ends last (the lowest such rank on a tie); a rank played by
// symmetry names the rank whose timeline it has.
void Player::fill(Timeline& t) {
  for (std::size_t c = 0; c < g_.classes.size(); ++c) {
    ClassTimeline ct{{}, Seconds(0), classes_[c].compute_busy, Seconds(0)};
    const std::vector<OpTime>* slowest = nullptr;
    for (int r : g_.classes[c].ranks) {
      if (!played(r)) continue;
      const RankState& s = state(r);
      DTSIM_ASSERT(s.ended == s.times.size(), "the step graph deadlocks (a recv without its send, or a collective "
                                              "some member never reaches)");
      Seconds end;
      for (const OpTime& o : s.times) end = std::max(end, o.end);
      if (slowest == nullptr || end > ct.end) {
        slowest = &s.times;
        ct.end = end;
      }
    }
    if (slowest != nullptr) ct.ops = *slowest;
    t.step_time = std::max(t.step_time, ct.end);
    t.classes.push_back(std::move(ct));
  }
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r)
    t.ranks.push_back(played(r) ? RankTimeline{r, std::move(state(r).times), -1}
                                : RankTimeline{r, {}, (*representative_)[static_cast<std::size_t>(r)]});
}

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
  if (options.symmetry)
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

}  // namespace dtsim::sim::flow
