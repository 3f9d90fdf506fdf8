// The resolved scenario as YAML: every field the loader would otherwise default, written out, so the file
// alone reproduces the run. Hardware is written as full inline maps (what was used, not just its name).
#include <yaml-cpp/yaml.h>

#include "sim/cli/scenario.hpp"

namespace dtsim::cli {
namespace {

void emit_link(YAML::Emitter& out, const char* key, const topology::LinkSpec& l) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << l.name;
  out << YAML::Key << "family" << YAML::Value << std::string(to_string(l.family));
  out << YAML::Key << "bandwidth_GBps" << YAML::Value << to_gigabytes_per_second(l.bandwidth);
  out << YAML::Key << "latency_us" << YAML::Value << to_microseconds(l.latency);
  out << YAML::Key << "efficiency" << YAML::Value << l.efficiency;
  out << YAML::EndMap;
}

void emit_gpu(YAML::Emitter& out, const topology::GpuSpec& g) {
  out << YAML::Key << "gpu" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << g.name;
  out << YAML::Key << "memory_GiB" << YAML::Value << to_gibibytes(g.memory);
  out << YAML::Key << "memory_reserve_GiB" << YAML::Value << to_gibibytes(g.memory_reserve);
  out << YAML::Key << "memory_bandwidth_GBps" << YAML::Value << to_gigabytes_per_second(g.memory_bandwidth);
  out << YAML::Key << "peak_TFLOPS" << YAML::Value << YAML::BeginMap;
  for (auto p : topology::kAllPrecisions)
    if (auto peak = g.peak_for(p)) out << YAML::Key << std::string(to_string(p)) << YAML::Value << to_teraflops(*peak);
  out << YAML::EndMap;
  out << YAML::Key << "tdp_W" << YAML::Value << g.tdp.value();
  out << YAML::Key << "price_usd" << YAML::Value << g.price.value();
  out << YAML::Key << "price_per_hour_usd" << YAML::Value << g.price_per_hour.value();
  out << YAML::Key << "gpu_link" << YAML::Value << g.gpu_link;
  out << YAML::Key << "gpu_link_count" << YAML::Value << g.gpu_link_count;
  out << YAML::Key << "host_link" << YAML::Value << g.host_link;
  out << YAML::EndMap;
}

void emit_cluster(YAML::Emitter& out, const topology::ClusterSpec& c) {
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  emit_gpu(out, c.gpu);
  if (c.graph) {
    out << YAML::Key << "graph" << YAML::Value << *c.graph;
    out << YAML::Key << "ecmp" << YAML::Value << c.ecmp;
    out << YAML::EndMap;
    return;
  }
  out << YAML::Key << "nodes" << YAML::Value << c.nodes;
  out << YAML::Key << "gpus_per_node" << YAML::Value << c.gpus_per_node;
  out << YAML::Key << "intra" << YAML::Value << std::string(to_string(c.intra));
  emit_link(out, "intra_link", c.intra_link);
  out << YAML::Key << "links_per_gpu" << YAML::Value << c.effective_links_per_gpu();
  out << YAML::Key << "inter" << YAML::Value << std::string(to_string(c.inter));
  emit_link(out, "inter_link", c.inter_link);
  emit_link(out, "nic_link", c.nic_link);
  out << YAML::Key << "nics_per_node" << YAML::Value << c.effective_nics_per_node();
  out << YAML::Key << "oversubscription" << YAML::Value << c.oversubscription;
  out << YAML::Key << "ecmp" << YAML::Value << c.ecmp;
  out << YAML::Key << "pcie" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpus_per_switch" << YAML::Value << c.pcie.gpus_per_switch;
  out << YAML::Key << "sockets" << YAML::Value << c.effective_sockets();
  emit_link(out, "socket_link", c.pcie.socket_link);
  out << YAML::Key << "socket_links" << YAML::Value << c.pcie.socket_links;
  out << YAML::EndMap;
  out << YAML::Key << "fabric" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "leaf_ports" << YAML::Value << c.fabric.leaf_ports;
  out << YAML::Key << "spines" << YAML::Value << c.effective_spines();
  out << YAML::EndMap;
  out << YAML::EndMap;
}

}  // namespace

std::string to_yaml(const Scenario& scenario) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << scenario.name;
  emit_cluster(out, scenario.cluster);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace dtsim::cli
