// One collective over every GPU of a cluster, timed by the SimGrid engine: what `dtsim collective` prints and the
// claims evaluate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "results/collective_report.hpp"
#include "sim/collectives/collective.hpp"
#include "topology/cluster.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::drivers {

// One collective over every GPU of `cluster`, timed by the SimGrid engine (in a child process) at each size,
// with the algorithm and protocol the lowering chose for it; `max_channels` as simulation.max_channels; a
// broadcast starts from rank `root`.
struct CollectiveTiming {
  Seconds time;
  std::string algorithm;
  std::string protocol;
};
std::vector<CollectiveTiming> collective_times(const topology::ClusterSpec& cluster, workloads::CollectiveKind kind,
                                               sim::Algorithm algorithm, const std::vector<Bytes>& sizes,
                                               int max_channels = 0, int root = 0);

// `dtsim collective`'s options as the user gives them (the program's flags, the Python keywords): the cluster, the
// operation and algorithm, the sizes, and nccl-tests' flags that only its header prints. Errors name the flag.
struct CollectiveOptions {
  std::string gpu;
  int gpus = 8;
  std::string intra = "nvswitch";
  std::string intra_link;            // empty: the GPU's own link
  int nodes = 1;
  std::string inter = "none";
  std::string inter_link;            // empty: the cluster default
  int nics_per_node = 0;             // 0: one per GPU
  std::string routing;               // cluster.routing; empty: the fabric's default
  bool ecmp = false;                 // the fabric's default routing (cluster.ecmp, the old name): as no --routing
  int max_channels = 0;              // rings across machines (simulation.max_channels), 0 = one per local rank
  std::string op = "allreduce";
  std::string algo = "auto";
  std::string min = "8";
  std::string max = "8G";
  double step_factor = 2.0;
  std::string datatype = "float";    // nccl-tests' -d: the element type of the count column
  std::string redop = "sum";         // nccl-tests' -o
  int root = 0;                      // nccl-tests' -r: broadcast's root rank
  int iters = 1;                     // nccl-tests' -n and -w, printed in its header: every iteration of a
  int warmup_iters = 0;              // simulation takes the same time, so the mean is one iteration's
  int check = 0;                     // nccl-tests' -c: 0 only (dtsim moves no data to check)
};

// What --datatype and --redop take, as nccl-tests names them.
inline constexpr std::string_view kDatatypeNames =
    "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2";
inline constexpr std::string_view kRedopNames = "sum, prod, max, min, avg";

// The options checked: InputError naming the flag for any value the command cannot run.
struct CollectiveRequest {
  workloads::CollectiveKind kind;
  sim::Algorithm algorithm;
  topology::ClusterSpec cluster;
  std::vector<Bytes> sizes;
  std::string type;   // nccl-tests' datatype name, and its size
  int type_bytes = 0;
  std::string redop;  // "none" for the collectives that do not reduce
  int root = -1;      // broadcast's root; -1 otherwise
};
CollectiveRequest check_collective(const CollectiveOptions& options);

// "128M" -> 134217728: bytes with an optional K, M or G suffix (powers of 1024, as nccl-tests reads them).
double parse_size(const std::string& text, const std::string& key);

// What `dtsim collective` prints: the run's header and one row a size.
struct CollectiveResult {
  results::CollectiveRun run;
  std::vector<results::CollectiveRow> rows;
};
CollectiveResult collective(const CollectiveOptions& options);

}  // namespace dtsim::drivers
