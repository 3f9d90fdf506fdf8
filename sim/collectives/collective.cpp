// lower(): resolve `auto`, check that the algorithm can run on the group, pick its builder from the table,
// and put the transfers in their canonical order. The algorithms themselves are in collective_algorithms.cpp, a
// lowering's steps written out or aggregated in collective_steps.cpp.
#include "sim/collectives/collective.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "sim/collectives/collective_schedule.hpp"
#include "topology/error.hpp"
#include "topology/name_table.hpp"

namespace dtsim::sim {
namespace {

using detail::Builder;
using detail::Request;
using workloads::CollectiveKind;

constexpr std::string_view kKey = "simulation.collective_algo";

constexpr topology::NameTable<Protocol, 4> kProtocols{
    {{Protocol::Auto, "auto"}, {Protocol::LL, "ll"}, {Protocol::LL128, "ll128"}, {Protocol::Simple, "simple"}}};

constexpr topology::NameTable<Algorithm, 7> kAlgorithms{{{Algorithm::Auto, "auto"},
                                                         {Algorithm::Ring, "ring"},
                                                         {Algorithm::Tree, "tree"},
                                                         {Algorithm::Direct, "direct"},
                                                         {Algorithm::HalvingDoubling, "halving-doubling"},
                                                         {Algorithm::Nvls, "nvls"},
                                                         {Algorithm::Hierarchical, "hierarchical"}}};

// Per operation, the builder that runs it; nullptr: the algorithm does not implement the operation.
struct Ops {
  Builder all_reduce = nullptr;
  Builder all_gather = nullptr;
  Builder reduce_scatter = nullptr;
  Builder all_to_all = nullptr;
  Builder broadcast = nullptr;

