// Lowered collectives played on a Simulation by the step rule (simgrid_collective.hpp): plans, their cache, the
// sites of a group, aggregates, and the run of one collective.
#include "sim/simgrid/simgrid_collective.hpp"

#include <algorithm>
#include <tuple>

#include "topology/catalog.hpp"
#include "topology/error.hpp"

namespace dtsim::sim::flow {
namespace {

using topology::NodeId;

// Endpoint indices of a plan: group ranks first, then one per switch in order of first use.
class EndpointIndex {
 public:
  EndpointIndex(CollectivePlan& plan, int members) : plan_(plan), members_(members) {
    for (int r = 0; r < members; ++r) plan.endpoints.push_back(Endpoint{r, -1});
  }
  std::uint32_t operator()(int rank, int machine) {
    if (rank != kSwitch) {
      DTSIM_ASSERT(rank >= 0 && rank < members_, "a lowered transfer names a rank outside its group");
      return static_cast<std::uint32_t>(rank);
    }
    auto [it, added] = switches_.emplace(machine, static_cast<std::uint32_t>(plan_.endpoints.size()));
    if (added) plan_.endpoints.push_back(Endpoint{kSwitch, machine});
    return it->second;
  }

 private:
  CollectivePlan& plan_;
  int members_;
  std::map<int, std::uint32_t> switches_;
};

}  // namespace

CollectivePlan make_plan(Lowered lowered, int members) {
  CollectivePlan plan;
  plan.lowered = std::move(lowered);
  EndpointIndex index(plan, members);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;   // per transfer: (src, dst) endpoints
  for (const Transfer& t : plan.lowered.transfers)
    ends.emplace_back(index(t.src, t.machine), index(t.dst, t.machine));
  // Each endpoint's steps, in order: its phases.
  std::vector<std::map<int, std::uint32_t>> phase_of(plan.endpoints.size());
  for (std::size_t i = 0; i < ends.size(); ++i)
    for (std::uint32_t e : {ends[i].first, ends[i].second}) phase_of[e].emplace(plan.lowered.transfers[i].step, 0);
  plan.phases.resize(plan.endpoints.size());
  for (std::size_t e = 0; e < phase_of.size(); ++e)
    for (auto& [step, index_in_endpoint] : phase_of[e]) {
      index_in_endpoint = static_cast<std::uint32_t>(plan.phases[e].size());
      const bool chained = !plan.phases[e].empty() && plan.phases[e].back().step == step - 1;
      plan.phases[e].push_back(CollectivePlan::Phase{step, chained, 0, {}});
    }
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const int step = plan.lowered.transfers[i].step;
    const auto [src, dst] = ends[i];
    CollectivePlan::Ends e{src, dst, phase_of[src].at(step), phase_of[dst].at(step)};
    plan.phases[src][e.src_phase].outgoing.push_back(static_cast<std::uint32_t>(i));
    ++plan.phases[src][e.src_phase].transfers;
    ++plan.phases[dst][e.dst_phase].transfers;
    plan.ends.push_back(e);
  }
  return plan;
}

std::shared_ptr<const CollectivePlan> PlanCache::get(workloads::CollectiveKind kind, Bytes bytes,
                                                     const GroupLayout& layout) {
  Key key{static_cast<int>(kind), bytes.value(), layout.machine, layout.nvls, layout.direct_links, layout.order,
          layout.nvls_rate.value(), layout.switch_path_rate.value(), layout.switch_path_latency.value()};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Lowered lowered = lower_(kind, bytes, layout);
  const bool through_switch = std::any_of(lowered.transfers.begin(), lowered.transfers.end(),
                                          [](const Transfer& t) { return t.src == kSwitch || t.dst == kSwitch; });
  int repeats = 1;
  if (compact_ && !through_switch)
    if (auto step = first_step(lowered)) {
      repeats = step->steps;
      lowered = std::move(*step);
    }
  if (repeats == 1) lowered = expand(std::move(lowered));   // played step by step
  auto built = make_plan(std::move(lowered), static_cast<int>(layout.machine.size()));
  built.repeats = repeats;
  built.id = plans_.size();
  auto plan = std::make_shared<const CollectivePlan>(std::move(built));
  plans_.emplace(std::move(key), plan);
  by_address_.emplace(plan.get(), plan);
  return plan;
}

