// Scenario YAML -> plain structs: `name`, `cluster`, and the job (`model`, `training` or `inference`,
// `parallelism`: workload_reader.cpp).
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <sstream>

#include "sim/scenario/reliability_reader.hpp"
#include "topology/mixed_gpu.hpp"
#include "sim/scenario/cluster_presets.hpp"
#include "sim/scenario/hardware_reader.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/simulation_reader.hpp"
#include "sim/scenario/sweep.hpp"
#include "sim/scenario/workload_reader.hpp"
#include "sim/scenario/yaml_reader.hpp"
#include "topology/error.hpp"
#include "topology/user_graph.hpp"

namespace dtsim::scenario {
namespace {

using topology::ClusterSpec;

constexpr long long kMaxCount = 1'000'000;

int read_lanes(const YamlMap& m, const std::string& key, int fallback) {
  const int lanes = read_int(m, key, fallback, 1, 16);
  if (!topology::valid_pcie_lanes(lanes))
    m.fail(key, std::to_string(lanes), "a PCIe link has a power-of-two lane count, not", std::string(topology::kPcieLaneNames));
  return lanes;
}

// pcie.bridges: `pairs` (GPU 0 with 1, 2 with 3, ...), `none`, or a flat list of GPU indices taken two by two.
std::vector<std::pair<int, int>> read_bridges(const YamlMap& m, const ClusterSpec& c) {
  std::vector<std::pair<int, int>> pairs;
  const std::string allowed = "pairs, none, or a list of GPU indices two by two ([0, 1, 2, 3])";
  if (!m.is_list("bridges")) {
    const std::string word = m.text("bridges").value_or("none");
    if (word == "none") return pairs;
    if (word != "pairs") m.fail("bridges", word, "unknown bridge layout", allowed);
    for (int g = 0; g + 1 < c.gpus_per_node; g += 2) pairs.emplace_back(g, g + 1);
    return pairs;
  }
  const auto list = m.integers("bridges", 0, 4095).value_or(std::vector<long long>{});
  if (list.size() % 2 != 0)
    m.fail("bridges", fmt::format("[{}]", fmt::join(list, ", ")), "an odd number of GPU indices cannot make pairs:", allowed);
  for (std::size_t i = 0; i < list.size(); i += 2) pairs.emplace_back(static_cast<int>(list[i]), static_cast<int>(list[i + 1]));
  return pairs;
}

void read_pcie(const YamlMap& m, ClusterSpec& c) {
  m.allow_only({"gpus_per_switch", "sockets", "cpu", "socket_link", "socket_links", "root_complex_GBps", "slot_lanes",
                "uplink_lanes", "bridges", "bridge_link", "bridge_links"});
  if (auto v = m.number("root_complex_GBps", 0.0, true, to_gigabytes_per_second(topology::kMaxLinkBandwidth)))
    c.pcie.root_complex = gigabytes_per_second(*v);
  c.pcie.gpus_per_switch = read_int(m, "gpus_per_switch", c.pcie.gpus_per_switch, 1, 64);
  c.pcie.sockets = read_int(m, "sockets", c.pcie.sockets, 1, 2);
  if (auto cpu = m.text("cpu")) {
    try {
      c.pcie.cpu = topology::find_cpu(*cpu, m.dotted("cpu")).name;
    } catch (const InputError& e) {
      m.fail("cpu", *cpu, e.reason(), e.allowed());
    }
    c.pcie.socket_link = topology::find_link(topology::find_cpu(c.pcie.cpu).socket_link, m.dotted("cpu"));
  }
  c.pcie.socket_links = read_int(m, "socket_links", c.pcie.socket_links, 1, 8);
  if (m.has("socket_link")) c.pcie.socket_link = read_link(m, "socket_link");
  c.pcie.slot_lanes = read_lanes(m, "slot_lanes", c.pcie.slot_lanes);
  c.pcie.uplink_lanes = read_lanes(m, "uplink_lanes", c.pcie.uplink_lanes);
  if (m.has("bridges")) c.pcie.bridges = read_bridges(m, c);
  if (!c.pcie.bridges.empty() && c.intra != topology::IntraKind::Pcie)
    m.fail("bridges", m.is_list("bridges") ? "[...]" : *m.text("bridges"),
           fmt::format("NVLink bridges join PCIe cards; this cluster's layout is intra: {}, so it takes no", to_string(c.intra)),
           "intra: pcie with bridges, or no bridges");
  if (m.has("bridge_link")) c.pcie.bridge_link = read_link(m, "bridge_link");
  c.pcie.bridge_links = read_int(m, "bridge_links", c.pcie.bridge_links, 1, 64);
}

void read_fabric(const YamlMap& m, ClusterSpec& c) {
  m.allow_only({"leaf_ports", "spines"});
  c.fabric.leaf_ports = read_int(m, "leaf_ports", c.fabric.leaf_ports, 1, 65536);
  c.fabric.spines = read_int(m, "spines", c.fabric.spines, 1, 65536);
}

// A user graph replaces the builders, so the builders' keys would be ignored: refuse them instead.
void check_graph_exclusive(const YamlMap& m) {
  for (const char* key : {"nodes", "gpus_per_node", "intra", "intra_link", "links_per_gpu", "inter", "inter_link",
                          "nic_link", "nics_per_node", "oversubscription", "pcie", "fabric"})
    if (m.has(key)) m.fail(key, key, "cannot be combined with cluster.graph (the graph file gives the layout), key", "remove it");
}

// cluster.routing, or its old name cluster.ecmp (true: the fabric's default, false: single), resolved: what the
// fabric does without either (a user graph's from its links).
topology::Routing read_routing(const YamlMap& m, const ClusterSpec& c) {
  if (m.has("routing") && m.has("ecmp"))
    m.fail("ecmp", "ecmp: " + m.text("ecmp").value_or(""),
           "is cluster.routing's old name and cannot be given beside it: remove",
           "routing: single | ecmp | dmodk | adaptive, alone");
  if (m.has("routing"))
    return read_enum(m, "routing", topology::Routing::Single, topology::parse_routing, topology::kRoutingNames);
  if (!m.boolean("ecmp").value_or(true)) return topology::Routing::Single;
  if (!c.graph) return c.effective_routing();
  return topology::default_routing(topology::read_user_graph(*c.graph));
}

// cluster.nvlink_domain (GPUs per NVLink domain, whole servers of gpus_per_node; default a server) and cluster.racks
// (domains, for nodes): a domain larger than a server is folded into the node the rest of dtsim sees (ClusterSpec's
// server_gpus), or the job's segment of it (domain_gpus).
void read_nvlink_domain(const YamlMap& m, ClusterSpec& c) {
  const int domain = read_int(m, "nvlink_domain", c.gpus_per_node, 1, 4096);
  if (domain == c.gpus_per_node) {
    if (m.has("racks"))
      m.fail("racks", m.text("racks").value_or(""), "counts NVLink domains that span servers, and this cluster's is one "
             "server (cluster.nvlink_domain left out or gpus_per_node):", "nodes, or an nvlink_domain of several servers");
    return;
  }
  const std::string given = std::to_string(domain);
  if (domain < c.gpus_per_node || domain % c.gpus_per_node != 0)
    m.fail("nvlink_domain", given, fmt::format("is not a whole number of servers of {} GPUs:", c.gpus_per_node),
           fmt::format("a multiple of gpus_per_node ({})", c.gpus_per_node));
  if (c.intra != topology::IntraKind::NvSwitch)
    m.fail("nvlink_domain", given, fmt::format("spans servers through NVLink switches, which intra {} has not:",
                                               to_string(c.intra)), "intra: nvswitch");
  if (c.graph) m.fail("nvlink_domain", given, "cannot be combined with cluster.graph (the graph gives the layout):", "remove it");
  const int per = domain / c.gpus_per_node;
  if (m.has("racks")) {
    if (m.has("nodes"))
      m.fail("racks", m.text("racks").value_or(""), "gives the node count (racks x servers a domain); beside nodes,",
             "racks or nodes, not both");
    c.nodes = read_int(m, "racks", 1, 1, kMaxCount / per) * per;
  }
  // Servers that do not fill whole domains run as Slurm's block scheduling places them with `--segment`: equal
  // segments, each inside one domain, of all the servers when they fit in one domain, else of the largest count
  // up to a domain's that divides them (NVIDIA's Megatron-Bridge benchmarks, scripts/performance/utils/
  // executors.py at 067f987d: 64 GB200 trays run as 4 segments of 16). NCCL's multi-node NVLink joins whatever
  // shares a domain, so the segments a domain holds together are one node here; they must fill their domains alike.
  int segment = per;
  if (c.nodes % per != 0) {
    int s = std::min(c.nodes, per);
    while (c.nodes % s != 0) --s;
    segment = c.nodes <= per ? s : s * (per / s);   // the segments that share a domain
    if (c.nodes % segment != 0)
      m.fail("nodes", std::to_string(c.nodes),
             fmt::format("run as Slurm's segments of {} servers, {} to a domain of {}, which leave the last domain "
                         "fuller than the others:", s, per / s, per),
             fmt::format("up to {} servers, a multiple of {}, or a count whose largest divisor up to {} is above {}",
                         per, per, per, per / 2));
    c.domain_gpus = domain;
  }
  c.server_gpus = c.gpus_per_node;
  c.nics_per_node = c.effective_nics_per_node() * segment;
  c.gpus_per_node *= segment;
  c.nodes /= segment;
}

ClusterSpec read_cluster(const YamlMap& m, const std::string& file) {
  m.allow_only({"gpu", "nodes", "gpus_per_node", "intra", "intra_link", "links_per_gpu", "inter", "inter_link",
                "nic_link", "nics_per_node", "oversubscription", "graph", "routing", "ecmp", "pcie", "fabric", "storage",
                "groups", "nvlink_domain", "racks"});
  if (!m.has("gpu")) m.fail("gpu", "", "missing required key", "a catalog GPU name or a map of its fields");
  const auto intra = read_enum(m, "intra", topology::IntraKind::NvSwitch, topology::parse_intra_kind, topology::kIntraNames);
  ClusterSpec c;
  c.gpu = read_gpu(m, "gpu");
  c.nodes = read_int(m, "nodes", 1, 1, kMaxCount);
  c.gpus_per_node = read_int(m, "gpus_per_node", 8, 1, 4096);
  c.intra = intra;
  c.intra_link = read_link_or(m, "intra_link", intra == topology::IntraKind::Pcie ? c.gpu.host_link : c.gpu.gpu_link);
  c.links_per_gpu = read_int(m, "links_per_gpu", 0, 1, 1024);
  c.inter = read_enum(m, "inter", topology::InterKind::None, topology::parse_inter_kind, topology::kInterNames);
  c.inter_link = read_link_or(m, "inter_link", topology::default_inter_link(c.gpu).name);
  c.nic_link = read_link_or(m, "nic_link", c.gpu.host_link);
  c.nics_per_node = read_int(m, "nics_per_node", 0, 1, 4096);
  c.oversubscription = m.number("oversubscription", 0.0, false, 1000.0).value_or(1.0);
  c.pcie.cpu = topology::default_cpu(intra == topology::IntraKind::Pcie ? c.intra_link.name : c.gpu.host_link).name;
  c.pcie.socket_link = topology::find_link(topology::find_cpu(c.pcie.cpu).socket_link, "cluster.pcie.socket_link");
  c.pcie.root_complex = topology::pcie_root_complex_throughput();
  c.pcie.bridge_link = topology::find_link("nvlink-bridge", "cluster.pcie.bridge_link");
  if (m.has("pcie")) read_pcie(m.map("pcie"), c);
  if (m.has("fabric")) read_fabric(m.map("fabric"), c);
  if (auto g = m.text("graph")) {
    check_graph_exclusive(m);
    c.graph = resolve_path(file, *g);
  }
  read_nvlink_domain(m, c);
  c.routing = read_routing(m, c);
  return c;
}

// `cluster.groups`: each group a cluster map over the section's own keys (which give the fabric and the defaults),
// with its GPU, its nodes and its node layout; machines in group order. The cluster's `gpu` is the groups' mean.
ClusterSpec read_cluster_groups(YAML::Node cluster, const YamlMap& m, const std::string& file,
                                std::map<std::string, std::string>* origins,
                                const std::vector<std::pair<std::string, std::string>>* overridden) {
  for (const char* key : {"gpu", "nodes", "graph"})
    if (m.has(key)) m.fail(key, m.text(key).value_or("..."), "is given per group with cluster.groups, not beside them",
                           "cluster.groups: [{gpu, nodes, gpus_per_node, ...}, ...]");
  for (const char* key : {"nvlink_domain", "racks"})
    if (m.has(key)) m.fail(key, m.text(key).value_or("..."), "is not modelled with cluster.groups (groups are servers of "
                           "one NVLink domain each):", "remove it, or one GPU kind");
  const std::vector<YamlMap> groups = m.maps("groups");
  if (groups.size() < 2) m.fail("groups", std::to_string(groups.size()), "needs two groups or more", "a list of 2 or more cluster maps");
  // Each group over the section's keys.
  const auto merged = [&](std::size_t i) {
    YAML::Node node = YAML::Clone(cluster);
    node.remove("groups");
    node.remove("storage");
    for (const auto& kv : cluster["groups"][i]) node[kv.first.as<std::string>()] = kv.second;
    return node;
  };
  ClusterSpec c;
  std::vector<topology::GpuCount> kinds;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    groups[i].allow_only({"gpu", "nodes", "gpus_per_node", "intra", "intra_link", "links_per_gpu", "nic_link",
                          "nics_per_node"});
    if (!groups[i].has("gpu")) groups[i].fail("gpu", "", "missing required key", "a catalog GPU name or a map of its fields");
    ClusterSpec g = read_cluster(YamlMap(merged(i), groups[i].dotted("").substr(0, groups[i].dotted("").size() - 1),
                                         file, origins, overridden),
                                 file);
    if (i == 0) {
      // The section's own keys (the fabric), read once where the user wrote them.
      YAML::Node top = merged(0);
      for (const char* key : {"nodes", "gpus_per_node", "intra", "intra_link", "links_per_gpu", "nic_link", "nics_per_node"})
        if (!cluster[key]) top.remove(key);
      c = read_cluster(YamlMap(top, "cluster", file, origins, overridden), file);
      c.nodes = 0;
    } else if (!cluster["inter_link"] && g.inter_link.name != c.groups.front().inter_link.name) {
      // One fabric: its NIC is the groups' GPUs' common default, or written.
      m.fail("inter_link", "", fmt::format("missing, and the groups' GPUs ship different NICs ({} with {}, {} with {}):",
                                           c.groups.front().gpu.name, c.groups.front().inter_link.name, g.gpu.name,
                                           g.inter_link.name),
             "one link for the fabric, cluster.inter_link");
    } else if (g.gpus_per_node != c.groups.front().gpus_per_node) {
      groups[i].fail("gpus_per_node", std::to_string(g.gpus_per_node), "differs from the first group's",
                     fmt::format("{} GPUs a node in every group", c.groups.front().gpus_per_node));
    } else if (g.effective_nics_per_node() != c.groups.front().effective_nics_per_node()) {
      groups[i].fail("nics_per_node", std::to_string(g.effective_nics_per_node()), "differs from the first group's",
                     fmt::format("{} NICs a node in every group (one fabric: its rails and leaves count them alike)",
                                 c.groups.front().effective_nics_per_node()));
    }
    c.nodes += g.nodes;
    kinds.push_back({g.gpu, g.gpus()});
    c.groups.push_back(std::move(g));
  }
  c.gpus_per_node = c.groups.front().gpus_per_node;
  c.gpu = topology::mean_gpu(kinds);
  return c;
}

YAML::Node parse_override_value(const Override& o) {
  try {
    const auto docs = parse_yaml(o.value, "--set");
    return docs.empty() ? YAML::Node() : docs.front();
  } catch (const InputError& e) {
    throw InputError(o.key, o.value, fmt::format("not valid YAML ({})", e.reason()), "a YAML value", "--set");
  } catch (const YAML::Exception& e) {
    throw InputError(o.key, o.value, fmt::format("not valid YAML ({})", e.msg), "a YAML value", "--set");
  }
}

// Sets `key` (dotted) in `root` to the override's value, creating maps on the way.
void apply_override(YAML::Node root, const Override& o) { set_dotted(root, o.key, parse_override_value(o), "--set"); }

// A --set on a key the sweep varies would be overwritten at every point: refuse it rather than ignore it.
void check_not_swept(const SweepPoint& point, const std::vector<Override>& overrides) {
  for (const auto& o : overrides)
    for (const auto& [key, value] : point.values)
      if (o.key == key || o.key.starts_with(key + ".") || key.starts_with(o.key + "."))
        throw InputError(o.key, o.value, fmt::format("is varied by the scenario's sweep (axis {}), so cannot be set:", key),
                         "a key the sweep does not vary (to change the axis, edit the file's sweep)", "--set");
}

// A document's name when it gives none: the file's stem (and the document's index after the first).
std::string default_name(const std::string& file, std::size_t index) {
  const std::string stem = file.front() == '<' ? "default" : std::filesystem::path(file).stem().string();
  return index == 0 ? stem : fmt::format("{}-{}", stem, index);
}

Scenario read_scenario(YAML::Node doc, const std::string& file, std::size_t index,
                       const std::vector<std::pair<std::string, std::string>>& overridden) {
  Scenario s;
  s.file = file;
  YamlMap top(doc, "", file, &s.origin, &overridden);
  top.allow_only({"name", "cluster", "model", "training", "inference", "parallelism", "simulation", "cost", "reference",
                  "reliability"});
  s.name = top.text("name").value_or(default_name(file, index));
  if (!top.has("cluster")) top.fail("cluster", "", "missing required section", "a map with gpu, nodes, intra, ...");
  apply_cluster_preset(doc["cluster"], file);
  s.cluster = top.map("cluster").has("groups")
                  ? read_cluster_groups(doc["cluster"], top.map("cluster"), file, &s.origin, &overridden)
                  : read_cluster(top.map("cluster"), file);
  if (top.map("cluster").has("storage")) s.storage = read_storage(top.map("cluster").map("storage"));
  s.workload = read_workload(top, s.cluster, s.name, file, &s.auto_keys);
  if (s.workload && !s.workload->plan.replica_micro_batches.empty() && s.cluster.groups.empty())
    top.map("parallelism").fail("replica_micro_batches", "...",
                                "splits the batch unevenly between replicas, which one GPU kind runs at one speed:",
                                "the key left out, or a cluster of GPU kinds (cluster.groups)");
  if (top.has("reliability")) {
    if (!s.workload || !s.workload->training)
      top.fail("reliability", "...", "applies to a training run", "a scenario with a training section, or no reliability");
    s.reliability = read_reliability(top.map("reliability"));
  }
  if (top.has("simulation")) s.simulation = read_simulation(top.map("simulation"));
  if (top.has("cost")) s.cost = read_cost(top.map("cost"));
  resolve_cost(s.cost, s.cluster.gpu, !s.cluster.groups.empty());
  if (top.has("reference")) {
    const auto* inf = s.workload && s.workload->inference ? &*s.workload->inference : nullptr;
    s.reference = read_reference(top.map("reference"), !inf ? ReferenceKind::Training
                                                      : inf->requests ? ReferenceKind::Stream : ReferenceKind::Serving);
  }
  return s;
}

}  // namespace