  [[nodiscard]] Builder of(CollectiveKind kind) const {
    switch (kind) {
      case CollectiveKind::AllReduce: return all_reduce;
      case CollectiveKind::AllGather: return all_gather;
      case CollectiveKind::ReduceScatter: return reduce_scatter;
      case CollectiveKind::AllToAll: return all_to_all;
      case CollectiveKind::Broadcast: return broadcast;
    }
    return nullptr;
  }
};

// Throws InputError when the group cannot run the algorithm (the hardware or the group's shape).
using Check = void (*)(const Request&, CollectiveKind);

// Whose latencies an algorithm pays: NCCL's ring, tree or NVLS figures.
enum class Family { RingLike, Tree, Nvls };

// One algorithm: its latency family, what it needs of the group, and its builder per operation.
struct Row {
  Algorithm algorithm;
  Family family;
  Check check;
  Ops ops;
};

void check_nvls(const Request& r, CollectiveKind kind);
void check_power_of_two(const Request& r, CollectiveKind kind);
void check_equal_machines(const Request& r, CollectiveKind kind);

template <Builder RS, Builder AG>
constexpr Builder kAllReduce = detail::reduce_scatter_then_all_gather<RS, AG>;

// The variants, one row each.
constexpr std::array<Row, 6> kRows{{
    {Algorithm::Ring, Family::RingLike, nullptr,
     {.all_reduce = kAllReduce<detail::ring_reduce_scatter, detail::ring_all_gather>,
      .all_gather = detail::ring_all_gather,
      .reduce_scatter = detail::ring_reduce_scatter,
      .broadcast = detail::chain_broadcast}},
    {Algorithm::Tree, Family::Tree, nullptr,
     {.all_reduce = detail::tree_all_reduce, .broadcast = detail::tree_broadcast}},
    {Algorithm::Direct, Family::RingLike, nullptr,
     {.all_reduce = kAllReduce<detail::direct_exchange, detail::direct_exchange>,
      .all_gather = detail::direct_exchange,
      .reduce_scatter = detail::direct_exchange,
      .all_to_all = detail::direct_exchange,
      .broadcast = detail::direct_broadcast}},
    {Algorithm::HalvingDoubling, Family::RingLike, check_power_of_two,
     {.all_reduce = kAllReduce<detail::halving_reduce_scatter, detail::doubling_all_gather>,
      .all_gather = detail::doubling_all_gather,
      .reduce_scatter = detail::halving_reduce_scatter}},
    {Algorithm::Nvls, Family::Nvls, check_nvls,
     {.all_reduce = detail::nvls_all_reduce}},
    {Algorithm::Hierarchical, Family::RingLike, check_equal_machines,
     {.all_reduce = kAllReduce<detail::hierarchical_reduce_scatter, detail::hierarchical_all_gather>,
      .all_gather = detail::hierarchical_all_gather,
      .reduce_scatter = detail::hierarchical_reduce_scatter}},
}};

const Row& row_of(Algorithm a) {
  const auto* it = std::ranges::find(kRows, a, &Row::algorithm);
  DTSIM_ASSERT(it != kRows.end(), "every algorithm but auto has a row");
  return *it;
}

// What the user may choose instead: auto and every other algorithm that implements `kind`.
std::string alternatives(CollectiveKind kind, Algorithm except) {
  std::string out(to_string(Algorithm::Auto));
  for (const Row& row : kRows)
    if (row.algorithm != except && row.ops.of(kind) != nullptr) out += fmt::format(", {}", to_string(row.algorithm));
  return out;
}

[[noreturn]] void refuse(Algorithm a, CollectiveKind kind, const std::string& reason) {
  throw InputError(std::string(kKey), std::string(to_string(a)), reason, alternatives(kind, a));
}

void check_nvls(const Request& r, CollectiveKind kind) {
  if (!r.layout->nvls)
    refuse(Algorithm::Nvls, kind, "this group's machines have no NVSwitch that reduces in the switch (NVLink "
                                  "SHARP), as needed by");
  const auto machines = detail::ranks_by_machine(r).size();
  if (machines > 1)
    refuse(Algorithm::Nvls, kind, fmt::format("this group spans {} machines; NVLS across machines (NVLS+tree) is "
                                              "not modelled by", machines));
}

void check_power_of_two(const Request& r, CollectiveKind kind) {
  const int n = r.size();
  if ((n & (n - 1)) != 0)
    refuse(Algorithm::HalvingDoubling, kind,
           fmt::format("a group of {} ranks is not a power of two, as needed by", n));
}

void check_equal_machines(const Request& r, CollectiveKind kind) {
  std::set<std::size_t> sizes;
  std::vector<std::size_t> listed;
  for (const detail::Ranks& m : detail::ranks_by_machine(r)) {
    sizes.insert(m.size());
    listed.push_back(m.size());
  }
  if (sizes.size() > 1)
    refuse(Algorithm::Hierarchical, kind,
           fmt::format("this group's machines hold unequal numbers of its ranks ({}); equal numbers are needed by",
                       fmt::join(listed, ", ")));
}

bool spans_machines(const GroupLayout& layout) {
  return std::ranges::any_of(layout.machine, [&](int m) { return m != layout.machine.front(); });
}

// Below this size a tree beats a ring across the group's machines: the ring's latency grows with the machine
// count (2(m-1) steps), the tree's with its logarithm, so the crossover (tree_below at 1,024 machines) scales
// with m - 1.
Bytes tree_threshold(const GroupLayout& layout, const CollectiveTuning& t) {
  std::vector<int> machines = layout.machine;
  std::ranges::sort(machines);
  const auto distinct = std::unique(machines.begin(), machines.end()) - machines.begin();
  return t.tree_below * (static_cast<double>(distinct - 1) / 1023.0);
}

// What NCCL would pick (src/graph/tuning.cc picks by its cost model; this is the outcome of it on the systems
// in nccl.md): NVLS inside an NVLS machine, tree for small and medium all-reduces across machines, rings
// otherwise; all-to-all is point-to-point (direct) in NCCL.
Algorithm resolve_auto(CollectiveKind kind, Bytes bytes, const GroupLayout& layout, const CollectiveTuning& t) {
  if (kind == CollectiveKind::AllToAll) return Algorithm::Direct;
  if (layout.direct_links && kind != CollectiveKind::Broadcast) return Algorithm::Direct;
  if (kind != CollectiveKind::AllReduce) return Algorithm::Ring;
  if (spans_machines(layout)) return bytes < tree_threshold(layout, t) ? Algorithm::Tree : Algorithm::Ring;
  return layout.nvls ? Algorithm::Nvls : Algorithm::Ring;
}

// A lowering inside one switched machine, timed contention-free over its switch path (GroupLayout): the
// collective's latency, then per step its step latency, the path's latency (half of it to or from the switch)
// and the most wire bytes one rank sends or receives in the step at the path's rate (or a transfer's cap).
// The engines' lowered_time on the same machine, up to transfers of one endpoint overlapping across steps.
Seconds switched_time(const Lowered& l, const GroupLayout& layout) {
  std::map<std::pair<int, int>, Seconds> busy;   // (rank, 0 sending / 1 receiving) -> time on its links
  Seconds total = l.latency, hop(0);
  int step = 0;
  const auto close_step = [&] {
    Seconds longest(0);
    for (const auto& [end, t] : busy) longest = std::max(longest, t);
    total += l.step_latency + hop + longest;
    busy.clear();
    hop = Seconds(0);
  };
  for (const Transfer& t : l.transfers) {
    if (t.step != step) {
      close_step();
      step = t.step;
    }
    const bool via_switch = t.src == kSwitch || t.dst == kSwitch;
    hop = std::max(hop, via_switch ? 0.5 * layout.switch_path_latency : layout.switch_path_latency);
    const BytesPerSecond rate = t.rate ? std::min(layout.switch_path_rate, *t.rate) : layout.switch_path_rate;
    // The switch reaches each rank through that rank's own port: only the ranks' links are shared.
    if (t.src != kSwitch) busy[{t.src, 0}] += t.bytes / rate;
    if (t.dst != kSwitch) busy[{t.dst, 1}] += t.bytes / rate;
  }
  if (l.transfers.empty()) return total;
  const Seconds before_last = total;
  close_step();
  // A periodic lowering lists its first step only; the others repeat it.
  if (l.periodic) total = before_last + (total - before_last) * static_cast<double>(l.steps);
  return total;
}

// What one collective costs under one protocol.
struct Costs {
  Seconds latency;        // once
  Seconds step_latency;   // per step, on top of the links' hop latency
  double efficiency;      // payload per byte on the wire
};

// nullopt: the family does not run the protocol (NVLS runs Simple only, and NCCL charges it no per-hop term).
std::optional<Costs> costs_of(Family family, Protocol p, const CollectiveTuning& t) {
  const ProtocolCosts& c = t.of(p);
  switch (family) {
    case Family::RingLike: return Costs{c.ring_latency, c.step_latency, c.efficiency};
    case Family::Tree: return Costs{c.tree_latency, c.step_latency, c.efficiency};
    case Family::Nvls:
      if (p != Protocol::Simple) return std::nullopt;
      return Costs{t.nvls_latency, Seconds(0), c.efficiency};
  }
  return std::nullopt;
}

// The most payload any rank sends or receives (the switch of an NVLS machine is not a rank).
Bytes busiest_rank(const detail::Schedule& s, int n) {
  std::vector<Bytes> sent(static_cast<std::size_t>(n)), received(static_cast<std::size_t>(n));
  for (const Transfer& t : s.transfers) {
    if (t.src != kSwitch) sent[static_cast<std::size_t>(t.src)] += t.bytes;
    if (t.dst != kSwitch) received[static_cast<std::size_t>(t.dst)] += t.bytes;
  }
  Bytes most(0);
  for (std::size_t r = 0; r < sent.size(); ++r) most = std::max({most, sent[r], received[r]});
  return most;
}

// Auto's estimate (collective.hpp): base + steps x step latency + busiest rank's wire bytes / nominal bandwidth.
Seconds estimate(const Costs& c, int steps, Bytes busiest, const CollectiveTuning& t) {
  return c.latency + steps * c.step_latency + busiest / (c.efficiency * t.choice_bandwidth);
}

Protocol resolve_protocol(Protocol asked, Family family, int steps, Bytes busiest, const CollectiveTuning& t) {
  if (asked != Protocol::Auto) return asked;
  std::optional<Protocol> best;
  Seconds best_time;
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    const auto c = costs_of(family, p, t);
    if (!c) continue;
    const Seconds time = estimate(*c, steps, busiest, t);
    if (best && !(time < best_time)) continue;
    best = p;
    best_time = time;
  }
  DTSIM_ASSERT(best.has_value(), "every algorithm runs Simple");
  return *best;
}

[[noreturn]] void refuse_protocol(Protocol p, Algorithm a) {
  throw InputError("protocol", std::string(to_string(p)),
                   fmt::format("the {} algorithm does not run this protocol", to_string(a)), "auto, simple");
}

auto order_key(const Transfer& t) { return std::tie(t.step, t.src, t.dst, t.machine); }

// Sorted by step, src, dst; transfers with the same endpoints in the same step (the two trees of a double
// binary tree can meet on one edge) merge into one: they start together and share one path, so one flow of
// their summed bytes ends when the later of the two would.
std::vector<Transfer> canonical(std::vector<Transfer> transfers) {
  const auto before = [](const Transfer& a, const Transfer& b) { return order_key(a) < order_key(b); };
  if (!std::ranges::is_sorted(transfers, before)) std::ranges::stable_sort(transfers, before);   // rings come sorted
  std::size_t kept = 0;   // merged in place
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    Transfer& last = transfers[kept > 0 ? kept - 1 : 0];
    if (kept > 0 && order_key(last) == order_key(transfers[i]) && last.rate == transfers[i].rate) {
      last.bytes += transfers[i].bytes;
      continue;
    }
    if (kept != i) transfers[kept] = transfers[i];
    ++kept;
  }
  transfers.resize(kept);
  return transfers;
}

