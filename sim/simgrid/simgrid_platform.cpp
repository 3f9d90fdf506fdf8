// The SimGrid side of the engine: engine and model configuration, the platform built from a Topology, and
// activities started just in time with a completion callback each (see simgrid_platform.hpp).
#include "sim/simgrid/simgrid_platform.hpp"

#include <signal.h>
#include <unistd.h>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <array>
#include <cmath>
#include <exception>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/routing.hpp"

namespace dtsim::sim::flow {
namespace {

namespace sg4 = simgrid::s4u;
using topology::LinkId;
using topology::NodeId;

// Hosts only send and receive (compute ops are timers), but SimGrid wants a speed.
constexpr double kHostSpeed = 1e9;

// The textbook flow model (../shared/SIMGRID.md §3): time = latency + size / bandwidth, no cross-traffic, no
// TCP window cap, max-min fair sharing independent of route latency.
// The solver is SimGrid's max-min with its lazy, selective update, which re-solves only the part of the system
// an event touches; the fair-bottleneck solver re-solves the whole system at every event, which made hashed
// (ECMP) routes on thousands of GPUs cost about N^2 (docs/scale.md). Max-min in SimGrid shares a link in inverse
// proportion to each flow's sharing penalty, which CM02 sets to the route's latency as the zone reports it
// (src/surf/network_cm02.cpp, NetworkCm02Model::communicate: sharing_penalty_ = latency): RTT-unfair. So every
// route reports the same latency, kReportedLatency, and the latency factor callback (NetworkModelIntf) scales it
// back to the sum of the route's own links' latencies, which is what the flow waits before it moves. Every flow
// so has penalty 1 and the sharing is textbook max-min, as fair-bottleneck gave it.
constexpr std::array kModelConfig = {"network/model:CM02", "network/crosstraffic:0", "network/TCP-gamma:0",
                                     "network/solver:maxmin"};
constexpr double kReportedLatency = 1.0;

// The latency a flow waits: its route's links' latencies, as a factor of kReportedLatency.
double route_latency_factor(double /*size*/, const sg4::Host* /*src*/, const sg4::Host* /*dst*/,
                            const std::vector<sg4::Link*>& links, const std::unordered_set<sg4::NetZone*>& /*zones*/) {
  double latency = 0;
  for (const sg4::Link* l : links) latency += l->get_latency();
  return latency / kReportedLatency;
}

// SIGINT and SIGTERM in a simulation process: it ends at once, with the shell's status for the signal, and its
// parent (run_isolated, a sweep's worker) sees no result. Async-signal-safe.
void end_simulation(int signo) { ::_exit(128 + signo); }

std::unique_ptr<sg4::Engine> make_engine() {
  xbt_log_control_set("root.thres:critical");
  static std::array<char, 6> name{"dtsim"};
  static std::array<char*, 2> argv{name.data(), nullptr};
  int argc = 1;
  // The Engine installs SimGrid's own SIGINT handler, which segfaulted on Ctrl-C here (it walks the simulation's
  // actors from inside the handler). dtsim's replaces it; a process that ignored SIGINT (nohup, a background
  // job) keeps ignoring it.
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  auto engine = std::make_unique<sg4::Engine>(&argc, argv.data());
  for (const char* setting : kModelConfig) sg4::Engine::set_config(setting);
  struct sigaction mine {};
  mine.sa_handler = before.sa_handler == SIG_IGN ? SIG_IGN : end_simulation;
  ::sigemptyset(&mine.sa_mask);
  ::sigaction(SIGINT, &mine, nullptr);
  mine.sa_handler = end_simulation;
  ::sigaction(SIGTERM, &mine, nullptr);
  return engine;
}

namespace routing = simgrid::kernel::routing;

// A zone that keeps the routes it is given, one per (source, destination), in a hash table. SimGrid's FullZone
// keeps a hosts x hosts table: 2 GB of empty slots at 16,384 hosts, where a step routes a few pairs per host.
class RouteTable : public routing::NetZoneImpl {
 public:
  explicit RouteTable(const std::string& name) : NetZoneImpl(name) {}

  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst, routing::Route* into,
                       double* latency) override {
    auto it = routes_.find(key(src, dst));
    if (it == routes_.end()) return;   // SimGrid reports the missing route
    into->link_list_.insert(into->link_list_.end(), it->second.begin(), it->second.end());
    // The same for every route (kReportedLatency); the flow's own is restored by route_latency_factor.
    if (latency != nullptr) *latency += kReportedLatency;
  }

