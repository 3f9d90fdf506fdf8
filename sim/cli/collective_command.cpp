// `dtsim collective`: one collective over every GPU of a cluster described by flags, timed by the SimGrid
// engine at sizes from --min to --max, printed as nccl-tests prints it.
#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <sstream>

#include "results/collective_report.hpp"
#include "results/topology_report.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using workloads::CollectiveKind;

CollectiveKind parse_op(const std::string& op) {
  if (op == "allreduce") return CollectiveKind::AllReduce;
  if (op == "allgather") return CollectiveKind::AllGather;
  if (op == "reducescatter") return CollectiveKind::ReduceScatter;
  if (op == "alltoall") return CollectiveKind::AllToAll;
  if (op == "broadcast") return CollectiveKind::Broadcast;
  throw InputError("--op", op, "unknown collective", "allreduce, allgather, reducescatter, alltoall, broadcast");
}

template <class E, class Parse>
E parse_named(const std::string& key, const std::string& value, Parse parse, std::string_view allowed) {
  auto v = parse(value);
  if (!v) throw InputError(key, value, "unknown value", std::string(allowed));
  return *v;
}

topology::ClusterSpec cluster_of(const CollectiveArgs& a) {
  if (a.gpus < 2)
    throw InputError("--gpus", std::to_string(a.gpus), "is too few for a collective:", "at least 2 GPUs");
  if (a.gpus < 1 || a.nodes < 1 || a.gpus % a.nodes != 0)
    throw InputError("--gpus", std::to_string(a.gpus), fmt::format("must be a positive multiple of --nodes {}:", a.nodes),
                     "a total GPU count divisible by the node count");
  const auto intra = parse_named<topology::IntraKind>("--intra", a.intra, topology::parse_intra_kind, topology::kIntraNames);
  auto c = topology::default_cluster(topology::find_gpu(a.gpu, "--gpu").name, intra, a.nodes, a.gpus / a.nodes);
  if (!a.intra_link.empty()) c.intra_link = topology::find_link(a.intra_link, "--intra-link");
  c.inter = parse_named<topology::InterKind>("--inter", a.inter, topology::parse_inter_kind, topology::kInterNames);
  if (!a.inter_link.empty()) c.inter_link = topology::find_link(a.inter_link, "--inter-link");
  if (a.nics_per_node > 0) c.nics_per_node = a.nics_per_node;
  if (!a.routing.empty())
    c.routing = parse_named<topology::Routing>("--routing", a.routing, topology::parse_routing, topology::kRoutingNames);
  return c;
}

constexpr double kMostCollectiveBytes = 1125899906842624.0;   // 2^50
constexpr std::size_t kMostRows = 200;

std::vector<Bytes> sizes(const CollectiveArgs& a) {
  const double lo = parse_size(a.min, "--min"), hi = parse_size(a.max, "--max");
  if (hi < lo) throw InputError("--max", a.max, fmt::format("is below --min {}:", a.min), "a size >= --min");
  if (!(a.step_factor > 1.0)) throw InputError("--step-factor", fmt::format("{:g}", a.step_factor), "must exceed 1:", "a factor > 1");
  const double rows = std::floor(std::log(hi / lo) / std::log(a.step_factor) + 1e-9) + 1;
  if (rows > static_cast<double>(kMostRows))
    throw InputError("--step-factor", fmt::format("{:g}", a.step_factor),
                     fmt::format("gives {:.0f} sizes from --min {} to --max {}, more than dtsim prints:", rows, a.min, a.max),
                     fmt::format("a factor that gives at most {} sizes", kMostRows));
  std::vector<Bytes> out;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= a.step_factor) out.push_back(Bytes(std::round(s)));
  return out;
}

std::string serialize(const std::vector<Seconds>& times) {
  std::string out;
  for (auto t : times) out += fmt::format("{:.17g}\n", t.value());
  return out;
}

std::vector<Seconds> deserialize(const std::string& text) {
  std::vector<Seconds> out;
  std::istringstream in(text);
  for (double v; in >> v;) out.emplace_back(v);
  return out;
}

}  // namespace

