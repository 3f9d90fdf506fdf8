#include "results/trace.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "topology/error.hpp"
#include "topology/routing.hpp"

namespace dtsim::results {
namespace {

using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::RecvOp;
using workloads::SendOp;

enum Track { kCompute = 0, kCollectives = 1, kSends = 2, kReceives = 3, kHost = 4 };
constexpr const char* kTrackNames[] = {"compute", "collectives", "pipeline send", "pipeline receive", "host"};
constexpr int kTracks = static_cast<int>(std::size(kTrackNames));
constexpr int kLanesPerTrack = 100;   // thread id = track x 100 + lane
constexpr int kLinksPid = 1'000'000;
constexpr int kMostListedRanks = 1'000'000;

// Microseconds, rounded to the nanosecond the trace prints, so slices that touch stay touching.
double us(Seconds s) { return std::round(s.value() * 1e9) / 1e3; }

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

std::pair<std::string, Track> describe(const workloads::Op& op) {
  return std::visit(
      [](const auto& b) -> std::pair<std::string, Track> {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, ComputeOp>) {
          const std::string what = b.kernel ? std::string(to_string(*b.kernel)) : std::string(to_string(b.scope));
          return {fmt::format("{} {} L{} mb{}", to_string(b.pass), what, b.layer, b.micro_batch), kCompute};
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return {fmt::format("{} {} {:.1f} MB", to_string(b.kind), to_string(b.group), b.bytes.value() / 1e6),
                  kCollectives};
        } else if constexpr (std::is_same_v<T, workloads::HostOp>) {
          return {fmt::format("host issues {} L{} mb{}", to_string(b.pass), b.layer, b.micro_batch), kHost};
        } else if constexpr (std::is_same_v<T, SendOp>) {
          return {fmt::format("send to stage {} mb{}", b.peer_stage, b.tag.micro_batch), kSends};
        } else {
          return {fmt::format("recv from stage {} mb{}", b.peer_stage, b.tag.micro_batch), kReceives};
        }
      },
      op.body);
}

// Where each of a traced rank's ops landed: its thread and its rounded interval.
struct Placed {
  int tid = 0;
  double ts = 0, end = 0;
};

// The timeline of `rank`: its own where the engine played every rank, else its class's.
const std::vector<sim::OpTime>& rank_times(const workloads::StepGraph& g, const sim::Timeline& t, int rank) {
  const auto& c = g.class_of(rank);
  if (!t.ranks.empty()) {
    const auto at = static_cast<std::size_t>(rank);
    const auto it = at < t.ranks.size() && t.ranks[at].rank == rank
                        ? t.ranks.begin() + rank
                        : std::ranges::find_if(t.ranks, [&](const sim::RankTimeline& r) { return r.rank == rank; });
    if (it != t.ranks.end()) {
      if (it->same_as >= 0) return rank_times(g, t, it->same_as);
      if (it->ops.size() == c.ops.size()) return it->ops;
    }
  }
  const auto index = static_cast<std::size_t>(&c - g.classes.data());
  return t.classes.at(index).ops;
}

class Writer {
 public:
  void event(const std::string& body) {
    out_ += first_ ? "\n" : ",\n";
    out_ += body;
    first_ = false;
  }
  std::string finish(const std::string& other) {
    return fmt::format("{{\"displayTimeUnit\":\"ms\",\"otherData\":{},\"traceEvents\":[{}\n]}}\n", other, out_);
  }

 private:
  std::string out_;
  bool first_ = true;
};

using PipeKey = std::tuple<int, int, int, int>;   // sender stage, micro-batch, chunk, direction

PipeKey key_of(int sender_stage, const workloads::PipeTag& tag) {
  return {sender_stage, tag.micro_batch, tag.chunk, static_cast<int>(tag.direction)};
}

// A receive is posted long before its data comes (the engine posts it when its dependencies allow); the trace
// shows it from when the matching send started, so the receive track shows data arriving, not waiting.
std::vector<double> arrival_starts(const workloads::StepGraph& g, const sim::Timeline& t, int rank) {
  const auto& c = g.class_of(rank);
  std::vector<double> out(c.ops.size(), 0.0);
  std::map<int, std::map<PipeKey, double>> send_starts;   // sender rank -> its sends' starts
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const auto* r = std::get_if<RecvOp>(&c.ops[i].body);
    if (r == nullptr) continue;
    const int peer = g.peer_rank(rank, r->peer_stage);
    auto [it, fresh] = send_starts.try_emplace(peer);
    if (fresh) {
      const auto& peer_ops = g.class_of(peer).ops;
      const auto& peer_times = rank_times(g, t, peer);
      for (std::size_t j = 0; j < peer_ops.size(); ++j)
        if (const auto* sd = std::get_if<SendOp>(&peer_ops[j].body))
          it->second[key_of(g.class_of(peer).stage, sd->tag)] = us(peer_times[j].start);
    }
    const auto found = it->second.find(key_of(r->peer_stage, r->tag));
    if (found != it->second.end()) out[i] = found->second;
  }
  return out;
}

