// The Player (player.hpp): construction, the end of each op passed on to what waits for it, the compute stream
// and the host thread, pipeline sends and receives, and the timeline it fills. Its collectives and lanes are in
// player_collectives.cpp.
#include "sim/simgrid/player.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <variant>

#include "sim/process.hpp"
#include "topology/error.hpp"

namespace dtsim::sim::flow {
namespace {

using topology::NodeId;
using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::Op;
using workloads::RecvOp;
using workloads::SendOp;

}  // namespace

ClassIndex index_class(const workloads::RankClass& c) {
  ClassIndex ix;
  ix.successor_first.assign(c.ops.size() + 1, 0);
  for (const Op& op : c.ops)
    for (std::uint32_t d : op.deps) ++ix.successor_first[d + 1];
  for (std::size_t i = 1; i < ix.successor_first.size(); ++i) ix.successor_first[i] += ix.successor_first[i - 1];
  ix.successors.resize(ix.successor_first.back());
  std::vector<std::uint32_t> filled(ix.successor_first.begin(), ix.successor_first.end() - 1);
  for (std::uint32_t i = 0; i < c.ops.size(); ++i) {
    const Op& op = c.ops[i];
    DTSIM_ASSERT(op.deps.size() <= std::numeric_limits<std::uint16_t>::max(), "an op waits on at most 65,535 others");
    ix.dep_counts.push_back(static_cast<std::uint16_t>(op.deps.size()));
    for (std::uint32_t d : op.deps) {
      DTSIM_ASSERT(d < i, "an op depends on a later op");
      ix.successors[filled[d]++] = i;
    }
    if (const auto* comp = std::get_if<ComputeOp>(&op.body)) {
      ix.compute_order.push_back(i);
      ix.compute_busy += comp->duration;
    }
    if (const auto* coll = std::get_if<CollectiveOp>(&op.body)) ix.collective_order[index_of(coll->group)].push_back(i);
    if (std::holds_alternative<workloads::HostOp>(op.body)) ix.host_order.push_back(i);
  }
  return ix;
}

Player::Player(const workloads::StepGraph& g, const topology::Topology& topo, Simulation& sim, PlanCache& plans,
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
      progress().total.fetch_add(g.classes[c].ops.size(), std::memory_order_relaxed);
    }
  }
}

void Player::scale_compute(const std::vector<double>& scale, const std::vector<double>& forward) {
  DTSIM_ASSERT(scale.empty() || scale.size() == ranks_.size(), "one compute scale per rank");
  DTSIM_ASSERT(forward.empty() || forward.size() == ranks_.size(), "one forward scale per rank");
  for (std::size_t r = 0; r < scale.size(); ++r) ranks_[r].compute_scale = scale[r];
  for (std::size_t r = 0; r < forward.size(); ++r) ranks_[r].forward_scale = forward[r];
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
  if (std::holds_alternative<workloads::HostOp>(body)) return try_host(rank);
  receive(rank, op, std::get<RecvOp>(body));
}

void Player::ended(int rank, std::uint32_t op, Seconds end) {
  progress().done.fetch_add(1, std::memory_order_relaxed);
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
  for (std::uint32_t next : index(e.rank).successors_of(e.op)) {
    s.times[next].start = std::max(s.times[next].start, e.end);
    if (--s.waiting[next] == 0) ready(e.rank, next);
  }
}

// A stream whose ops' ends are known at their start (the compute stream, the host thread) runs ahead, in list
// order, as far as its ops' deps are known.
template <class Body>
void Player::run_stream(int rank, const std::vector<std::uint32_t>& order, std::size_t& next, Seconds& stream_end) {
  RankState& s = state(rank);
  while (next < order.size() && s.waiting[order[next]] == 0) {
    const std::uint32_t op = order[next++];
    OpTime& t = s.times[op];
    t.start = std::max(t.start, stream_end);
    Seconds duration = std::get<Body>(ops(rank)[op].body).duration;
    if constexpr (std::is_same_v<Body, ComputeOp>) {
      const auto& comp = std::get<ComputeOp>(ops(rank)[op].body);
      const bool forward = comp.pass != workloads::Pass::Backward && comp.scope != workloads::Scope::Optimizer;
      duration = duration * (s.compute_scale * (forward ? s.forward_scale : 1.0));
    }
    stream_end = t.start + duration;
    ended(rank, op, stream_end);
  }
}

void Player::try_compute(int rank) {
  RankState& s = state(rank);
  run_stream<ComputeOp>(rank, index(rank).compute_order, s.next_compute, s.compute_free);
}

void Player::try_host(int rank) {
  RankState& s = state(rank);
  run_stream<workloads::HostOp>(rank, index(rank).host_order, s.next_host, s.host_free);
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
    double slowest_scale = 0;
    Seconds slowest_end;
    for (int r : g_.classes[c].ranks) {
      if (!played(r)) continue;
      const RankState& s = state(r);
      DTSIM_ASSERT(s.ended == s.times.size(), "the step graph deadlocks (a recv without its send, or a collective "
                                              "some member never reaches)");
      Seconds end;
      for (const OpTime& o : s.times) end = std::max(end, o.end);
      // Ranks at different speeds (stragglers): the class's timeline is its slowest rank's, whose compute is the
      // class's ops as the graph holds them (what the interference pass replays); a faster rank's would count its
      // wait in the collectives on top of the slower compute.
      const double scale = s.compute_scale * s.forward_scale;
      if (slowest == nullptr || scale > slowest_scale || (scale == slowest_scale && end > slowest_end)) {
        slowest = &s.times;
        slowest_scale = scale;
        slowest_end = end;
      }
      ct.end = std::max(ct.end, end);   // the class ends when its last rank does
    }
    if (slowest != nullptr) ct.ops = *slowest;
    t.step_time = std::max(t.step_time, ct.end);
    t.classes.push_back(std::move(ct));
  }
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r)
    t.ranks.push_back(played(r) ? RankTimeline{r, std::move(state(r).times), -1}
                                : RankTimeline{r, {}, (*representative_)[static_cast<std::size_t>(r)]});
}

}  // namespace dtsim::sim::flow