  void add_route(routing::NetPoint* src, routing::NetPoint* dst, routing::NetPoint* /*gw_src*/,
                 routing::NetPoint* /*gw_dst*/, const std::vector<sg4::LinkInRoute>& links, bool symmetrical) override {
    DTSIM_ASSERT(!symmetrical, "routes are added one direction at a time");
    routes_[key(src, dst)] = get_link_list_impl(links, false);
  }

 private:
  static std::uint64_t key(const routing::NetPoint* src, const routing::NetPoint* dst) {
    return (static_cast<std::uint64_t>(src->id()) << 32) | dst->id();
  }
  std::unordered_map<std::uint64_t, std::vector<simgrid::kernel::resource::StandardLinkImpl*>> routes_;
};

}  // namespace

void RouteNeeds::add(NodeId src, NodeId dst, std::optional<BytesPerSecond> rate) {
  auto [it, added] = pairs_.emplace(Pair{src, dst}, rate);
  DTSIM_ASSERT(added || it->second == rate, "transfers between one pair of nodes carry different rate caps");
}

RouteResources::RouteResources(const topology::Topology& topo, topology::Routing routing) : topo_(topo), router_(topo, routing) {}

const std::vector<Resource>& RouteResources::operator()(const RouteNeeds::Pair& pair) {
  const std::uint64_t key = (static_cast<std::uint64_t>(pair.first) << 32) | pair.second;
  auto [it, added] = routes_.emplace(key, std::vector<Resource>{});
  if (!added) return it->second;
  const std::uint64_t links = topo_.links().size();
  std::vector<Resource> out;
  if (topo_.node(pair.first).capacity) out.push_back(2 * links + pair.first);
  for (const auto& layer : router_.route_layers(pair.first, pair.second)) {
    if (layer.size() > 1) {
      out.push_back(trunk(layer));
      continue;
    }
    const topology::Hop& hop = layer.front();
    out.push_back(2 * static_cast<std::uint64_t>(hop.link) + (hop.forward ? 1 : 0));
    const topology::Link& l = topo_.link(hop.link);
    const NodeId to = hop.forward ? l.b : l.a;
    if (topo_.node(to).capacity) out.push_back(2 * links + to);
  }
  it->second = std::move(out);
  return it->second;
}

// The trunk of one layer of equal hops: the same set is one trunk for every route that spreads over it, and a
// link direction belongs to one trunk at most (a flow model of adaptive routing over groups that overlap would
// need weights per link, which a trunk cannot give).
Resource RouteResources::trunk(const std::vector<topology::Hop>& hops) {
  std::vector<std::pair<topology::LinkId, bool>> key;
  for (const topology::Hop& h : hops) key.emplace_back(h.link, h.forward);
  const std::uint64_t base = 2 * topo_.links().size() + topo_.nodes().size();
  auto [it, added] = trunk_ids_.emplace(key, base + trunks_.size());
  if (!added) return it->second;
  double bandwidth = 0, latency = 0;
  for (const topology::Hop& h : hops) {
    const topology::Link& l = topo_.link(h.link);
    const Resource direction = 2 * static_cast<Resource>(h.link) + (h.forward ? 1 : 0);
    if (!trunk_of_link_.emplace(direction, it->second).second)
      throw InputError("cluster.routing", "adaptive",
                       fmt::format("the equal-cost paths of the topology overlap in groups (link {} to {} is in two)",
                                   topo_.node(l.a).name, topo_.node(l.b).name),
                       "ecmp or dmodk on this topology");
    for (NodeId n : {l.a, l.b})
      if (topo_.node(n).capacity && n != (h.forward ? l.a : l.b))
        throw InputError("cluster.routing", "adaptive",
                         fmt::format("equal-cost paths cross {}, a device with a switching capacity", topo_.node(n).name),
                         "ecmp or dmodk on this topology");
    bandwidth += (l.bandwidth * l.efficiency).value();
    latency = std::max(latency, l.latency.value());
  }
  trunks_.emplace_back(bandwidth, latency);
  return it->second;
}

bool RouteResources::is_capacity(Resource r) const {
  const std::uint64_t links = topo_.links().size();
  return r >= 2 * links && r < 2 * links + topo_.nodes().size();
}

bool RouteResources::is_trunk(Resource r) const { return r >= 2 * topo_.links().size() + topo_.nodes().size(); }

std::pair<double, double> RouteResources::offer(Resource r) const {
  const std::uint64_t links = topo_.links().size();
  if (is_trunk(r)) return trunks_.at(r - 2 * links - topo_.nodes().size());
  if (is_capacity(r)) return {topo_.node(static_cast<NodeId>(r - 2 * links)).capacity->value(), 0.0};
  const topology::Link& l = topo_.link(static_cast<topology::LinkId>(r / 2));
  return {(l.bandwidth * l.efficiency).value(), l.latency.value()};
}

