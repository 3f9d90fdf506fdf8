// `dtsim collective`: one collective over every GPU of a cluster described by flags, timed by the SimGrid
// engine at sizes from --min to --max, printed as nccl-tests prints it.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <sstream>

#include "results/collective_report.hpp"
#include "results/topology_report.hpp"
#include "sim/analytic/analytic_costs.hpp"
#include "sim/cli/collective_options.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/collective.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "topology/builders.hpp"

namespace dtsim::cli {
namespace {

using workloads::CollectiveKind;

}  // namespace


CollectiveResult collective(const CollectiveArgs& a) {
  const auto request = check_collective(a);
  const auto kind = request.kind;
  const auto algorithm = request.algorithm;
  const auto& cluster = request.cluster;
  const auto& points = request.sizes;
  const auto timings = [&] {
    try {
      return drivers::collective_times(cluster, kind, algorithm, points, a.max_channels, std::max(request.root, 0));
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

int collective_command(const CollectiveArgs& a) {
  const auto [run, rows] = collective(a);
  if (a.format == Format::Json) {
    std::cout << results::collective_json(run, rows).dump(2) << "\n";
    return 0;
  }
  std::cout << results::collective_table(run, rows);
  return 0;
}

}  // namespace dtsim::cli
