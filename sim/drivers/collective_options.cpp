// `dtsim collective`'s options checked, and the collective they ask for timed (collective.hpp).
#include "sim/drivers/collective.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <string>

#include "results/topology_report.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "topology/builders.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {
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

topology::ClusterSpec cluster_of(const CollectiveOptions& a) {
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

// nccl-tests' datatype names (its -d flag) and their sizes in bytes.
constexpr std::pair<std::string_view, int> kDatatypes[] = {
    {"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8}, {"half", 2},
    {"float", 4}, {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
constexpr std::string_view kRedops[] = {"sum", "prod", "max", "min", "avg"};

constexpr double kMostCollectiveBytes = 1125899906842624.0;   // 2^50
constexpr std::size_t kMostRows = 200;
// nccl-tests' -n and -w: printed, never run; bounded as an int a script might pass.
constexpr int kMostIters = 1'000'000;

std::vector<Bytes> sizes(const CollectiveOptions& a) {
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

}  // namespace

double parse_size(const std::string& text, const std::string& key) {
  const std::string allowed = "bytes with an optional K, M or G suffix (powers of 1024, either case), e.g. 8, 64K, 128M, 8G";
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError(key, text, "not a size", allowed);
  }
  const std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1024.0;   // either case, as nccl-tests reads them
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw InputError(key, text, "unknown size suffix", allowed);
  if (!(v > 0) || !std::isfinite(v)) throw InputError(key, text, "must be positive", allowed);
  // Whole bytes, and no more than the engine times faithfully: past 2^50 bytes (1 PiB) a SimGrid flow's remaining
  // bytes lose the precision its bandwidth sharing needs (a 1e19-byte all-reduce came out above line rate).
  const double bytes = v * scale;
  if (bytes < 1) throw InputError(key, text, "is less than one byte:", "a size of at least 1 byte");
  if (bytes > kMostCollectiveBytes) throw InputError(key, text, "is more than the engine times faithfully:", "at most 1048576G (2^50 bytes)");
  return bytes;
}

CollectiveRequest check_collective(const CollectiveOptions& a) {
  CollectiveRequest r{parse_op(a.op), parse_named<sim::Algorithm>("--algo", a.algo, sim::parse_algorithm, sim::kAlgorithmNames),
                      cluster_of(a), sizes(a), a.datatype, 0, a.redop, -1};
  for (const auto& [name, bytes] : kDatatypes)
    if (name == a.datatype) r.type_bytes = bytes;
  if (r.type_bytes == 0) throw InputError("--datatype", a.datatype, "unknown datatype", std::string(kDatatypeNames));
  if (std::find(std::begin(kRedops), std::end(kRedops), a.redop) == std::end(kRedops))
    throw InputError("--redop", a.redop, "unknown reduction", std::string(kRedopNames));
  // Sizes as nccl-tests runs them: whole elements, and for the collectives that split the buffer over the ranks a
  // whole number of elements per rank; at least one.
  const bool per_rank = r.kind == CollectiveKind::AllGather || r.kind == CollectiveKind::ReduceScatter ||
                        r.kind == CollectiveKind::AllToAll;
  const double unit = static_cast<double>(r.type_bytes) * (per_rank ? a.gpus : 1);
  std::vector<Bytes> whole;
  for (const Bytes& s : r.sizes) {
    const Bytes rounded(std::max(unit, std::floor(s.value() / unit) * unit));
    if (whole.empty() || whole.back().value() != rounded.value()) whole.push_back(rounded);
  }
  r.sizes = std::move(whole);
  const bool reduces = r.kind == CollectiveKind::AllReduce || r.kind == CollectiveKind::ReduceScatter;
  if (!reduces) r.redop = "none";   // as nccl-tests prints the collectives that do not reduce
  if (r.kind == CollectiveKind::Broadcast) {
    if (a.root < 0 || a.root >= a.gpus)
      throw InputError("--root", std::to_string(a.root), "is not a rank of the collective:",
                       fmt::format("a rank in [0, {}]", a.gpus - 1));
    r.root = a.root;
  }
  if (a.iters < 1 || a.iters > kMostIters)
    throw InputError("--iters", std::to_string(a.iters), "out of range", fmt::format("an integer in [1, {}]", kMostIters));
  if (a.warmup_iters < 0 || a.warmup_iters > kMostIters)
    throw InputError("--warmup-iters", std::to_string(a.warmup_iters), "out of range",
                     fmt::format("an integer in [0, {}]", kMostIters));
  if (a.check != 0)
    throw InputError("--check", std::to_string(a.check), "asks to check the results, but dtsim moves no data:",
                     "0 (#wrong is N/A, as nccl-tests prints it with -c 0)");
  if (a.max_channels < 0 || a.max_channels > sim::kMaxChannels)
    throw InputError("--max-channels", std::to_string(a.max_channels), "out of range",
                     fmt::format("an integer in [0, {}] (0: one ring per GPU of a node)", sim::kMaxChannels));
  return r;
}

CollectiveResult collective(const CollectiveOptions& a) {
  const auto request = check_collective(a);
  const auto kind = request.kind;
  const auto algorithm = request.algorithm;
  const auto& cluster = request.cluster;
  const auto& points = request.sizes;
  const auto timings = [&] {
    try {
      return collective_times(cluster, kind, algorithm, points, a.max_channels, std::max(request.root, 0));
    } catch (const InputError& e) {   // the library names the scenario key; here the user gave a flag
      if (e.key() != "simulation.collective_algo") throw;
      throw InputError("--algo", e.value(), e.reason(), e.allowed());
    }
  }();
  std::vector<results::CollectiveRow> rows;
  for (std::size_t i = 0; i < points.size(); ++i)
    rows.push_back({points[i], timings[i].time, sim::bus_factor(kind, a.gpus), timings[i].algorithm, timings[i].protocol});
  const bool per_rank = kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter ||
                        kind == CollectiveKind::AllToAll;
  const results::CollectiveRun run{
      .title = fmt::format("{} over {} x {}, {}; SimGrid flow model", a.op, a.gpus, cluster.gpu.name,
                           results::cluster_layout(cluster)),
      .gpu = cluster.gpu.name,
      .gpus = a.gpus,
      .gpus_per_node = cluster.gpus_per_node,
      .min_bytes = parse_size(a.min, "--min"),   // as given, as nccl-tests prints -b and -e
      .max_bytes = parse_size(a.max, "--max"),
      .step_factor = a.step_factor,
      .type = request.type,
      .type_bytes = request.type_bytes,
      .redop = request.redop,
      .root = request.root,
      .count_ranks = per_rank ? a.gpus : 1,
      .iters = a.iters,
      .warmup_iters = a.warmup_iters};
  return {run, rows};
}

}  // namespace dtsim::drivers