struct Simulation::Impl {
  Impl(const topology::Topology& topology, const RouteNeeds& needs, RouteResources& routes, const Shares& shares);

  sg4::Host* host(NodeId id);
  sg4::Link* link(LinkId id, bool forward);
  double share(Resource r) const;
  sg4::Link* capacity_link(NodeId id);
  sg4::Link* trunk_link(Resource r, std::pair<double, double> offer);
  sg4::Link* rate_link(BytesPerSecond rate);
  std::vector<sg4::LinkInRoute> route(RouteResources& routes, RouteNeeds::Pair pair, std::optional<BytesPerSecond> rate);

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
  Shares shares;
  std::vector<std::array<sg4::Link*, 2>> links;   // by link id, backward and forward; null until a route uses it
  std::unordered_map<NodeId, sg4::Link*> capacity_links;
  std::unordered_map<Resource, sg4::Link*> trunk_links;
  std::vector<std::pair<BytesPerSecond, sg4::Link*>> rate_links;
  std::unordered_map<const sg4::Activity*, Pending> pending;   // looked up, never iterated
  std::vector<sg4::ActivityPtr> finished;   // released once the clock has moved past their completion
  std::exception_ptr failure;
};

Simulation::Impl::Impl(const topology::Topology& topology, const RouteNeeds& needs, RouteResources& routes,
                       const Shares& s)
    : topo(topology),
      engine(make_engine()),
      hosts(topology.nodes().size(), nullptr),
      shares(s),
      links(topology.links().size(), {nullptr, nullptr}) {
  zone = (new RouteTable("dtsim"))->get_iface();   // owned by the engine, as create_full_zone's zone is
  zone->get_network_model()->set_lat_factor_cb(route_latency_factor);
  for (const auto& [pair, rate] : needs.pairs()) {
    if (pair.first == pair.second) continue;
    const std::vector<sg4::LinkInRoute> path = route(routes, pair, rate);
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

double Simulation::Impl::share(Resource r) const {
  auto it = shares.find(r);
  return it == shares.end() ? 1.0 : it->second;
}

// One direction of a topology link (a split-duplex link is two such, one per direction).
sg4::Link* Simulation::Impl::link(LinkId id, bool forward) {
  sg4::Link*& l = links.at(id)[forward ? 1 : 0];
  if (l != nullptr) return l;
  const topology::Link& spec = topo.link(id);
  const Resource r = 2 * static_cast<Resource>(id) + (forward ? 1 : 0);
  l = zone->create_link(fmt::format("l{}{}", id, forward ? '+' : '-'),
                        (spec.bandwidth * spec.efficiency).value() / share(r))
          ->set_latency(spec.latency.value())
          ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
  return l;
}

// The node's switching capacity, at line rate, shared by every flow through it in either direction.
sg4::Link* Simulation::Impl::capacity_link(NodeId id) {
  auto [it, added] = capacity_links.emplace(id, nullptr);
  if (added)
    it->second = zone->create_link(fmt::format("cap{}", id),
                                   topo.node(id).capacity->value() / share(2 * topo.links().size() + id))
                     ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
  return it->second;
}

// A trunk (adaptive routing): one shared link of the trunk's summed capacity and its slowest link's latency.
sg4::Link* Simulation::Impl::trunk_link(Resource r, std::pair<double, double> offer) {
  auto [it, added] = trunk_links.emplace(r, nullptr);
  if (added)
    it->second = zone->create_link(fmt::format("trunk{}", r), offer.first / share(r))
                     ->set_latency(offer.second)
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

std::vector<sg4::LinkInRoute> Simulation::Impl::route(RouteResources& routes, RouteNeeds::Pair pair,
                                                      std::optional<BytesPerSecond> rate) {
  std::vector<sg4::LinkInRoute> path;
  const Resource capacities = 2 * static_cast<Resource>(topo.links().size());   // the first capacity resource
  for (Resource r : routes(pair)) {
    if (routes.is_trunk(r))
      path.emplace_back(trunk_link(r, routes.offer(r)));
    else if (routes.is_capacity(r))
      path.emplace_back(capacity_link(static_cast<NodeId>(r - capacities)));
    else
      path.emplace_back(link(static_cast<LinkId>(r / 2), r % 2 == 1));
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

Simulation::Simulation(const topology::Topology& topology, const RouteNeeds& needs, RouteResources& routes,
                       const Shares& shares)
    : impl_(std::make_unique<Impl>(topology, needs, routes, shares)) {}

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
  return "SimGrid 3.32 flow model: CM02, crosstraffic off, TCP-gamma off, max-min with equal sharing penalties; "
         "links at line rate x protocol efficiency, switch capacities at line rate";
}

}  // namespace dtsim::sim::flow