// A rank's slices, each track split into lanes so that no two slices on one thread overlap.
std::vector<Placed> rank_events(Writer& w, const workloads::StepGraph& g, const sim::Timeline& t, int rank) {
  const auto& times = rank_times(g, t, rank);
  const auto arrivals = arrival_starts(g, t, rank);
  const auto& c = g.class_of(rank);
  const auto coord = g.placement.coord(rank);
  w.event(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":{}}}}})", rank,
                      json_string(fmt::format("GPU {} (stage {}, tp {}, dp {})", rank, c.stage, coord.tp, coord.dp))));
  w.event(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", rank, rank));
  std::vector<Placed> placed(c.ops.size());
  std::vector<std::pair<std::string, Track>> what(c.ops.size());
  std::vector<std::size_t> order(c.ops.size());
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    order[i] = i;
    what[i] = describe(c.ops[i]);
    placed[i].end = us(times[i].end);
    placed[i].ts = std::min(placed[i].end, std::max(us(times[i].start), arrivals[i]));
  }
  std::ranges::stable_sort(order, [&](std::size_t a, std::size_t b) { return placed[a].ts < placed[b].ts; });
  std::vector<std::vector<double>> lane_end(static_cast<std::size_t>(kTracks));   // per track, when each lane is free again
  for (const std::size_t i : order) {
    auto& lanes = lane_end[what[i].second];
    std::size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > placed[i].ts) ++lane;
    if (lane == lanes.size()) lanes.push_back(0);
    lanes[lane] = placed[i].end;
    const int capped = static_cast<int>(std::min<std::size_t>(lane, kLanesPerTrack - 1));
    placed[i].tid = what[i].second * kLanesPerTrack + capped;
  }
  for (int track = 0; track < kTracks; ++track)
    for (std::size_t lane = 0; lane < lane_end[static_cast<std::size_t>(track)].size() && lane < kLanesPerTrack; ++lane) {
      const std::string name = lane == 0 ? kTrackNames[track] : fmt::format("{} {}", kTrackNames[track], lane + 1);
      w.event(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", rank,
                          track * kLanesPerTrack + static_cast<int>(lane), json_string(name)));
      w.event(fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                          rank, track * kLanesPerTrack + static_cast<int>(lane), track * kLanesPerTrack + static_cast<int>(lane)));
    }
  for (std::size_t i = 0; i < c.ops.size(); ++i)
    w.event(fmt::format(R"({{"name":{},"ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f}}})", json_string(what[i].first),
                        rank, placed[i].tid, placed[i].ts, placed[i].end - placed[i].ts));
  return placed;
}

// A point strictly inside a slice where it has length (a flow binds to the slice enclosing it), `from_end` from
// the end of it, else from its start.
double inside(const Placed& p, bool from_end) {
  const double margin = std::min(0.0005, (p.end - p.ts) / 2);
  return from_end ? p.end - margin : p.ts + margin;
}

// A flow arrow from each send to its receive, where both ranks are traced: it leaves as the send starts and lands
// as the receive completes.
void flow_events(Writer& w, const workloads::StepGraph& g, const std::map<int, std::vector<Placed>>& traced) {
  std::map<int, std::map<PipeKey, std::size_t>> receives;   // traced rank -> its receive ops by what they receive
  for (const auto& [rank, placed] : traced) {
    const auto& ops = g.class_of(rank).ops;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (const auto* r = std::get_if<RecvOp>(&ops[i].body))
        receives[rank][key_of(r->peer_stage, r->tag)] = i;
  }
  long long id = 0;
  for (const auto& [rank, placed] : traced) {
    const auto& c = g.class_of(rank);
    for (std::size_t i = 0; i < c.ops.size(); ++i) {
      const auto* s = std::get_if<SendOp>(&c.ops[i].body);
      if (s == nullptr) continue;
      const int peer = g.peer_rank(rank, s->peer_stage);
      const auto to = traced.find(peer);
      if (to == traced.end()) continue;
      const auto& peer_receives = receives[peer];
      const auto r = peer_receives.find(key_of(c.stage, s->tag));
      if (r == peer_receives.end()) continue;
      const Placed& from = placed[i];
      const Placed& at = to->second[r->second];
      ++id;
      w.event(fmt::format(R"({{"name":"activation","cat":"pipeline","ph":"s","id":{},"pid":{},"tid":{},"ts":{:.4f}}})",
                          id, rank, from.tid, inside(from, false)));
      w.event(fmt::format(R"({{"name":"activation","cat":"pipeline","ph":"f","bp":"e","id":{},"pid":{},"tid":{},"ts":{:.4f}}})",
                          id, peer, at.tid, std::max(inside(at, true), inside(from, false))));
    }
  }
}

