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

// `layers_only`: the layers' collectives (not the embedding's, the output layer's or the step's).
inline std::map<std::pair<workloads::CollectiveKind, workloads::Group>, Tally> tally_collectives(
    const workloads::RankClass& c, bool layers_only = false) {
  std::map<std::pair<workloads::CollectiveKind, workloads::Group>, Tally> n;
  for (const workloads::Op& op : c.ops)
    if (const auto* k = std::get_if<workloads::CollectiveOp>(&op.body); k && (!layers_only || k->layer >= 0)) {
      Tally& t = n[{k->kind, k->group}];
      ++t.count;
      t.bytes += k->bytes.value();
    }
  return n;
}

}  // namespace dtsim::test