std::vector<Scenario> load_scenarios(const std::string& text, const std::string& file,
                                     const std::vector<Override>& overrides, bool keep_invalid_points,
                                     std::size_t most_points) {
  std::vector<YAML::Node> docs = parse_yaml(text, file);
  if (docs.empty()) throw InputError("(top level)", "", "empty scenario", "a map with name and cluster", file);
  std::vector<std::pair<std::string, std::string>> overridden;
  for (const Override& o : overrides) overridden.emplace_back(o.key, "--set");
  std::vector<Scenario> out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    for (const Override& o : overrides) apply_override(docs[i], o);
    std::size_t valid = 0;
    std::optional<InputError> first_error;
    for_each_sweep_point(docs[i], file, most_points, [&](ExpandedPoint& p) {
      check_not_swept(p.point, overrides);
      Scenario s;
      try {
        auto where = overridden;   // --set first; a sweep axis's keys are located at their values
        where.insert(where.end(), p.set_at.begin(), p.set_at.end());
        s = read_scenario(p.doc, file, i, where);
        ++valid;
      } catch (const InputError& e) {
        if (!keep_invalid_points || p.point.index < 0) throw;
        if (!first_error) first_error = e;
        s.name = p.doc["name"] && p.doc["name"].IsScalar() ? p.doc["name"].Scalar() : default_name(file, i);
        s.file = file;
        s.invalid = e.what();
      }
      s.name += p.name_suffix;
      s.point = std::move(p.point);
      out.push_back(std::move(s));
    });
    if (valid == 0 && first_error) throw *first_error;
  }
  return out;
}

