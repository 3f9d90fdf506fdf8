// `dtsim collective`: one collective over every GPU of a cluster described by flags, timed by the SimGrid
// engine at sizes from --min to --max (drivers::collective), printed as nccl-tests prints it.
#include <iostream>

#include "results/collective_report.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/collective.hpp"

namespace dtsim::cli {

int collective_command(const CollectiveArgs& a) {
  const auto [run, rows] = drivers::collective(a);
  if (a.format == Format::Json) {
    std::cout << results::collective_json(run, rows).dump(2) << "\n";
    return 0;
  }
  std::cout << results::collective_table(run, rows);
  return 0;
}

}  // namespace dtsim::cli