std::shared_ptr<const CollectivePlan> PlanCache::find(const CollectivePlan* plan) const { return by_address_.at(plan); }

Sites::Sites(const topology::Topology& topology)
    : topo_(topology), rings_(std::make_unique<topology::RingOrders>(topology)) {
  for (NodeId id = 0; id < topo_.nodes().size(); ++id) {
    const topology::Node& sw = topo_.node(id);
    if (sw.kind != topology::NodeKind::Switch || sw.capacity || sw.machine < 0) continue;
    for (topology::LinkId l : topo_.incident(id)) {
      const topology::Node& peer = topo_.node(topo_.other_end(l, id));
      if (peer.kind == topology::NodeKind::Gpu && peer.machine == sw.machine &&
          topo_.link(l).switch_reduction) {
        nvls_switch_.emplace(sw.machine, id);
        break;
      }
    }
  }
}

std::pair<std::vector<int>, std::vector<int>> label_machines(const std::vector<int>& machine) {
  std::vector<int> ids = machine;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<int> labels;
  labels.reserve(machine.size());
  for (int m : machine) labels.push_back(static_cast<int>(std::lower_bound(ids.begin(), ids.end(), m) - ids.begin()));
  return {std::move(labels), std::move(ids)};
}

// The machines of `gpus`, distinct, ascending.
std::vector<int> Sites::machines(const std::vector<NodeId>& gpus) const {
  std::vector<int> machine;
  for (NodeId g : gpus) machine.push_back(topo_.node(g).machine);
  return label_machines(machine).second;
}

GroupLayout Sites::layout(const std::vector<NodeId>& gpus) const {
  std::vector<int> machine;
  for (NodeId g : gpus) machine.push_back(topo_.node(g).machine);
  GroupLayout layout;
  layout.nvls = !gpus.empty();
  for (int m : machine) layout.nvls = layout.nvls && nvls_switch_.count(m) > 0;
  if (layout.nvls) {
    layout.nvls_rate = nvls_port_rate(gpus.front(), topo_);
    std::tie(layout.switch_path_rate, layout.switch_path_latency) = nvls_switch_path(gpus.front(), topo_);
  }
  layout.machine = label_machines(machine).first;
  layout.direct_links = fully_linked(gpus, topo_);
  layout.order = walk_order(gpus, topo_, *rings_);
  return layout;
}

std::vector<NodeId> Sites::endpoint_nodes(const CollectivePlan& plan, const std::vector<NodeId>& gpus) const {
  std::vector<int> ids;   // machine labels to machines, for switch endpoints
  std::vector<NodeId> nodes;
  nodes.reserve(plan.endpoints.size());
  for (const Endpoint& e : plan.endpoints) {
    if (e.rank != kSwitch) {
      nodes.push_back(gpus.at(static_cast<std::size_t>(e.rank)));
      continue;
    }
    if (ids.empty()) ids = machines(gpus);
    auto it = nvls_switch_.find(ids.at(static_cast<std::size_t>(e.machine)));
    DTSIM_ASSERT(it != nvls_switch_.end(), "a lowering sends to the switch of a machine without an NVLS switch");
    nodes.push_back(it->second);
  }
  return nodes;
}

void add_routes(RouteNeeds& needs, const CollectivePlan& plan, const std::vector<NodeId>& nodes) {
  for (std::size_t i = 0; i < plan.ends.size(); ++i)
    needs.add(nodes[plan.ends[i].src], nodes[plan.ends[i].dst], plan.lowered.transfers[i].rate);
}

Aggregates::Aggregates(const topology::Topology& topology, topology::Routing routing) : topo_(topology), paths_(topology, routing) {}

