// `dtsim collective`'s options on the command line (collective_options.hpp).
#include "sim/cli/collective_options.hpp"

#include <fmt/format.h>

#include <map>
#include <string>

namespace dtsim::cli {

CLI::App* add_collective_command(CLI::App& app, CollectiveArgs& coll) {
  static const std::map<std::string, Format> formats = {{"table", Format::Table}, {"json", Format::Json}};
  auto* collective = app.add_subcommand("collective", "nccl-tests-style table of one collective on a cluster");
  collective->add_option("--gpu", coll.gpu, "GPU catalog name")->required();
  collective->add_option("-g,--gpus", coll.gpus, "total GPUs (--nodes x GPUs per node)");
  collective->add_option("--intra", coll.intra, "nvswitch | full-mesh | ring | star | pcie");
  collective->add_option("--intra-link", coll.intra_link, "link catalog name (default: the GPU's own link)");
  collective->add_option("--nodes", coll.nodes, "nodes (servers)");
  collective->add_option("--inter", coll.inter, "none | switch | fat-tree | rail-optimized");
  collective->add_option("--inter-link", coll.inter_link, "NIC link catalog name");
  collective->add_option("--nics-per-node", coll.nics_per_node, "NICs per node (default: one per GPU)");
  collective->add_option("--routing", coll.routing,
                         "single | ecmp | dmodk | adaptive, as cluster.routing (default: the fabric's own)");
  collective->add_flag("--ecmp", coll.ecmp, "the fabric's default routing (the old name of no --routing)");
  collective->add_option("--max-channels", coll.max_channels,
                         "rings across machines, as simulation.max_channels (default 0: one per GPU of a node)");
  collective->add_option("--op", coll.op, "allreduce | allgather | reducescatter | alltoall | broadcast");
  collective->add_option("--algo", coll.algo, "auto | ring | tree | direct | halving-doubling | nvls | hierarchical");
  // nccl-tests' flags are aliases: -b -e -f -g -d -o -r, and -n -w -c, which a script passes and the header
  // prints (a simulated iteration is every iteration; -c 1 is refused: there is no data to check).
  collective->add_option("-b,--min", coll.min, "smallest size: bytes with an optional K, M or G suffix");
  collective->add_option("-e,--max", coll.max, "largest size");
  collective->add_option("-f,--step-factor", coll.step_factor, "size multiplier between rows (default 2)");
  collective->add_option("-d,--datatype", coll.datatype, fmt::format("element type, as nccl-tests names it: {}", drivers::kDatatypeNames));
  collective->add_option("-o,--redop", coll.redop, fmt::format("reduction: {}", drivers::kRedopNames));
  collective->add_option("-r,--root", coll.root, "broadcast's root rank (default 0)");
  collective->add_option("-n,--iters", coll.iters, "iterations, as nccl-tests' header prints them (default 1)");
  collective->add_option("-w,--warmup-iters", coll.warmup_iters, "warm-up iterations, printed likewise (default 0)");
  collective->add_option("-c,--check", coll.check, "0: no check of the results, the only choice (no data moves)");
  collective->add_option("--format", coll.format, "output format")->transform(CLI::CheckedTransformer(formats));
  return collective;
}

}  // namespace dtsim::cli
