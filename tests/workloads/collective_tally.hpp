// Collectives of one rank class's ops, counted and summed by kind and group: what the step-graph tests of MoE,
// context parallelism and FSDP compare with their hand-worked counts and bytes.
#pragma once

#include <map>
#include <utility>
#include <variant>

#include "workloads/step_graph.hpp"

namespace dtsim::test {

struct Tally {
  int count = 0;
  double bytes = 0;
};

inline std::map<std::pair<workloads::CollectiveKind, workloads::Group>, Tally> tally_collectives(
    const workloads::RankClass& c) {
  std::map<std::pair<workloads::CollectiveKind, workloads::Group>, Tally> n;
  for (const workloads::Op& op : c.ops)
    if (const auto* k = std::get_if<workloads::CollectiveOp>(&op.body)) {
      Tally& t = n[{k->kind, k->group}];
      ++t.count;
      t.bytes += k->bytes.value();
    }
  return n;
}

}  // namespace dtsim::test
