#include "sim/analytic/analytic_engine.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topology/error.hpp"

namespace dtsim::sim {
namespace {

using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::Op;
using workloads::RecvOp;
using workloads::SendOp;
using workloads::StepGraph;

// (sender stage, receiver stage, micro-batch, chunk, direction, cohort)
struct PipeKey {
  int from, to, micro_batch, chunk, direction, cohort;
  friend bool operator==(const PipeKey&, const PipeKey&) = default;
};
struct PipeKeyHash {
  std::size_t operator()(const PipeKey& k) const {
    std::size_t h = 0;
    for (const int v : {k.from, k.to, k.micro_batch, k.chunk, k.direction, k.cohort})
      h = h * 0x100000001b3ULL ^ static_cast<std::size_t>(static_cast<unsigned>(v));
    return h;
  }
};

PipeKey key(int from, int to, const workloads::PipeTag& t, int cohort) {
  return {from, to, t.micro_batch, t.chunk, static_cast<int>(t.direction), cohort};
}

class Player {
 public:
  Player(const StepGraph& g, const OpDuration& duration)
      : g_(g), duration_(duration), state_(g.classes.size()), meets_(g.classes.size()) {
    for (std::size_t c = 0; c < g.classes.size(); ++c) state_[c].times.resize(g.classes[c].ops.size());
    if (g.cohorts() > 1) find_meetings();
  }

  Timeline run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t c = 0; c < g_.classes.size(); ++c) progress |= advance(c);
    }
    Timeline t;
    for (std::size_t c = 0; c < g_.classes.size(); ++c) {
      DTSIM_ASSERT(state_[c].next == g_.classes[c].ops.size(), "the step graph deadlocks (a recv without its send)");
      ClassTimeline ct{std::move(state_[c].times), Seconds(0), state_[c].busy, Seconds(0)};
      for (const OpTime& o : ct.ops) ct.end = std::max(ct.end, o.end);
      t.step_time = std::max(t.step_time, ct.end);
      t.classes.push_back(std::move(ct));
    }
    return t;
  }

 private:
  struct ClassState {
    std::size_t next = 0;
    std::vector<OpTime> times;
    Seconds compute_free;
    Seconds host_free;
    Seconds busy;
    std::array<Seconds, workloads::kGroupCount> communicator_free{};   // per Group
    int embedding_seen = 0;   // Embedding-group collectives reached so far
    std::array<int, workloads::kGroupCount> group_seen{};   // with cohorts: collectives reached per Group
  };

  // The class of the other end of c's pipeline in c's cohort.
  std::size_t embedding_partner(std::size_t c) const {
    const int last = g_.placement.size(workloads::Axis::Pp) - 1;
    const int stage = g_.classes[c].stage == 0 ? last : 0;
    for (std::size_t o = 0; o < g_.classes.size(); ++o)
      if (g_.classes[o].stage == stage && g_.classes[o].cohort == g_.classes[c].cohort) return o;
    DTSIM_ASSERT(false, "every cohort holds every stage");
    return c;
  }

  // With cohorts, for each class and group: the other classes whose ranks its group holds.
  void find_meetings() {
    std::vector<std::size_t> class_of(static_cast<std::size_t>(g_.placement.ranks()));
    for (std::size_t c = 0; c < g_.classes.size(); ++c)
      for (int r : g_.classes[c].ranks) class_of.at(static_cast<std::size_t>(r)) = c;
    for (std::size_t c = 0; c < g_.classes.size(); ++c) {
      std::array<bool, workloads::kGroupCount> asked{};
      for (const Op& op : g_.classes[c].ops) {
        const auto* coll = std::get_if<CollectiveOp>(&op.body);
        if (coll == nullptr || coll->group == workloads::Group::Embedding) continue;
        const auto g = static_cast<std::size_t>(coll->group);
        if (std::exchange(asked[g], true)) continue;
        auto& meets = meets_[c][g];
        for (int r : g_.group_ranks(g_.classes[c].ranks.front(), coll->group))
          if (const std::size_t o = class_of[static_cast<std::size_t>(r)]; o != c && std::ranges::find(meets, o) == meets.end())
            meets.push_back(o);
      }
    }
  }

  // Processes class c's ops in order until one waits on another class; true when any op was placed.
  bool advance(std::size_t c) {
    bool placed = false;
    auto& s = state_[c];
    const auto& ops = g_.classes[c].ops;
    while (s.next < ops.size()) {
      auto t = place(c, s.next, ops[s.next], ready(s, ops[s.next]));
      if (!t) break;
      s.times[s.next++] = *t;
      placed = true;
    }
    return placed;
  }

  static Seconds ready(const ClassState& s, const Op& op) {
    Seconds r;
    for (auto d : op.deps) r = std::max(r, s.times[d].end);
    return r;
  }

  std::optional<OpTime> place(std::size_t c, std::size_t i, const Op& op, Seconds ready) {
    auto& s = state_[c];
    const int stage = g_.classes[c].stage, cohort = g_.classes[c].cohort;
    if (std::holds_alternative<ComputeOp>(op.body)) {
      const Seconds start = std::max(ready, s.compute_free);
      const Seconds duration = duration_(c, i);
      s.compute_free = start + duration;
      s.busy += duration;
      return OpTime{start, s.compute_free};
    }
    if (std::holds_alternative<workloads::HostOp>(op.body)) {   // the host thread: one at a time, no GPU
      const Seconds start = std::max(ready, s.host_free);
      s.host_free = start + duration_(c, i);
      return OpTime{start, s.host_free};
    }
    if (const auto* send = std::get_if<SendOp>(&op.body)) {
      const Seconds end = ready + duration_(c, i);
      arrivals_[key(stage, send->peer_stage, send->tag, cohort)] = end;
      return OpTime{ready, end};
    }
    if (const auto* recv = std::get_if<RecvOp>(&op.body)) {
      auto it = arrivals_.find(key(recv->peer_stage, stage, recv->tag, cohort));
      if (it == arrivals_.end()) return std::nullopt;
      return OpTime{ready, std::max(ready, it->second)};
    }
    return collective(c, i, std::get<CollectiveOp>(op.body), ready);
  }

  // Tp and Dp groups live inside one class, the Embedding group joins the first and the last stage (of one
  // cohort), and with cohorts a group that spans them (the Dp group) waits for each of its classes.
  std::optional<OpTime> collective(std::size_t c, std::size_t i, const CollectiveOp& op, Seconds ready) {
    auto& s = state_[c];
    const auto g = static_cast<std::size_t>(op.group);
    Seconds& free = s.communicator_free[g];
    Seconds start = std::max(ready, free);
    if (op.group == workloads::Group::Embedding) {
      const int k = s.embedding_seen;
      embedding_ready_[{c, k}] = start;
      auto it = embedding_ready_.find({embedding_partner(c), k});
      if (it == embedding_ready_.end()) return std::nullopt;
      start = std::max(start, it->second);
      ++s.embedding_seen;
    } else if (!meets_[c][g].empty()) {
      const int k = s.group_seen[g];
      group_ready_[{c, g, k}] = start;
      for (const std::size_t other : meets_[c][g]) {
        auto it = group_ready_.find({other, g, k});
        if (it == group_ready_.end()) return std::nullopt;
        start = std::max(start, it->second);
      }
      ++s.group_seen[g];
    }
    const OpTime t{start, start + duration_(c, i)};
    free = t.end;
    return t;
  }

  const StepGraph& g_;
  const OpDuration& duration_;
  std::vector<ClassState> state_;
  std::vector<std::array<std::vector<std::size_t>, workloads::kGroupCount>> meets_;   // per class, per Group
  std::unordered_map<PipeKey, Seconds, PipeKeyHash> arrivals_;
  std::map<std::pair<std::size_t, int>, Seconds> embedding_ready_;
  std::map<std::tuple<std::size_t, std::size_t, int>, Seconds> group_ready_;
};

