#include "topology/bill_of_materials.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "topology/error.hpp"

namespace dtsim::topology {
namespace {

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

std::string speed_label(BytesPerSecond speed) { return fmt::format("{:g}G", to_gigabits_per_second(speed)); }

BomItem priced(const PartSpec* part, PartKind kind, const std::string& role, long long count, const LinkSpec& link) {
  if (part != nullptr) return {kind, part->name, role, count, part->price, part->power, {}};
  return {kind, fmt::format("{} {} {}", to_string(link.family), speed_label(link.bandwidth), to_string(kind)), role,
          count, std::nullopt, Watts(0), "no catalog part of this family and speed: counted, not priced"};
}

bool sxm_server(const ClusterSpec& spec) {
  return spec.intra == IntraKind::NvSwitch || spec.intra == IntraKind::FullMesh;
}

// The links of a fabric: `nic_links` from NICs to leaves (copper or optical), `switch_links` between tiers.
void add_links(BillOfMaterials& bom, const LinkSpec& link, long long nic_links, bool nic_copper, long long switch_links) {
  const auto* dac = find_part(PartKind::Cable, link.family, link.bandwidth);
  const auto* optic = find_part(PartKind::Transceiver, link.family, link.bandwidth);
  const auto& fibre = find_part("fiber-patch");
  const long long optical = switch_links + (nic_copper ? 0 : nic_links);
  if (nic_copper && nic_links > 0) bom.items.push_back(priced(dac, PartKind::Cable, "NIC to leaf, in the rack", nic_links, link));
  if (optical > 0) {
    bom.items.push_back({PartKind::Cable, fibre.name, nic_copper ? "between switch tiers" : "NIC to leaf and between tiers",
                         optical, fibre.price, fibre.power, {}});
    bom.items.push_back(priced(optic, PartKind::Transceiver, "one at each end of an optical link", 2 * optical, link));
  }
}

}  // namespace

std::vector<ClosTier> folded_clos(long long hosts, int radix, double oversubscription, int leaf_ports) {
  DTSIM_ASSERT(radix >= 2 && oversubscription >= 1.0 && hosts >= 1, "a switch fabric to size");
  const int most_down = static_cast<int>(std::floor(radix * oversubscription / (oversubscription + 1.0)));
  const int leaf_down = leaf_ports > 0 ? std::min(leaf_ports, most_down) : most_down;
  if (hosts <= leaf_down) return {{1, leaf_down, 0}};
  const int leaf_up = static_cast<int>(std::ceil(leaf_down / oversubscription));
  const int half = radix / 2;
  // The fewest tiers whose tree reaches every host.
  int tiers = 2;
  for (double reach = static_cast<double>(leaf_down) * radix; reach < static_cast<double>(hosts); reach *= half) ++tiers;
  std::vector<ClosTier> out;
  out.push_back({ceil_div(hosts, leaf_down), leaf_down, leaf_up});
  for (int t = 1; t < tiers; ++t) {
    const long long ports_from_below = out.back().switches * out.back().up;
    const bool top = t == tiers - 1;
    const int down = top ? radix : half;
    out.push_back({ceil_div(ports_from_below, down), down, top ? 0 : half});
  }
  return out;
}

Dollars BillOfMaterials::total() const {
  double sum = 0;
  for (const auto& item : items)
    if (const auto t = item.total()) sum += t->value();
  return Dollars(sum);
}

bool BillOfMaterials::complete() const {
  return std::ranges::all_of(items, [](const BomItem& i) { return i.unit.has_value(); });
}

Watts BillOfMaterials::network_power() const {
  double sum = 0;
  for (const auto& item : items)
    if (item.kind == PartKind::Switch || item.kind == PartKind::Nic || item.kind == PartKind::Transceiver ||
        item.kind == PartKind::Cable)
      sum += item.unit_power.value() * static_cast<double>(item.count);
  return Watts(sum);
}

long long BillOfMaterials::count(PartKind kind, std::string_view role) const {
  long long n = 0;
  for (const auto& item : items)
    if (item.kind == kind && (role.empty() || item.role == role)) n += item.count;
  return n;
}

BillOfMaterials bill_of_materials(const ClusterSpec& spec, const Topology& topo) {
  BillOfMaterials bom;
  const auto gpus = static_cast<long long>(topo.gpus().size());
  if (spec.groups.empty()) {
    bom.items.push_back({PartKind::Gpu, spec.gpu.name, "GPU", gpus, spec.gpu.price, spec.gpu.tdp, {}});
  } else {
    for (const ClusterSpec& g : spec.groups)   // each group's GPUs, at their own price and power
      bom.items.push_back({PartKind::Gpu, g.gpu.name, "GPU", g.gpus(), g.gpu.price, g.gpu.tdp, {}});
  }
  if (spec.graph) {
    const auto switches = static_cast<long long>(topo.count(NodeKind::Switch));
    if (switches > 0)
      bom.items.push_back({PartKind::Switch, "switch (user graph)", "switch", switches, std::nullopt, Watts(0),
                           "a user graph's switches are counted, not priced (their radix and speed are the graph's)"});
    bom.notes.push_back("user graph: GPUs and switches counted from the graph; no servers, NICs or cables");
    return bom;
  }
  if (spec.server_gpus > 0) {
    // An NVLink domain of several servers (an NVL72 rack): its compute trays, and the NVLink switch trays that join
    // them, as many as the domain's GPU links need ports.
    const auto& tray = find_part("nvl-compute-tray");
    bom.items.push_back({PartKind::Server, tray.name, "server", spec.servers(), tray.price, tray.power,
                         fmt::format("{} GPUs a compute tray, priced without GPUs and NICs", spec.server_gpus)});
    const auto& nvswitch = find_part("nvlink-switch-tray");
    // Each folded node stands in a rack of its own (the loader folds the segments a rack holds into one node), and
    // each rack pays its switch trays.
    const int domain = spec.nvlink_domain_gpus();
    const long long racks = spec.nodes;
    const long long ports = static_cast<long long>(domain) * spec.effective_links_per_gpu();
    const long long trays = (ports + nvswitch.ports - 1) / nvswitch.ports;
    bom.items.push_back({PartKind::Switch, nvswitch.name, "NVLink", trays * racks, nvswitch.price, nvswitch.power,
                         fmt::format("{} NVLink ports a tray; {} a {}-GPU domain", nvswitch.ports, trays, domain)});
    if (spec.domain_gpus > 0)
      bom.notes.push_back(fmt::format("the job's {} servers run as {} groups of {} GPUs, each inside one {}-GPU "
                                      "NVLink domain (Slurm's segments)", spec.servers(), spec.nodes, spec.gpus_per_node, domain));
  } else {
    const auto& server = find_part(sxm_server(spec) ? "hgx-8gpu-server" : "pcie-gpu-server");
    bom.items.push_back({PartKind::Server, server.name, "server", spec.nodes, server.price, server.power,
                         fmt::format("{} GPUs a server, priced without GPUs and NICs", spec.gpus_per_node)});
  }
  if (spec.inter == InterKind::None) return bom;

  const long long nics = static_cast<long long>(spec.nodes) * spec.effective_nics_per_node();
  const LinkSpec& link = spec.inter_link;
  bom.items.push_back(priced(find_part(PartKind::Nic, link.family, link.bandwidth), PartKind::Nic, "NIC", nics, link));
  const auto* sw = find_part(PartKind::Switch, link.family, link.bandwidth);
  const int radix = sw != nullptr ? sw->ports : 64;
  if (sw == nullptr) bom.notes.push_back("no catalog switch for the fabric's family and speed: sized as 64-port switches");
  const double oversubscription = spec.inter == InterKind::Switch ? 1.0 : spec.oversubscription;
  const bool one_switch = spec.inter == InterKind::Switch && nics <= radix;
  // Leaves as the simulated fabric has them (cluster.fabric.leaf_ports NICs each), where the switch has the ports.
  const int leaf_ports = spec.inter == InterKind::Switch ? 0 : spec.fabric.leaf_ports;
  const auto tiers = one_switch ? std::vector<ClosTier>{{1, radix, 0}} : folded_clos(nics, radix, oversubscription, leaf_ports);
  if (leaf_ports > tiers.front().down)
    bom.notes.push_back(fmt::format("cluster.fabric.leaf_ports {} is more than a {}-port switch gives the NICs at {:g}:1; "
                                    "priced with {} a leaf", leaf_ports, radix, oversubscription, tiers.front().down));
  if (spec.inter == InterKind::Switch && !one_switch)
    bom.notes.push_back(fmt::format("{} NICs on one switch of {} ports: built as a non-blocking folded Clos", nics, radix));
  bom.switch_tiers = static_cast<int>(tiers.size());
  static constexpr const char* kRoles[] = {"leaf", "spine", "core"};
  long long between = 0;
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    const std::string role = tiers.size() == 1 ? "switch" : t < 3 ? kRoles[t] : fmt::format("tier {}", t + 1);
    auto item = priced(sw, PartKind::Switch, role, tiers[t].switches, link);
    item.note = fmt::format("{} down, {} up", tiers[t].down, tiers[t].up);
    bom.items.push_back(item);
    if (t + 1 < tiers.size()) between += tiers[t].switches * tiers[t].up;
  }
  const int nodes_per_rack = power_model().nodes_per_rack;
  const long long servers_per_leaf = ceil_div(tiers.front().down, spec.effective_nics_per_node());
  // An NVLink domain fills its rack (an NVL72's 18 compute trays and 9 switch trays): its leaves stand elsewhere.
  const bool copper = spec.inter == InterKind::RailOptimized || spec.server_gpus > 0 ? false
                      : one_switch                                                  ? spec.nodes <= nodes_per_rack
                                                                                    : servers_per_leaf <= nodes_per_rack;
  add_links(bom, link, nics, copper, between);
  if (spec.server_gpus > 0)
    bom.notes.push_back("NIC links optical (an NVLink domain fills its rack; its leaves stand in other racks); links "
                        "between switch tiers optical");
  else
    bom.notes.push_back(fmt::format("NIC links {} ({} servers to a rack); links between switch tiers optical",
                                    copper ? "copper within the rack" : "optical", nodes_per_rack));
  return bom;
}

}  // namespace dtsim::topology