std::optional<Aggregates::Choice> Aggregates::of(const std::shared_ptr<const CollectivePlan>& plan,
                                                 const std::vector<NodeId>& gpus) {
  auto [it, added] = plans_.emplace(plan.get(), nullptr);
  // A plan with a switch endpoint (NVLS) is left alone: lowered_time finds a switch by machine id, and a plan's
  // machines are Sites labels. (NVLS steps differ anyway: nothing to aggregate.)
  const bool through_switch = std::any_of(plan->endpoints.begin(), plan->endpoints.end(),
                                          [](const Endpoint& e) { return e.rank == kSwitch; });
  if (added && !through_switch)
    if (auto aggregate = plan->repeats > 1 ? std::optional(aggregate_first_step(plan->lowered))
                                           : aggregate_steps(plan->lowered)) {
      const auto members = std::count_if(plan->endpoints.begin(), plan->endpoints.end(),
                                         [](const Endpoint& e) { return e.rank != kSwitch; });
      it->second = std::make_shared<const CollectivePlan>(make_plan(std::move(*aggregate), static_cast<int>(members)));
    }
  DTSIM_ASSERT(it->second != nullptr || plan->repeats == 1, "a compact plan is played through its aggregate");
  if (it->second == nullptr) return std::nullopt;
  auto [tail, fresh] = tails_.emplace(std::pair{plan.get(), gpus}, Seconds(0));
  if (fresh)
    tail->second = std::max(Seconds(0), lowered_time(plan->lowered, gpus, topo_, paths_, plan->repeats) -
                                            lowered_time(it->second->lowered, gpus, topo_, paths_));
  return Choice{it->second, tail->second};
}

CollectiveRun::CollectiveRun(Simulation& sim, std::shared_ptr<const CollectivePlan> plan, std::vector<NodeId> nodes,
                             std::vector<TransferRecord>* record, Finished finished, Seconds tail)
    : sim_(sim),
      plan_(std::move(plan)),
      nodes_(std::move(nodes)),
      record_(record),
      finished_(std::move(finished)),
      tail_(tail) {
  DTSIM_ASSERT(plan_->repeats == 1, "a compact plan is played through its aggregate, never step by step");
  for (const auto& phases : plan_->phases) {
    auto& counts = remaining_.emplace_back();
    for (const auto& p : phases) counts.push_back(p.transfers);
  }
  left_ = plan_->lowered.transfers.size();
}

void CollectiveRun::start() {
  const Lowered& l = plan_->lowered;
  if (left_ == 0) {
    sim_.after(l.latency, [this] {
      Finished done = std::move(finished_);   // may destroy *this
      done(sim_.now());
    });
    return;
  }
  for (std::size_t e = 0; e < plan_->phases.size(); ++e)
    for (std::size_t p = 0; p < plan_->phases[e].size(); ++p)
      if (!plan_->phases[e][p].chained) launch(e, p, l.latency + l.step_latency);
}

void CollectiveRun::launch(std::size_t endpoint, std::size_t phase, Seconds delay) {
  if (plan_->phases[endpoint][phase].outgoing.empty()) return;
  auto send_all = [this, endpoint, phase] {
    for (std::uint32_t t : plan_->phases[endpoint][phase].outgoing) {
      const CollectivePlan::Ends& e = plan_->ends[t];
      sim_.transfer(nodes_[e.src], nodes_[e.dst], plan_->lowered.transfers[t].bytes,
                    [this, t](Seconds start, Seconds end) { transfer_done(t, start, end); });
    }
  };
  if (delay > Seconds(0)) {
    sim_.after(delay, send_all);
    return;
  }
  send_all();
}

void CollectiveRun::transfer_done(std::uint32_t t, Seconds start, Seconds end) {
  const CollectivePlan::Ends& e = plan_->ends[t];
  if (record_ != nullptr)
    record_->push_back(TransferRecord{nodes_[e.src], nodes_[e.dst], plan_->lowered.transfers[t].bytes, start, end});
  touch(e.src, e.src_phase);
  touch(e.dst, e.dst_phase);
  if (--left_ > 0) return;
  if (tail_ > Seconds(0)) {
    sim_.after(tail_, [this] {
      Finished done = std::move(finished_);   // may destroy *this
      done(sim_.now());
    });
    return;
  }
  Finished done = std::move(finished_);   // may destroy *this
  done(end);
}

// One transfer of the endpoint's phase has ended; when it was the last, the next step begins if it waits for it.
void CollectiveRun::touch(std::size_t endpoint, std::size_t phase) {
  const auto& phases = plan_->phases[endpoint];
  if (--remaining_[endpoint][phase] > 0 || phase + 1 >= phases.size() || !phases[phase + 1].chained) return;
  launch(endpoint, phase + 1, plan_->lowered.step_latency);
}

}  // namespace dtsim::sim::flow