Scenario load_scenario(YAML::Node doc, const std::string& file) {
  DTSIM_ASSERT(!doc["sweep"], "a scenario built in code has no sweep");
  return read_scenario(std::move(doc), file, 0, {});
}

namespace {

// A directory, a device or a FIFO is refused before it is opened (reading /dev/zero never ends; opening a FIFO
// waits for a writer).
void check_regular_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw InputError(what, path, "cannot read file", "a readable YAML file", path);
  if (!std::filesystem::is_regular_file(status))
    throw InputError(what, path,
                     std::filesystem::is_directory(status) ? "is a directory, not a file:" : "is not a regular file:",
                     "a readable YAML file", path);
}

}  // namespace

std::string read_scenario_text(const std::string& path) {
  check_regular_file(path, "scenario");
  std::ifstream in(path);
  if (!in) throw InputError("scenario", path, "cannot read file", "a readable YAML file", path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::vector<Scenario> load_scenario_file(const std::string& path, const std::vector<Override>& overrides,
                                         bool keep_invalid_points) {
  return load_scenarios(read_scenario_text(path), path, overrides, keep_invalid_points);
}

std::string locate(const Scenario& scenario, const std::string& key) {
  for (std::string k = key;;) {
    if (auto it = scenario.origin.find(k); it != scenario.origin.end()) return it->second;
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) return scenario.file;
    k.resize(dot);
  }
}

}  // namespace dtsim::scenario
