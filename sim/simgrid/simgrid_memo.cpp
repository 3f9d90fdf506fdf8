#include "sim/simgrid/simgrid_memo.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

#include "sim/simgrid/isolated.hpp"
#include "topology/error.hpp"

namespace dtsim::sim::flow {
namespace {

using topology::NodeId;

// The shape of `plan` on `nodes`: per transfer its route's length, then per resource its name by first
// appearance and what it offers.
std::vector<double> shape(const CollectivePlan& plan, const std::vector<NodeId>& nodes, RouteResources& resources) {
  std::vector<double> out;
  std::map<Resource, double> name;
  for (const CollectivePlan::Ends& e : plan.ends) {
    const NodeId src = nodes[e.src], dst = nodes[e.dst];
    if (src == dst) {
      out.push_back(0);
      continue;
    }
    const auto& route = resources(RouteNeeds::Pair{src, dst});
    out.push_back(static_cast<double>(route.size()));
    for (Resource r : route) {
      out.push_back(name.emplace(r, static_cast<double>(name.size())).first->second);
      const auto [bandwidth, latency] = resources.offer(r);
      out.push_back(bandwidth);
      out.push_back(latency);
    }
  }
  return out;
}

// One collective to play: what, and on which nodes.
struct Sample {
  std::shared_ptr<const CollectivePlan> plan;
  std::vector<NodeId> nodes;
  Seconds tail;
};

std::string pack(const std::vector<double>& v) {
  std::string s(v.size() * sizeof(double), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::vector<double> unpack(const std::string& s) {
  std::vector<double> v(s.size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(double));
  return v;
}

// Plays the samples one after the other in one simulation: per sample its duration, its transfer count, then
// per transfer (src endpoint, dst endpoint, bytes, start, end) from its start when `record`.
std::vector<double> play_samples(const std::vector<Sample>& samples, const topology::Topology& topology, bool record,
                                 topology::Routing routing) {
  RouteNeeds needs;
  for (const Sample& s : samples) add_routes(needs, *s.plan, s.nodes);
  RouteResources resources(topology, routing);
  Simulation sim(topology, needs, resources);
  std::vector<double> out;
  std::vector<TransferRecord> recorded;
  std::unique_ptr<CollectiveRun> run;
  std::function<void(std::size_t)> next = [&](std::size_t i) {
    if (i == samples.size()) return;
    const Seconds start = sim.now();
    recorded.clear();
    auto finished = [&, i, start](Seconds end) {
      out.push_back((end - start).value());
      out.push_back(static_cast<double>(recorded.size()));
      const auto& nodes = samples[i].nodes;
      auto endpoint = [&](NodeId n) {
        return static_cast<double>(std::find(nodes.begin(), nodes.end(), n) - nodes.begin());
      };
      for (const TransferRecord& r : recorded)
        out.insert(out.end(), {endpoint(r.src), endpoint(r.dst), r.bytes.value(), (r.start - start).value(),
                               (r.end - start).value()});
      next(i + 1);   // replaces (destroys) the run that called
    };
    run = std::make_unique<CollectiveRun>(sim, samples[i].plan, samples[i].nodes, record ? &recorded : nullptr,
                                          finished, samples[i].tail);
    run->start();
  };
  next(0);
  sim.run();
  return out;
}

}  // namespace

Memo::Memo(const Traffic& traffic, std::set<GroupInstance> isolated, const topology::Topology& topology,
           const Sites& sites, PlanCache& plans, RouteResources& resources, Aggregates* aggregates, bool record,
           topology::Routing routing)
    : isolated_(std::move(isolated)) {
  std::map<std::pair<const CollectivePlan*, std::vector<double>>, std::size_t> shapes;
  std::vector<Sample> samples;
  for (const GroupInstance& instance : isolated_) {
    const auto& data = traffic.instances.at(instance);
    std::vector<NodeId> gpus;
    for (int r : data.members) gpus.push_back(topology.gpus().at(static_cast<std::size_t>(r)));
    std::vector<const CollectivePlan*> in_order(data.plans.begin(), data.plans.end());
    std::ranges::sort(in_order, {}, &CollectivePlan::id);   // the samples play one after another: a fixed order
    for (const CollectivePlan* plan : in_order) {
      const std::vector<NodeId> nodes = sites.endpoint_nodes(*plan, gpus);
      auto [it, added] = shapes.emplace(std::pair{plan, shape(*plan, nodes, resources)}, samples.size());
      shape_of_.emplace(std::pair{instance, plan}, it->second);
      if (!added) continue;
      Sample s{plans.find(plan), nodes, Seconds(0)};
      if (aggregates != nullptr)
        if (auto choice = aggregates->of(s.plan, gpus)) {
          s.plan = std::move(choice->plan);
          s.tail = choice->tail;
          s.nodes = sites.endpoint_nodes(*s.plan, gpus);
        }
      samples.push_back(std::move(s));
    }
  }
  if (samples.empty()) return;
  const std::vector<double> out =
      unpack(run_isolated([&] { return pack(play_samples(samples, topology, record, routing)); }));
  std::size_t at = 0;
  for (const Sample& s : samples) {
    DTSIM_ASSERT(at + 2 <= out.size(), "the memoized collectives came back truncated");
    Played p{Seconds(out[at]), s.plan, {}};
    const auto transfers = static_cast<std::size_t>(out[at + 1]);
    at += 2;
    for (std::size_t t = 0; t < transfers; ++t, at += 5)
      p.transfers.push_back(Played::Transfer{static_cast<std::uint32_t>(out[at]), static_cast<std::uint32_t>(out[at + 1]),
                                             Bytes(out[at + 2]), Seconds(out[at + 3]), Seconds(out[at + 4])});
    played_.push_back(std::move(p));
  }
}

const Memo::Played& Memo::played(const GroupInstance& instance, const CollectivePlan* plan) const {
  return played_.at(shape_of_.at(std::pair{instance, plan}));
}

}  // namespace dtsim::sim::flow