// What play_analytic asks CommCosts once per class: a collective (group, kind, purpose, bytes) or a send (-1, peer
// stage, 0, bytes).
struct CostKey {
  int group, kind, purpose;
  double bytes;
  friend bool operator==(const CostKey&, const CostKey&) = default;
};

}  // namespace

CommCosts free_communication() {
  return {[](const CollectiveOp&, const std::vector<int>&) { return Seconds(0); },
          [](const SendOp&, int, int) { return Seconds(0); }};
}

Timeline play_analytic(const StepGraph& graph, const CommCosts& costs) {
  // A collective's time depends on its kind, size, purpose and group, a send's on its size and peer (CommCosts'
  // contract): each is asked once per class, not once per op (a step repeats them every layer and micro-batch).
  // A class asks a few dozen distinct questions at most: a list searched in order beats hashing them.
  std::vector<std::vector<std::pair<CostKey, Seconds>>> asked(graph.classes.size());
  const auto answer = [&](std::size_t c, const CostKey& key, const auto& ask) {
    auto& known = asked[c];
    for (const auto& [k, t] : known)
      if (k == key) return t;
    return known.emplace_back(key, ask()).second;
  };
  const OpDuration duration = [&](std::size_t c, std::size_t i) {
    const auto& body = graph.classes[c].ops[i].body;
    const int rank = graph.classes[c].ranks.front();
    if (const auto* comp = std::get_if<ComputeOp>(&body)) return comp->duration;
    if (const auto* host = std::get_if<workloads::HostOp>(&body)) return host->duration;
    if (const auto* send = std::get_if<SendOp>(&body))
      return answer(c, {-1, send->peer_stage, 0, send->bytes.value()},
                    [&] { return costs.transfer(*send, rank, graph.peer_rank(rank, send->peer_stage)); });
    const auto& op = std::get<CollectiveOp>(body);
    return answer(c, {static_cast<int>(op.group), static_cast<int>(op.kind), static_cast<int>(op.purpose), op.bytes.value()},
                  [&] { return costs.collective(op, graph.group_ranks(rank, op.group)); });
  };
  return Player(graph, duration).run();
}

Timeline replay_analytic(const StepGraph& graph, const OpDuration& duration) { return Player(graph, duration).run(); }

}  // namespace dtsim::sim
