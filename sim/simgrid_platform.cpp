// The SimGrid side of the engine: engine and model configuration, the platform built from a Topology, and
// activities started just in time with a completion callback each (see simgrid_platform.hpp).
#include "sim/simgrid_platform.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

#include <array>
#include <cmath>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/routing.hpp"

namespace dtsim::sim::flow {
namespace {

namespace sg4 = simgrid::s4u;
using Dir = sg4::LinkInRoute::Direction;
using topology::LinkId;
using topology::NodeId;

// Hosts only send and receive (compute ops are timers), but SimGrid wants a speed.
constexpr double kHostSpeed = 1e9;

// The textbook flow model (../shared/SIMGRID.md §3): time = latency + size / bandwidth, no cross-traffic, no
// TCP window cap, max-min fair sharing independent of route latency.
constexpr std::array kModelConfig = {"network/model:CM02", "network/crosstraffic:0", "network/TCP-gamma:0",
                                     "network/solver:fairbottleneck"};

std::unique_ptr<sg4::Engine> make_engine() {
  xbt_log_control_set("root.thres:critical");
  static std::array<char, 6> name{"dtsim"};
  static std::array<char*, 2> argv{name.data(), nullptr};
  int argc = 1;
  auto engine = std::make_unique<sg4::Engine>(&argc, argv.data());
  for (const char* setting : kModelConfig) sg4::Engine::set_config(setting);
  return engine;
}

}  // namespace

void RouteNeeds::add(NodeId src, NodeId dst, std::optional<BytesPerSecond> rate) {
  auto [it, added] = pairs_.emplace(Pair{src, dst}, rate);
  DTSIM_ASSERT(added || it->second == rate, "transfers between one pair of nodes carry different rate caps");
}

struct Simulation::Impl {
  Impl(const topology::Topology& topology, const RouteNeeds& needs, bool ecmp);

  sg4::Host* host(NodeId id);
  sg4::Link* link(LinkId id);
  sg4::Link* capacity_link(NodeId id);
  sg4::Link* rate_link(BytesPerSecond rate);
  std::vector<sg4::LinkInRoute> route(topology::Router& router, RouteNeeds::Pair pair, std::optional<BytesPerSecond> rate);

  void start(const sg4::ActivityPtr& activity, Done done);
  void completed(const sg4::Activity& activity);
  void guarded(const std::function<void()>& f);

  struct Pending {
    sg4::ActivityPtr activity;
    Done done;
  };

  const topology::Topology& topo;
  std::unique_ptr<sg4::Engine> engine;   // declared first: destroyed after every activity reference below
  sg4::NetZone* zone = nullptr;
  std::vector<sg4::Host*> hosts;         // by node id; null where no transfer starts or ends
  std::vector<sg4::Link*> links;         // by link id; null until a route uses the link
  std::unordered_map<NodeId, sg4::Link*> capacity_links;
  std::vector<std::pair<BytesPerSecond, sg4::Link*>> rate_links;
  std::unordered_map<const sg4::Activity*, Pending> pending;   // looked up, never iterated
  std::vector<sg4::ActivityPtr> finished;   // released once the clock has moved past their completion
  std::exception_ptr failure;
};

Simulation::Impl::Impl(const topology::Topology& topology, const RouteNeeds& needs, bool ecmp)
    : topo(topology),
      engine(make_engine()),
      hosts(topology.nodes().size(), nullptr),
      links(topology.links().size(), nullptr) {
  zone = sg4::create_full_zone("dtsim");
  for (NodeId g : topo.gpus()) host(g);
  topology::Router router(topo, ecmp);
  for (const auto& [pair, rate] : needs.pairs()) {
    if (pair.first == pair.second) continue;
    const std::vector<sg4::LinkInRoute> path = route(router, pair, rate);
    zone->add_route(host(pair.first)->get_netpoint(), host(pair.second)->get_netpoint(), nullptr, nullptr, path,
                    false);
  }
  zone->seal();
  sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { completed(a); });
  sg4::Engine::on_time_advance_cb([this](double) { finished.clear(); });
}

sg4::Host* Simulation::Impl::host(NodeId id) {
  sg4::Host*& h = hosts.at(id);
  if (h == nullptr) h = zone->create_host(fmt::format("n{}-{}", id, topo.node(id).name), kHostSpeed);
  return h;
}

sg4::Link* Simulation::Impl::link(LinkId id) {
  sg4::Link*& l = links.at(id);
  if (l != nullptr) return l;
  const topology::Link& spec = topo.link(id);
  l = zone->create_split_duplex_link(fmt::format("l{}", id), (spec.bandwidth * spec.efficiency).value())
          ->set_latency(spec.latency.value());
  return l;
}