double parse_size(const std::string& text, const std::string& key) {
  const std::string allowed = "bytes with an optional K, M or G suffix (powers of 1024), e.g. 8, 64K, 128M, 8G";
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError(key, text, "not a size", allowed);
  }
  const std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K") scale = 1024.0;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw InputError(key, text, "unknown size suffix", allowed);
  if (!(v > 0) || !std::isfinite(v)) throw InputError(key, text, "must be positive", allowed);
  // Whole bytes, and no more than the engine times faithfully: past 2^50 bytes (1 PiB) a SimGrid flow's remaining
  // bytes lose the precision its bandwidth sharing needs (a 1e19-byte all-reduce came out above line rate).
  const double bytes = v * scale;
  if (bytes < 1) throw InputError(key, text, "is less than one byte:", "a size of at least 1 byte");
  if (bytes > kMostCollectiveBytes) throw InputError(key, text, "is more than the engine times faithfully:", "at most 1048576G (2^50 bytes)");
  return bytes;
}

std::vector<CollectiveTiming> collective_times(const topology::ClusterSpec& cluster, CollectiveKind kind,
                                               sim::Algorithm algorithm, const std::vector<Bytes>& points,
                                               int max_channels) {
  const auto built = topology::build_cluster(cluster);
  const bool nvls = cluster.intra == topology::IntraKind::NvSwitch && cluster.intra_link.switch_reduction;
  std::vector<int> ranks(static_cast<std::size_t>(cluster.gpus()));
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
  const auto layout = sim::group_layout(ranks, built.topology, nvls);
  const sim::CollectiveTuning tuning = sim::collective_tuning(max_channels);
  std::vector<CollectiveTiming> out;
  for (const auto& s : points) {   // lowering first: an algorithm that cannot run here fails before any simulation
    const sim::Lowered l = sim::lower_periodic(kind, s, layout, algorithm, sim::Protocol::Auto, tuning);
    out.push_back({Seconds(0), std::string(sim::to_string(l.algorithm)), std::string(sim::to_string(l.protocol))});
  }
  const auto times = deserialize(sim::run_isolated(
      [&] { return serialize(sim::time_collectives(kind, points, ranks, built.topology, layout, algorithm,
                                                       cluster.effective_routing(), true, max_channels)); }));
  for (std::size_t i = 0; i < out.size(); ++i) out[i].time = times.at(i);
  return out;
}

int collective_command(const CollectiveArgs& a) {
  const auto kind = parse_op(a.op);
  const auto algorithm = parse_named<sim::Algorithm>("--algo", a.algo, sim::parse_algorithm, sim::kAlgorithmNames);
  const auto cluster = cluster_of(a);
  const auto points = sizes(a);
  if (a.max_channels < 0 || a.max_channels > sim::kMaxChannels)
    throw InputError("--max-channels", std::to_string(a.max_channels), "out of range",
                     fmt::format("an integer in [0, {}] (0: one ring per GPU of a node)", sim::kMaxChannels));
  const auto timings = [&] {
    try {
      return collective_times(cluster, kind, algorithm, points, a.max_channels);
    } catch (const InputError& e) {   // the library names the scenario key; here the user gave a flag
      if (e.key() != "simulation.collective_algo") throw;
      throw InputError("--algo", e.value(), e.reason(), e.allowed());
    }
  }();
  std::vector<results::CollectiveRow> rows;
  for (std::size_t i = 0; i < points.size(); ++i)
    rows.push_back({points[i], timings[i].time, sim::bus_factor(kind, a.gpus), timings[i].algorithm, timings[i].protocol});
  if (a.format == Format::Json) {
    std::cout << results::collective_json(rows).dump(2) << "\n";
    return 0;
  }
  std::cout << results::collective_table(fmt::format("{} over {} x {}, {}; SimGrid flow model", a.op, a.gpus,
                                                     cluster.gpu.name, results::cluster_layout(cluster)), rows);
  return 0;
}

}  // namespace dtsim::cli