// A step without transfers would cut the step rule's chain of waits: the next step would start at once.
void assert_steps_contiguous(const std::vector<Transfer>& transfers, int steps) {
  int next = 0;
  for (const Transfer& t : transfers)
    if (t.step == next) ++next;
  DTSIM_ASSERT(next == steps, "a collective's steps are numbered 0..steps-1 without gaps");
}

detail::Ranks all_ranks(int n) {
  detail::Ranks ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

}  // namespace

std::string_view to_string(Algorithm a) { return topology::name_of(kAlgorithms, a); }
std::optional<Algorithm> parse_algorithm(std::string_view name) { return topology::value_of(kAlgorithms, name); }
std::string_view to_string(Protocol p) { return topology::name_of(kProtocols, p); }
std::optional<Protocol> parse_protocol(std::string_view name) { return topology::value_of(kProtocols, name); }

const ProtocolCosts& CollectiveTuning::of(Protocol p) const {
  switch (p) {
    case Protocol::LL: return ll;
    case Protocol::LL128: return ll128;
    case Protocol::Simple: return simple;
    case Protocol::Auto: break;
  }
  DTSIM_ASSERT(false, "auto is resolved before its costs are looked up");
  return simple;
}

Lowered lower(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout, Algorithm algorithm,
              const CollectiveTuning& tuning) {
  return lower(kind, bytes, layout, algorithm, Protocol::Auto, tuning);
}