// The node's switching capacity, at line rate, shared by every flow through it in either direction.
sg4::Link* Simulation::Impl::capacity_link(NodeId id) {
  auto [it, added] = capacity_links.emplace(id, nullptr);
  if (added)
    it->second = zone->create_link(fmt::format("cap{}", id), topo.node(id).capacity->value())
                     ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
  return it->second;
}

// A FATPIPE link limits each flow crossing it to its bandwidth without sharing: a per-transfer rate cap.
sg4::Link* Simulation::Impl::rate_link(BytesPerSecond rate) {
  for (const auto& [r, l] : rate_links)
    if (r == rate) return l;
  sg4::Link* l = zone->create_link(fmt::format("rate{}", rate_links.size()), rate.value())
                     ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
  rate_links.emplace_back(rate, l);
  return l;
}

std::vector<sg4::LinkInRoute> Simulation::Impl::route(topology::Router& router, RouteNeeds::Pair pair,
                                                      std::optional<BytesPerSecond> rate) {
  std::vector<sg4::LinkInRoute> path;
  NodeId at = pair.first;
  auto visit = [&](NodeId node) {
    if (topo.node(node).capacity) path.emplace_back(capacity_link(node));
  };
  visit(at);
  for (const topology::Hop& hop : router.route(pair.first, pair.second).hops) {
    path.emplace_back(link(hop.link), hop.forward ? Dir::UP : Dir::DOWN);
    at = topo.other_end(hop.link, at);
    visit(at);
  }
  if (rate) path.emplace_back(rate_link(*rate));
  return path;
}

void Simulation::Impl::start(const sg4::ActivityPtr& activity, Done done) {
  pending.emplace(activity.get(), Pending{activity, std::move(done)});
  activity->start();
}

void Simulation::Impl::completed(const sg4::Activity& activity) {
  auto it = pending.find(&activity);
  if (it == pending.end()) return;
  Done done = std::move(it->second.done);
  finished.push_back(std::move(it->second.activity));
  pending.erase(it);
  const Seconds start(activity.get_start_time());
  const Seconds end(activity.get_finish_time());
  guarded([&] { done(start, end); });
}

// SimGrid does not survive an exception thrown through its kernel: keep the first one, stop starting work.
void Simulation::Impl::guarded(const std::function<void()>& f) {
  if (failure) return;
  try {
    f();
  } catch (...) {
    failure = std::current_exception();
  }
}

Simulation::Simulation(const topology::Topology& topology, const RouteNeeds& needs, bool ecmp)
    : impl_(std::make_unique<Impl>(topology, needs, ecmp)) {}

Simulation::~Simulation() = default;

// A GPU runs one compute op at a time (the caller's rule) at a speed nobody shares, so an op of d seconds
// ends d after it starts: a kernel timer, not an Exec. (An Exec would sit in maestro's list of live activities,
// whose every completion scans it: ../shared/SIMGRID.md §5, pitfall 2.)
void Simulation::compute(NodeId /*node*/, Seconds duration, Done done) {
  const Seconds start = now();
  after(duration, [this, start, done = std::move(done)] { done(start, now()); });
}

void Simulation::transfer(NodeId src, NodeId dst, Bytes bytes, Done done) {
  if (src == dst) {   // nothing crosses a link
    after(Seconds(0), [this, done = std::move(done)] { done(now(), now()); });
    return;
  }
  sg4::CommPtr comm = sg4::Comm::sendto_init(impl_->host(src), impl_->host(dst));
  comm->set_payload_size(static_cast<std::uint64_t>(std::llround(bytes.value())));   // SimGrid counts whole bytes
  impl_->start(comm, std::move(done));
}

void Simulation::after(Seconds delay, std::function<void()> then) {
  simgrid::kernel::timer::Timer::set((now() + delay).value(),
                                     [this, then = std::move(then)] { impl_->guarded(then); });
}

Seconds Simulation::now() const { return Seconds(sg4::Engine::get_clock()); }

void Simulation::run() {
  if (!impl_->failure) impl_->engine->run();
  if (impl_->failure) std::rethrow_exception(impl_->failure);
}

std::string_view Simulation::network_model() {
  return "SimGrid 3.32 flow model: CM02, crosstraffic off, TCP-gamma off, fairbottleneck; links at line rate x "
         "protocol efficiency, switch capacities at line rate";
}

}  // namespace dtsim::sim::flow