// Per link direction, the rate of every transfer crossing it (bytes over its lifetime) summed into a step
// function, as a fraction of line rate. Under adaptive routing a transfer spreads over each layer's links in
// proportion to their bandwidth.
void link_counters(Writer& w, const sim::Timeline& t, const topology::Topology& topo, topology::Routing routing) {
  if (t.transfers.empty()) return;
  topology::Router router(topo, routing);
  std::map<std::pair<topology::LinkId, bool>, std::map<double, double>> deltas;   // (link, forward) -> time -> rate
  for (const auto& x : t.transfers) {
    const double span = (x.end - x.start).value();
    if (span <= 0 || x.src == x.dst) continue;
    for (const auto& layer : router.route_layers(x.src, x.dst)) {
      double width = 0;
      for (const auto& hop : layer) width += topo.link(hop.link).bandwidth.value();
      for (const auto& hop : layer) {
        const double share = x.bytes.value() / span / width;
        auto& d = deltas[{hop.link, hop.forward}];
        d[us(x.start)] += share;
        d[us(x.end)] -= share;
      }
    }
  }
  w.event(fmt::format(R"x({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"links (utilisation)"}}}})x", kLinksPid));
  for (const auto& [key, changes] : deltas) {
    const auto& link = topo.link(key.first);
    const std::string name = json_string(fmt::format("{} -> {}", topo.node(key.second ? link.a : link.b).name,
                                                topo.node(key.second ? link.b : link.a).name));
    double level = 0;
    for (const auto& [time, delta] : changes) {
      level += delta;
      w.event(fmt::format(R"({{"name":{},"ph":"C","pid":{},"ts":{:.3f},"args":{{"utilisation":{:.4f}}}}})", name,
                          kLinksPid, time, std::max(0.0, level)));
    }
  }
}

std::vector<int> traced_ranks(const workloads::StepGraph& g, const TraceRanks& ranks) {
  std::vector<int> out;
  switch (ranks.mode) {
    case TraceRanks::Mode::All:
      for (int r = 0; r < g.placement.ranks(); ++r) out.push_back(r);
      break;
    case TraceRanks::Mode::List: out = ranks.list; break;
    case TraceRanks::Mode::Stages:
      for (int p = 0; p < g.placement.size(workloads::Axis::Pp); ++p) out.push_back(g.placement.rank({0, 0, p}));
      break;
  }
  return out;
}

}  // namespace

TraceRanks parse_trace_ranks(const std::string& text) {
  const std::string allowed = "stages, all, or ranks and ranges such as 0,8,16-23";
  if (text == "stages" || text.empty()) return {};
  if (text == "all") return {TraceRanks::Mode::All, {}};
  std::set<int> ranks;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const std::size_t dash = item.find('-', 1);
    const auto number = [&](const std::string& s) {
      if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos)
        throw InputError("--trace-ranks", text, "is not a rank list", allowed);
      return std::stoi(s);
    };
    const int lo = number(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) throw InputError("--trace-ranks", text, fmt::format("has a range that runs backwards ({}):", item), allowed);
    if (hi - lo >= kMostListedRanks) throw InputError("--trace-ranks", text, "lists more than a million ranks:", allowed);
    for (int r = lo; r <= hi; ++r) ranks.insert(r);
    start = end + 1;
  }
  return {TraceRanks::Mode::List, {ranks.begin(), ranks.end()}};
}

void check_trace_ranks(const TraceRanks& ranks, int gpus) {
  if (ranks.mode == TraceRanks::Mode::List && !ranks.list.empty() && ranks.list.back() >= gpus)
    throw InputError("--trace-ranks", std::to_string(ranks.list.back()), "is not a rank of the cluster:",
                     fmt::format("ranks 0 to {}", gpus - 1));
}

std::string trace_json(const workloads::StepGraph& g, const sim::Timeline& t, const topology::Topology& topo,
                       topology::Routing routing, const TraceOptions& options) {
  Writer w;
  std::map<int, std::vector<Placed>> traced;
  const auto ranks = traced_ranks(g, options.ranks);
  for (const int rank : ranks) traced[rank] = rank_events(w, g, t, rank);
  flow_events(w, g, traced);
  if (options.links) link_counters(w, t, topo, routing);
  const nlohmann::json other{{"network_model", t.network_model},
                             {"step_time_s", t.step_time.value()},
                             {"traced_ranks", ranks},
                             {"engine_played_every_rank", !t.ranks.empty()}};
  return w.finish(other.dump());
}

}  // namespace dtsim::results