Lowered lower(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout, Algorithm algorithm,
              Protocol protocol, const CollectiveTuning& tuning) {
  return expand(lower_periodic(kind, bytes, layout, algorithm, protocol, tuning));
}

Lowered lower_periodic(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout, Algorithm algorithm,
                       Protocol protocol, const CollectiveTuning& tuning) {
  DTSIM_ASSERT(!layout.machine.empty(), "a collective needs at least one rank");
  DTSIM_ASSERT(bytes >= Bytes(0), "a collective moves a non-negative number of bytes");
  DTSIM_ASSERT(layout.order.empty() || layout.order.size() == layout.machine.size(), "a walk order covers the group");
  const Algorithm resolved = algorithm == Algorithm::Auto ? resolve_auto(kind, bytes, layout, tuning) : algorithm;
  if (algorithm == Algorithm::Auto && resolved == Algorithm::Nvls) {
    // NCCL's tuner weighs every algorithm and protocol (collective.hpp): a ring too, under each protocol asked.
    if (protocol != Protocol::Auto && protocol != Protocol::Simple)   // NVLS runs Simple only
      return lower_periodic(kind, bytes, layout, Algorithm::Ring, protocol, tuning);
    Lowered best = lower_periodic(kind, bytes, layout, resolved, protocol, tuning);
    if (layout.switch_path_rate.value() <= 0.0) return best;
    Seconds best_time = switched_time(best, layout);
    const auto protocols = protocol == Protocol::Auto ? std::vector{Protocol::LL, Protocol::LL128, Protocol::Simple}
                                                      : std::vector{protocol};
    for (Protocol p : protocols) {
      Lowered ring = lower_periodic(kind, bytes, layout, Algorithm::Ring, p, tuning);
      const Seconds t = switched_time(ring, layout);
      if (!(t < best_time)) continue;   // ties go to NVLS, then to the lower-latency protocol
      best = std::move(ring);
      best_time = t;
    }
    return best;
  }
  const Row& row = row_of(resolved);
  const Builder build = row.ops.of(kind);
  if (build == nullptr) refuse(resolved, kind, fmt::format("{} is not implemented by", to_string(kind)));
  const Request request{layout.order.empty() ? all_ranks(static_cast<int>(layout.machine.size())) : layout.order, bytes,
                        &layout, &tuning};
  if (row.check != nullptr) row.check(request, kind);
  if (protocol != Protocol::Auto && !costs_of(row.family, protocol, tuning)) refuse_protocol(protocol, resolved);

  Lowered out;
  out.algorithm = resolved;
  const int n = request.size();
  // A ring's reduce-scatter and all-gather repeat one step n-1 times, its all-reduce 2(n-1) times: one is built.
  const bool periodic = resolved == Algorithm::Ring && kind != CollectiveKind::Broadcast && n > 1;
  detail::Schedule s;
  int repeats = 1;
  if (periodic) {
    s = detail::ring_step(request);
    repeats = (kind == CollectiveKind::AllReduce ? 2 : 1) * (n - 1);
  } else if (n > 1) {
    s = build(request);
  }
  out.protocol = resolve_protocol(protocol, row.family, s.steps * repeats, busiest_rank(s, n) * repeats, tuning);
  if (n == 1) return out;   // a group of one moves nothing and waits for no one
  const Costs costs = *costs_of(row.family, out.protocol, tuning);
  for (Transfer& t : s.transfers) t.bytes = t.bytes / costs.efficiency;   // the protocol's flags and padding
  out.transfers = canonical(std::move(s.transfers));
  assert_steps_contiguous(out.transfers, s.steps);
  out.steps = s.steps * repeats;
  out.periodic = periodic;
  out.latency = costs.latency;
  out.step_latency = costs.step_latency;
  return out;
}

double bus_factor(workloads::CollectiveKind kind, int n) {
  DTSIM_ASSERT(n >= 1, "a collective needs at least one rank");
  const double ranks = n;
  switch (kind) {
    case CollectiveKind::AllReduce: return 2.0 * (ranks - 1.0) / ranks;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll: return (ranks - 1.0) / ranks;
    case CollectiveKind::Broadcast: return 1.0;
  }
  DTSIM_ASSERT(false, "unknown collective kind");
  return 0.0;
}

}  // namespace dtsim::sim
