// Private to the player's sources (player.cpp, player_collectives.cpp, simgrid_player.cpp): the Player, which
// plays a StepGraph on a Simulation, every rank expanded (but where symmetry applies), by the rules of
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
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/simgrid/simgrid_collective.hpp"
#include "sim/simgrid/simgrid_isolation.hpp"
#include "sim/simgrid/simgrid_memo.hpp"
#include "sim/simgrid/simgrid_platform.hpp"
#include "sim/timeline.hpp"
#include "topology/topology.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim::flow {

constexpr std::size_t kGroups = 11;   // workloads::Group's values
inline std::size_t index_of(workloads::Group g) { return static_cast<std::size_t>(g); }

// What every rank of a class shares: dependency structure and the order of its streams.
struct ClassIndex {
  // Per op, the ops that depend on it: successors[successor_first[i] .. successor_first[i + 1]).
  std::vector<std::uint32_t> successor_first;
  std::vector<std::uint32_t> successors;
  [[nodiscard]] std::span<const std::uint32_t> successors_of(std::uint32_t op) const {
    return {successors.data() + successor_first[op], successors.data() + successor_first[op + 1]};
  }
  std::vector<std::uint16_t> dep_counts;
  std::vector<std::uint32_t> compute_order;
  std::vector<std::uint32_t> host_order;   // HostOps: the host thread's, in list order
  std::array<std::vector<std::uint32_t>, kGroups> collective_order;
  Seconds compute_busy;
};

ClassIndex index_class(const workloads::RankClass& c);

struct RankState {
  std::size_t cls = 0;
  topology::NodeId gpu = 0;
  std::vector<std::uint16_t> waiting;   // per op: deps not yet ended
  std::vector<OpTime> times;            // start holds the ready time (the latest dep end) until the op starts
  std::size_t ended = 0;
  std::size_t next_compute = 0;
  Seconds compute_free;                 // when the compute stream's last started op ends
  double compute_scale = 1;             // its compute ops take this many times their duration (stragglers)
  double forward_scale = 1;             // and its forward and recompute ops this many times more
  std::size_t next_host = 0;
  Seconds host_free;                    // when the host thread's last started op ends
  std::array<std::size_t, kGroups> next_collective{};
  std::array<bool, kGroups> communicating{};   // reached a collective of this group that has not ended
  std::array<Seconds, kGroups> group_free{};   // when the group's previous collective ended
  std::array<std::int32_t, kGroups> site{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};   // per group, its GroupSite; -1 until first needed
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
  const workloads::CollectiveOp* op = nullptr;          // set when every member has arrived
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
  Player(const workloads::StepGraph& g, const topology::Topology& topo, Simulation& sim, PlanCache& plans,
         const Sites& sites, std::vector<TransferRecord>* record, const Memo* memo, Aggregates* aggregates,
         const std::vector<int>* representative, const std::vector<std::vector<int>>* lanes);
  [[nodiscard]] std::size_t replayed() const { return replayed_; }
  [[nodiscard]] std::size_t refused() const { return refused_; }
  [[nodiscard]] std::size_t aggregated() const { return aggregated_; }
  // Per rank, how many times longer its compute ops take, and its forward ones besides (SimgridOptions::
  // compute_scale, forward_scale); before start().
  void scale_compute(const std::vector<double>& scale, const std::vector<double>& forward);
  void start();
  void fill(Timeline& t);   // moves the ranks' times out: the last use of the player

 private:
  const std::vector<workloads::Op>& ops(int rank) const { return g_.classes[state(rank).cls].ops; }
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
  template <class Body>
  void run_stream(int rank, const std::vector<std::uint32_t>& order, std::size_t& next, Seconds& stream_end);
  void try_compute(int rank);
  void try_host(int rank);
  void try_collective(int rank, std::size_t group);
  void arrive(int rank, std::uint32_t op, std::size_t k, Seconds at);
  // Runs `what` at `at` (no earlier than now): now, or from a timer.
  void at_time(Seconds at, std::function<void()> what);
  // A group instance as the player needs it, resolved once.
  struct GroupSite {
    GroupInstance instance;
    std::vector<topology::NodeId> gpus;
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
  const GroupSite::Plan& plan_of(GroupSite& site, const workloads::CollectiveOp& c);
  void record_replay(const Memo::Played& played, const std::vector<topology::NodeId>& gpus, Seconds start);
  void begin(const InstanceKey& key, Instance& inst, const workloads::CollectiveOp& c, GroupSite& site);
  void collective_ended(const InstanceKey& key, Seconds end);
  void replay(const InstanceKey& key, const Memo::Played& played, const std::vector<topology::NodeId>& gpus);
  std::unique_ptr<CollectiveRun> play_in_full(std::shared_ptr<const CollectivePlan> plan,
                                              const std::vector<topology::NodeId>& gpus, Seconds start,
                                              CollectiveRun::Finished finished);
  void begin_lanes(const InstanceKey& key, Instance& inst, GroupSite& site);
  void start_lane(const InstanceKey& key, Instance& inst, GroupSite& site, std::size_t lane);
  void lane_ended(const InstanceKey& key, std::size_t lane, Seconds end);
  void lanes_ended(const InstanceKey& key);
  void post(int rank, std::uint32_t op, const workloads::SendOp& send);
  void receive(int rank, std::uint32_t op, const workloads::RecvOp& recv);
  void arrival(const PipeKey& key, Seconds at);

  const workloads::StepGraph& g_;
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

}  // namespace dtsim::sim::flow
