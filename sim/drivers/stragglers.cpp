#include "sim/drivers/stragglers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <variant>

#include "sim/drivers/common.hpp"

namespace dtsim::drivers {
namespace {

using workloads::CollectiveOp;
using workloads::ComputeOp;

// Standard normal draws by Box-Muller on the engine's own bits: the same sequence on every standard library.
class Normal {
 public:
  explicit Normal(unsigned long long seed) : engine_(seed) {}
  double uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  double operator()() {
    const double u = uniform(), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }

 private:
  std::mt19937_64 engine_;
};

// The server of `rank`: its machine, or with an NVLink domain of several servers (an NVL72 rack, one machine to the
// network) its compute tray among the domain's.
int server_of(const scenario::Scenario& s, const topology::Topology& topo, int rank) {
  if (s.cluster.server_gpus > 0) return rank / s.cluster.gpus_per_server();
  return topo.node(topo.gpus().at(static_cast<std::size_t>(rank))).machine;
}

}  // namespace

Factors straggler_factors(const scenario::Scenario& s, const topology::Topology& topo, int ranks) {
  Factors out{std::vector<double>(static_cast<std::size_t>(ranks), 1.0), std::vector<double>(static_cast<std::size_t>(ranks), 1.0)};
  std::vector<double>& factor = out.all;
  if (!s.reliability.stragglers) return out;
  const scenario::StragglerSpec& st = *s.reliability.stragglers;
  const auto fail = [&](const char* key, int value, const std::string& allowed) {
    throw InputError(fmt::format("reliability.stragglers.{}", key), std::to_string(value),
                     fmt::format("no such {}", key == std::string("ranks") ? "rank" : "server"), allowed,
                     scenario::locate(s, "reliability.stragglers"));
  };
  int machines = 0;
  for (int r = 0; r < ranks; ++r) machines = std::max(machines, server_of(s, topo, r) + 1);
  for (const auto& [rank, f] : st.ranks) {
    if (rank >= ranks) fail("ranks", rank, fmt::format("a rank from 0 to {}", ranks - 1));
    factor[static_cast<std::size_t>(rank)] *= f;
  }
  for (const auto& [node, f] : st.nodes)
    if (node >= machines) fail("nodes", node, fmt::format("a server from 0 to {}", machines - 1));
  Normal normal(s.reliability.seed.value_or(0));
  std::vector<double> server(static_cast<std::size_t>(machines), 1.0), server_forward(server);
  for (int m = 0; m < machines; ++m) {
    const auto i = static_cast<std::size_t>(m);
    if (const auto it = st.nodes.find(m); it != st.nodes.end()) server[i] *= it->second;
    if (st.slow_share > 0 && normal.uniform() < st.slow_share) (st.slow_forward_only ? server_forward : server)[i] *= st.slow_factor;
  }
  for (int r = 0; r < ranks; ++r) {
    const auto i = static_cast<std::size_t>(r), m = static_cast<std::size_t>(server_of(s, topo, r));
    factor[i] *= server[m];
    out.forward[i] = server_forward[m];
    if (st.spread > 0) factor[i] *= std::exp(st.spread * normal());
  }
  return out;
}

topology::Topology with_slow_nics(const scenario::Scenario& s, topology::Topology topo) {
  if (!s.reliability.stragglers) return topo;
  for (const auto& [name, f] : s.reliability.stragglers->nics) {
    const auto node = topo.find_node(name);
    if (!node || topo.node(*node).kind != topology::NodeKind::Nic) {
      std::string first, last;
      for (const auto& n : topo.nodes())
        if (n.kind == topology::NodeKind::Nic) (first.empty() ? first : last) = n.name;
      throw InputError("reliability.stragglers.nics", name, "no such NIC",
                       first.empty() ? std::string("none: the cluster has no NICs")
                                     : fmt::format("a NIC's name as dtsim topo prints it ({}{})", first,
                                                   last.empty() ? "" : " ... " + last),
                       scenario::locate(s, "reliability.stragglers"));
    }
    for (const topology::LinkId l : topo.incident(*node)) topo.set_bandwidth(l, topo.link(l).bandwidth * (1 / f));
  }
  return topo;
}

namespace {

// Per class, its slowest rank's factor for a backward or optimizer op (`all`) and for a forward op (`all` times
// `forward`, of one rank: the two may be slowest on different ranks).
std::pair<double, double> class_slowest(const workloads::RankClass& c, const Factors& factor) {
  double all = 0, forward = 0;
  for (int r : c.ranks) {
    all = std::max(all, factor.all.at(static_cast<std::size_t>(r)));
    forward = std::max(forward, factor.of_forward(static_cast<std::size_t>(r)));
  }
  return {all, forward};
}

bool is_forward(const ComputeOp& op) {
  return op.pass != workloads::Pass::Backward && op.scope != workloads::Scope::Optimizer;
}

}  // namespace

workloads::StepGraph slowed_by_class(workloads::StepGraph g, const Factors& factor) {
  for (auto& c : g.classes) {
    const auto [all, forward] = class_slowest(c, factor);
    if (all == 1.0 && forward == 1.0) continue;
    for (auto& op : c.ops)
      if (auto* comp = std::get_if<ComputeOp>(&op.body)) {
        const double k = is_forward(*comp) ? forward : all;
        comp->duration = comp->duration * k;
        comp->memory_time = comp->memory_time * k;
      }
  }
  return g;
}

Factors relative_scale(const workloads::StepGraph& g, const Factors& factor) {
  Factors out{std::vector<double>(factor.all.size(), 1.0), std::vector<double>(factor.all.size(), 1.0)};
  for (const auto& c : g.classes) {
    const auto [all, forward] = class_slowest(c, factor);
    for (int r : c.ranks) {
      const auto i = static_cast<std::size_t>(r);
      // Played as all x forward on forward ops: that product is the rank's forward factor over the class's.
      out.all[i] = factor.all[i] / all;
      out.forward[i] = factor.of_forward(i) / forward / out.all[i];
    }
  }
  return out;
}

std::optional<std::map<std::string, double>> waits(const workloads::StepGraph& g, const sim::Timeline& t) {
  if (t.ranks.empty()) return std::nullopt;
  const auto times = [&](int r) -> const std::vector<sim::OpTime>& {
    const sim::RankTimeline& rt = t.ranks.at(static_cast<std::size_t>(r));
    return rt.same_as >= 0 ? t.ranks.at(static_cast<std::size_t>(rt.same_as)).ops : rt.ops;
  };
  // What an op is waited for as: its collective's purpose, `pipeline` for a send or receive, `host` for a host op.
  const auto purpose = [](const workloads::OpBody& body) -> std::string {
    if (const auto* coll = std::get_if<CollectiveOp>(&body)) return std::string(workloads::to_string(coll->purpose));
    if (std::holds_alternative<workloads::HostOp>(body)) return "host";
    if (std::holds_alternative<ComputeOp>(body)) return "compute";
    return "pipeline";
  };
  std::map<std::string, double> out;
  std::size_t ranks = 0;
  for (const auto& c : g.classes) {
    for (int r : c.ranks) {
      ++ranks;
      const auto& mine = times(r);
      Seconds free(0);   // when the compute stream's previous op ended
      std::size_t last = c.ops.size();
      for (std::size_t i = 0; i < c.ops.size(); ++i) {
        if (last == c.ops.size() || mine[i].end > mine[last].end) last = i;
        if (!std::holds_alternative<ComputeOp>(c.ops[i].body)) continue;
        if (mine[i].start > free && !c.ops[i].deps.empty()) {
          const auto latest = *std::ranges::max_element(c.ops[i].deps, {}, [&](std::uint32_t d) { return mine[d].end; });
          out[purpose(c.ops[latest].body)] += (mine[i].start - free).value();
        }
        free = mine[i].end;
      }
      // After its last compute op, the rank waits for what ends its step.
      if (last < c.ops.size() && mine[last].end > free) out[purpose(c.ops[last].body)] += (mine[last].end - free).value();
    }
  }
  for (auto& [name, seconds] : out) seconds /= static_cast<double>(std::max<std::size_t>(ranks, 1));
  return out;
}

double expected_slowest(const scenario::StragglerSpec& st, int gpus, int per_node) {
  // E[max] = lo + integral from lo of (1 - F_max(x)) dx, F_max the product over servers of each server's slowest
  // GPU's distribution: (1 - p) Phi(ln x / s)^g + p Phi(ln(x / f) / s)^g (a step at 1 and f when s = 0).
  const int g = std::max(1, std::min(per_node, gpus));
  const double servers = static_cast<double>(gpus) / g;
  const auto phi = [&](double x) {
    if (st.spread <= 0) return x >= 1 ? 1.0 : 0.0;
    return 0.5 * std::erfc(-std::log(x) / (st.spread * M_SQRT2));
  };
  const auto cdf = [&](double x) {
    const double server = (1 - st.slow_share) * std::pow(phi(x), g) + st.slow_share * std::pow(phi(x / st.slow_factor), g);
    return std::pow(server, servers);
  };
  // In log space (x = e^u, dx = e^u du): as fine at a spread of 1 as of 0.01.
  const double lo = std::log(std::exp(-12 * st.spread) * 0.999), hi = std::log(std::exp(12 * st.spread) * st.slow_factor * 1.001);
  constexpr int kSteps = 20000;
  const double du = (hi - lo) / kSteps;
  double e = std::exp(lo);
  for (int i = 0; i < kSteps; ++i) {
    const double x = std::exp(lo + (i + 0.5) * du);
    e += (1 - cdf(x)) * x * du;
  }
  return e;
}

nlohmann::json stragglers_json(const scenario::Scenario& s, const Factors& factors, Seconds clean,
                               Seconds slowed, const std::optional<std::map<std::string, double>>& clean_waits,
                               const std::optional<std::map<std::string, double>>& slowed_waits) {
  const scenario::StragglerSpec& st = *s.reliability.stragglers;
  // A rank's factor: its forward ops', the most slowed.
  std::vector<double> factor(factors.all.size());
  for (std::size_t r = 0; r < factor.size(); ++r) factor[r] = factors.of_forward(r);
  const auto slowest = std::ranges::max_element(factor);
  nlohmann::json j = {
      {"played", s.simulation.engine == scenario::EngineKind::Simgrid
                     ? "every rank at its own speed"
                     : "each pipeline stage at its slowest rank's speed (the analytic engine plays one rank a stage)"},
      {"clean_step_time_s", clean.value()},
      {"step_time_s", slowed.value()},
      {"slowdown", clean.value() > 0 ? slowed.value() / clean.value() : 1.0},
      {"slowest_rank", slowest - factor.begin()},
      {"slowest_factor", *slowest},
      {"slowed_ranks", std::ranges::count_if(factor, [](double f) { return f > 1; })}};
  if (slowed_waits && clean_waits) {
    nlohmann::json w = nlohmann::json::object();
    std::string most;
    double most_s = 0;
    for (const auto& [purpose, seconds] : *slowed_waits) {
      const auto it = clean_waits->find(purpose);
      const double added = seconds - (it == clean_waits->end() ? 0.0 : it->second);
      w[purpose] = added;
      if (added > most_s) most_s = added, most = purpose;
    }
    j["waits_s"] = w;
    j["waits_most"] = most.empty() ? nlohmann::json(nullptr) : nlohmann::json(most);
  } else {
    j["waits_s"] = nullptr;
    j["waits_most"] = nullptr;
  }
  if (st.spread > 0 || st.slow_share > 0) {
    nlohmann::json scale = nlohmann::json::array();
    const int per_node = std::max(1, s.cluster.gpus_per_server());
    for (int gpus : {8, 64, 512, 4096, 16384, 131072})
      scale.push_back({{"gpus", gpus}, {"slowest_factor", expected_slowest(st, gpus, per_node)}});
    j["expected_slowest"] = scale;
  }
  return j;
}

}  // namespace dtsim::drivers
