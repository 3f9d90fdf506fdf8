#include "results/trace.hpp"

#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "topology/routing.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using workloads::CollectiveOp;
using workloads::ComputeOp;

constexpr int kComputeTrack = 0;
constexpr int kCollectiveTrack = 1;
constexpr int kPipelineTrack = 2;
constexpr int kLinksPid = 1'000'000;

double us(Seconds s) { return s.value() * 1e6; }

std::pair<std::string, int> describe(const workloads::Op& op) {
  return std::visit(
      [](const auto& b) -> std::pair<std::string, int> {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, ComputeOp>) {
          const std::string what = b.kernel ? std::string(to_string(*b.kernel)) : std::string(to_string(b.scope));
          return {fmt::format("{} {} L{} mb{}", to_string(b.pass), what, b.layer, b.micro_batch), kComputeTrack};
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return {fmt::format("{} {} {:.1f} MB", to_string(b.kind), to_string(b.group), b.bytes.value() / 1e6),
                  kCollectiveTrack};
        } else if constexpr (std::is_same_v<T, workloads::SendOp>) {
          return {fmt::format("send to stage {} mb{}", b.peer_stage, b.tag.micro_batch), kPipelineTrack};
        } else {
          return {fmt::format("recv from stage {} mb{}", b.peer_stage, b.tag.micro_batch), kPipelineTrack};
        }
      },
      op.body);
}

void name_tracks(json& events, int pid, const std::string& name) {
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
  const std::pair<int, const char*> tracks[] = {{kComputeTrack, "compute"}, {kCollectiveTrack, "collectives"},
                                                {kPipelineTrack, "pipeline"}};
  for (const auto& [tid, label] : tracks)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", label}}}});
}

void rank_events(json& events, int rank, const workloads::RankClass& c, const std::vector<sim::OpTime>& times) {
  name_tracks(events, rank, fmt::format("GPU {} (stage {})", rank, c.stage));
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const auto [name, tid] = describe(c.ops[i]);
    events.push_back({{"name", name}, {"ph", "X"}, {"pid", rank}, {"tid", tid}, {"ts", us(times[i].start)},
                      {"dur", us(times[i].end - times[i].start)}});
  }
}

// Per link direction, the rate of every transfer crossing it (bytes over its lifetime) summed into a step
// function, as a fraction of line rate. Under adaptive routing a transfer spreads over each layer's links in
// proportion to their bandwidth.
void link_counters(json& events, const sim::Timeline& t, const topology::Topology& topo, topology::Routing routing) {
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
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kLinksPid}, {"args", {{"name", "links (utilisation)"}}}});
  for (const auto& [key, changes] : deltas) {
    const auto& link = topo.link(key.first);
    const auto& from = topo.node(key.second ? link.a : link.b).name;
    const auto& to = topo.node(key.second ? link.b : link.a).name;
    double level = 0;
    for (const auto& [time, delta] : changes) {
      level += delta;
      events.push_back({{"name", fmt::format("{} -> {}", from, to)}, {"ph", "C"}, {"pid", kLinksPid}, {"ts", time},
                        {"args", {{"utilisation", std::max(0.0, level)}}}});
    }
  }
}

}  // namespace

std::string trace_json(const workloads::StepGraph& g, const sim::Timeline& t, const topology::Topology& topo,
                       topology::Routing routing) {
  json events = json::array();
  if (!t.ranks.empty() && g.placement.ranks() <= kTraceAllRanksUpTo) {
    for (const auto& r : t.ranks)
      rank_events(events, r.rank, g.class_of(r.rank),
                  r.same_as >= 0 ? t.ranks.at(static_cast<std::size_t>(r.same_as)).ops : r.ops);
  } else {
    for (std::size_t c = 0; c < g.classes.size(); ++c)
      rank_events(events, g.classes[c].ranks.front(), g.classes[c], t.classes[c].ops);
  }
  link_counters(events, t, topo, routing);
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"},
              {"otherData", {{"network_model", t.network_model}, {"step_time_s", t.step_time.value()}}}}
      .dump();
}

}  // namespace dtsim::results
