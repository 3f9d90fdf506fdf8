// What a cluster is made of, counted and priced: GPUs, servers, NICs, switches by tier, cables and transceivers.
//
// The switch fabric is built as a physical folded Clos of the catalog switch for the NIC's family and speed, of
// radix R (ports at the NIC's speed): a leaf gives d = floor(R x o / (o + 1)) ports to NICs and ceil(d / o) to
// the tier above at oversubscription o : 1; a middle tier splits R / 2 down, R / 2 up; the top tier points all R
// ports down. The fewest tiers whose hosts d x (R/2)^(t-2) x R reach the NICs; each tier has as many switches as
// the ports coming up from below need. For 1,024 NICs on 64-port switches: 32 leaves and 16 spines at 1:1, 25
// leaves (42 NICs each, 21 up) and 9 spines at 2:1. This is the build a buyer orders; the simulated graph
// (builders.hpp) groups NICs by `cluster.fabric.leaf_ports` for contention, which need not match it.
//
// Cables: a NIC to its leaf is passive copper when the leaf sits in the NICs' rack (a leaf's NICs come from at
// most PowerModelSpec::nodes_per_rack servers, and the fabric is not rail-optimized: a rail leaf spans racks),
// otherwise a fibre with a transceiver at each end; every link between switch tiers is optical.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/catalog.hpp"
#include "topology/cluster.hpp"
#include "topology/topology.hpp"

namespace dtsim::topology {

struct BomItem {
  PartKind kind = PartKind::Gpu;
  std::string name;                 // catalog part (or GPU) name
  std::string role;                 // "leaf", "spine", "NIC to leaf", ... what the items are for
  long long count = 0;
  std::optional<Dollars> unit;      // none: the catalog has no such part (the item is counted, not priced)
  Watts unit_power;                 // in service (servers: 0, their power follows the GPUs')
  std::string note;
  [[nodiscard]] std::optional<Dollars> total() const {
    if (!unit) return std::nullopt;
    return Dollars(unit->value() * static_cast<double>(count));
  }
};

struct BillOfMaterials {
  std::vector<BomItem> items;
  int switch_tiers = 0;             // 0: no switch fabric between servers
  std::vector<std::string> notes;   // what was assumed
  // Sum of the priced items, and whether every item was priced.
  [[nodiscard]] Dollars total() const;
  [[nodiscard]] bool complete() const;
  // Switches, NICs and optics in service (GPUs and servers apart: results/energy.hpp counts those).
  [[nodiscard]] Watts network_power() const;
  [[nodiscard]] long long count(PartKind kind, std::string_view role = {}) const;
};

// Switch counts per tier of a folded Clos for `hosts` ports of radix-`radix` switches at `oversubscription` : 1
// at the leaf (the header's rule). Element 0: leaves. `leaf_ports` > 0 caps the host ports of a leaf (the simulated
// fabric's cluster.fabric.leaf_ports), else a leaf gives the hosts all the ports its oversubscription allows. Hosts
// that fit on one leaf get that leaf alone.
struct ClosTier {
  long long switches = 0;
  int down = 0;   // ports per switch towards the hosts
  int up = 0;     // ports per switch towards the next tier (0 at the top)
};
std::vector<ClosTier> folded_clos(long long hosts, int radix, double oversubscription, int leaf_ports = 0);

// The bill of `spec` (resolved) built as `topo`: builder clusters from their spec, user graphs from the graph
// (GPUs and switches counted; the switches unpriced).
BillOfMaterials bill_of_materials(const ClusterSpec& spec, const Topology& topo);

}  // namespace dtsim::topology
