// The resolved scenario as YAML: every field the loader would otherwise default, written out, so the file
// alone reproduces the run. Hardware is written as full inline maps (what was used, not just its name); the
// model as its full shape (plus the preset it came from, which the shape then overrides field by field).
#include <algorithm>
#include <cmath>
#include <yaml-cpp/yaml.h>

#include "sim/scenario/reliability_reader.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/layer_list.hpp"
#include "workloads/serving_scheduler.hpp"

namespace dtsim::scenario {
namespace {

void emit_link(YAML::Emitter& out, const char* key, const topology::LinkSpec& l) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << l.name;
  out << YAML::Key << "family" << YAML::Value << std::string(to_string(l.family));
  out << YAML::Key << "bandwidth_GBps" << YAML::Value << to_gigabytes_per_second(l.bandwidth);
  out << YAML::Key << "latency_us" << YAML::Value << to_microseconds(l.latency);
  out << YAML::Key << "efficiency" << YAML::Value << l.efficiency;
  out << YAML::Key << "switch_reduction" << YAML::Value << l.switch_reduction;
  if (l.switch_port_rate.value() > 0)
    out << YAML::Key << "switch_port_GBps" << YAML::Value << to_gigabytes_per_second(l.switch_port_rate);
  out << YAML::EndMap;
}

void emit_gpu(YAML::Emitter& out, const topology::GpuSpec& g) {
  out << YAML::Key << "gpu" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << g.name;
  out << YAML::Key << "architecture" << YAML::Value << g.architecture;
  out << YAML::Key << "memory_GiB" << YAML::Value << to_gibibytes(g.memory);
  out << YAML::Key << "memory_reserve_GiB" << YAML::Value << to_gibibytes(g.memory_reserve);
  out << YAML::Key << "memory_bandwidth_GBps" << YAML::Value << to_gigabytes_per_second(g.memory_bandwidth);
  out << YAML::Key << "peak_TFLOPS" << YAML::Value << YAML::BeginMap;
  for (auto p : topology::kAllPrecisions)
    if (auto peak = g.peak_for(p)) out << YAML::Key << std::string(to_string(p)) << YAML::Value << to_teraflops(*peak);
  out << YAML::EndMap;
  out << YAML::Key << "tdp_W" << YAML::Value << g.tdp.value();
  out << YAML::Key << "idle_W" << YAML::Value << g.idle_power.value();
  out << YAML::Key << "price_usd" << YAML::Value << g.price.value();
  out << YAML::Key << "price_per_hour_usd" << YAML::Value << g.price_per_hour.value();
  out << YAML::Key << "gpu_link" << YAML::Value << g.gpu_link;
  out << YAML::Key << "gpu_link_count" << YAML::Value << g.gpu_link_count;
  out << YAML::Key << "host_link" << YAML::Value << g.host_link;
  if (!g.cpu_link.empty()) out << YAML::Key << "cpu_link" << YAML::Value << g.cpu_link;
  if (!g.scale_out_link.empty()) out << YAML::Key << "scale_out_link" << YAML::Value << g.scale_out_link;
  out << YAML::Key << "sms" << YAML::Value << g.sms;
  out << YAML::EndMap;
}

// A group of a mixed cluster: what it may set (the rest is the section's).
void emit_group(YAML::Emitter& out, const topology::ClusterSpec& g) {
  out << YAML::BeginMap;
  emit_gpu(out, g.gpu);
  out << YAML::Key << "nodes" << YAML::Value << g.nodes;
  out << YAML::Key << "gpus_per_node" << YAML::Value << g.gpus_per_node;
  out << YAML::Key << "intra" << YAML::Value << std::string(to_string(g.intra));
  emit_link(out, "intra_link", g.intra_link);
  out << YAML::Key << "links_per_gpu" << YAML::Value << g.effective_links_per_gpu();
  emit_link(out, "nic_link", g.nic_link);
  out << YAML::Key << "nics_per_node" << YAML::Value << g.effective_nics_per_node();
  out << YAML::EndMap;
}

void emit_cluster(YAML::Emitter& out, const topology::ClusterSpec& c, const StorageSpec& storage) {
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  if (!c.groups.empty()) {
    out << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : c.groups) emit_group(out, g);
    out << YAML::EndSeq;
  } else {
    emit_gpu(out, c.gpu);
  }
  if (c.graph) {
    out << YAML::Key << "graph" << YAML::Value << *c.graph;
    out << YAML::Key << "routing" << YAML::Value << std::string(to_string(c.effective_routing()));
    emit_storage(out, storage);
    out << YAML::EndMap;
    return;
  }
  // An NVLink domain of several servers is written as the user gives it: servers, and the domain's GPUs.
  if (c.groups.empty()) out << YAML::Key << "nodes" << YAML::Value << c.servers();
  out << YAML::Key << "gpus_per_node" << YAML::Value << c.gpus_per_server();
  if (c.server_gpus > 0) out << YAML::Key << "nvlink_domain" << YAML::Value << c.nvlink_domain_gpus();
  out << YAML::Key << "intra" << YAML::Value << std::string(to_string(c.intra));
  emit_link(out, "intra_link", c.intra_link);
  out << YAML::Key << "links_per_gpu" << YAML::Value << c.effective_links_per_gpu();
  out << YAML::Key << "inter" << YAML::Value << std::string(to_string(c.inter));
  emit_link(out, "inter_link", c.inter_link);
  emit_link(out, "nic_link", c.nic_link);
  out << YAML::Key << "nics_per_node" << YAML::Value << c.effective_nics_per_node() / c.servers_per_node();
  out << YAML::Key << "oversubscription" << YAML::Value << c.oversubscription;
  out << YAML::Key << "routing" << YAML::Value << std::string(to_string(c.effective_routing()));
  out << YAML::Key << "pcie" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpus_per_switch" << YAML::Value << c.pcie.gpus_per_switch;
  out << YAML::Key << "sockets" << YAML::Value << c.effective_sockets();
  out << YAML::Key << "cpu" << YAML::Value << c.pcie.cpu;
  emit_link(out, "socket_link", c.pcie.socket_link);
  out << YAML::Key << "socket_links" << YAML::Value << c.pcie.socket_links;
  out << YAML::Key << "root_complex_GBps" << YAML::Value << to_gigabytes_per_second(c.pcie.root_complex);
  out << YAML::Key << "slot_lanes" << YAML::Value << c.pcie.slot_lanes;
  out << YAML::Key << "uplink_lanes" << YAML::Value << c.pcie.uplink_lanes;
  out << YAML::Key << "bridges" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& [a, b] : c.pcie.bridges) out << a << b;
  out << YAML::EndSeq;
  emit_link(out, "bridge_link", c.pcie.bridge_link);
  out << YAML::Key << "bridge_links" << YAML::Value << c.pcie.bridge_links;
  out << YAML::EndMap;
  out << YAML::Key << "fabric" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "leaf_ports" << YAML::Value << c.fabric.leaf_ports;
  out << YAML::Key << "spines" << YAML::Value << c.effective_spines();
  out << YAML::EndMap;
  emit_storage(out, storage);
  out << YAML::EndMap;
}

template <class T>
void emit(YAML::Emitter& out, const char* key, const T& value) {
  out << YAML::Key << key << YAML::Value << value;
}

void emit_name(YAML::Emitter& out, const char* key, std::string_view name) { emit(out, key, std::string(name)); }

bool is_preset(const std::string& name) {
  const auto presets = workloads::model_presets();
  return std::ranges::find(presets, name, &workloads::ModelSpec::name) != presets.end();
}

// A layer-list model: its preset (the layers follow from it and the training precision), or every layer.
void emit_layer_list(YAML::Emitter& out, const workloads::ModelSpec& m) {
  emit_name(out, "kind", to_string(m.kind));
  if (workloads::is_layer_list_preset(m.name) && m.source != "scenario") {
    emit(out, "preset", m.name);
    return;
  }
  out << YAML::Key << "layers_list" << YAML::Value << YAML::BeginSeq;
  for (const workloads::LayerSpec& l : m.layer_list) {
    out << YAML::Flow << YAML::BeginMap;
    emit(out, "name", l.name);
    emit_name(out, "kind", to_string(l.kind));
    emit(out, "flops", l.flops);
    emit(out, "bytes", l.bytes);
    emit(out, "params", l.params);
    emit(out, "activation", l.activation);
    if (l.gemm_m > 0 && l.gemm_n > 0 && l.gemm_k > 0)
      out << YAML::Key << "gemm" << YAML::Value << YAML::Flow
          << std::vector<long long>{std::llround(l.gemm_m), std::llround(l.gemm_n), std::llround(l.gemm_k)};
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit_model(YAML::Emitter& out, const workloads::ModelSpec& m, const char* key = "model") {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  if (m.kind == workloads::ModelKind::Layers) {
    emit_layer_list(out, m);
    out << YAML::EndMap;
    return;
  }
  if (is_preset(m.name)) emit(out, "preset", m.name);
  emit(out, "layers", m.layers);
  emit(out, "hidden", m.hidden);
  emit(out, "heads", m.heads);
  emit(out, "kv_heads", m.kv_heads);
  emit(out, "ffn_hidden", m.ffn_hidden);
  emit(out, "vocab", m.vocab);
  emit(out, "head_vocab", m.logits_width());
  emit(out, "seq_length", m.seq_length);
  emit_name(out, "activation", to_string(m.activation));
  emit_name(out, "norm", to_string(m.norm));
  emit_name(out, "positions", to_string(m.positions));
  emit(out, "tied_embeddings", m.tied_embeddings);
  emit(out, "bias", m.bias);
  emit(out, "causal", m.causal);
  emit(out, "hidden_dropout", m.hidden_dropout);
  emit(out, "attention_dropout", m.attention_dropout);
  // What a preset set and the scenario cleared is written too (0), or the preset would put it back on reload.
  const workloads::ModelSpec* base = is_preset(m.name) ? &workloads::find_model(m.name) : nullptr;
  if (m.head_size > 0 || (base && base->head_size > 0)) emit(out, "head_dim", m.head_dim());
  if (m.mla() || (base && base->mla())) {
    emit(out, "q_lora_rank", m.q_lora_rank);
    emit(out, "kv_lora_rank", m.kv_lora_rank);
    emit(out, "rope_head_dim", m.rope_head_dim);
    emit(out, "v_head_dim", m.v_head_dim);
  }
  if (m.moe()) {
    emit(out, "experts", m.experts);
    emit(out, "experts_per_token", m.experts_per_token);
    emit(out, "shared_experts", m.shared_experts);
    emit(out, "expert_ffn_hidden", m.expert_width());
    emit(out, "moe_layer_freq", m.moe_layer_freq);
    emit(out, "dense_layers", m.dense_layers);
    emit(out, "expert_imbalance", m.expert_imbalance);
  } else if (base && base->moe()) {
    emit(out, "experts", 0);
  }
  out << YAML::EndMap;
}

// A knob still left to `auto` (Scenario::auto_keys, not yet resolved) is written `auto`, so that the scenario
// loads back with the same choice left open.
using AutoKeys = std::vector<std::string>;
bool left_auto(const AutoKeys& keys, std::string_view key) { return std::ranges::find(keys, key) != keys.end(); }

void emit_training(YAML::Emitter& out, const workloads::TrainingSpec& t, const AutoKeys& autos) {
  out << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
  emit_name(out, "framework", to_string(t.framework));
  emit(out, "global_batch", t.global_batch);
  if (left_auto(autos, "training.micro_batch")) emit_name(out, "micro_batch", kAuto);
  else emit(out, "micro_batch", t.micro_batch);
  emit_name(out, "precision", to_string(t.precision));
  emit_name(out, "weight_dtype", to_string(t.weight_dtype));
  emit_name(out, "grad_dtype", to_string(t.grad_dtype));
  emit(out, "master_weights", t.master_weights);
  emit_name(out, "optimizer", to_string(t.optimizer));
  emit_name(out, "optimizer_dtype", to_string(t.optimizer_dtype));
  if (left_auto(autos, "training.offload_layers")) emit_name(out, "offload_layers", kAuto);
  else if (t.offload_layers > 0) out << YAML::Key << "offload_layers" << YAML::Value << t.offload_layers;
  if (left_auto(autos, "training.recompute")) emit_name(out, "recompute", kAuto);
  else emit_name(out, "recompute", to_string(t.recompute));
  if (t.recompute == workloads::Recompute::Selective && !left_auto(autos, "training.recompute")) {
    out << YAML::Key << "recompute_modules" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string_view name : workloads::recompute_module_names(t.recompute_modules)) out << std::string(name);
    out << YAML::EndSeq;
  }
  if (t.lora.on()) {
    out << YAML::Key << "lora" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "rank" << YAML::Value << t.lora.rank;
    out << YAML::Key << "targets" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string_view name : workloads::lora_target_names(t.lora.targets)) out << std::string(name);
    out << YAML::EndSeq << YAML::EndMap;
  }
  if (t.zero_pp.any()) {
    out << YAML::Key << "zero_pp" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "qwz" << YAML::Value << t.zero_pp.qwz << YAML::Key << "hpz" << YAML::Value << t.zero_pp.hpz
        << YAML::Key << "qgz" << YAML::Value << t.zero_pp.qgz << YAML::EndMap;
  }
  emit(out, "sequence_parallel", t.sequence_parallel);
  emit(out, "dp_bucket_MB", t.dp_bucket.value() / 1e6);
  emit(out, "overlap_grad_reduce", t.dp_overlap);
  emit_name(out, "zero3_prefetch", to_string(t.zero3_prefetch));
  emit_name(out, "attention", to_string(t.attention));
  emit(out, "cross_entropy_fusion", t.cross_entropy_fusion);
  emit_name(out, "cross_entropy_fusion_impl", to_string(t.cross_entropy_fusion_impl));
  emit_name(out, "fp8", to_string(t.fp8));
  emit_name(out, "moe_dispatcher", to_string(t.moe_dispatcher));
  emit_name(out, "cp_comm", to_string(t.cp_comm));
  emit(out, "overlap_moe_expert_parallel_comm", t.overlap_moe_expert_parallel_comm);
  if (t.overlap_p2p_comm) emit(out, "overlap_p2p_comm", *t.overlap_p2p_comm);   // absent: the framework's default
  emit(out, "tp_backward_overlap", t.tp_backward_overlap);
  emit(out, "tp_comm_overlap", t.tp_comm_overlap);
  emit(out, "distributed_optimizer", t.distributed_optimizer);
  emit(out, "overlap_param_gather", t.overlap_param_gather);
  if (t.tokens) emit(out, "tokens", *t.tokens);
  if (t.steps) emit(out, "steps", *t.steps);
  out << YAML::EndMap;
}

void emit_length(YAML::Emitter& out, const char* key, const workloads::LengthDistribution& d) {
  using Kind = workloads::LengthDistribution::Kind;
  if (d.kind == Kind::Fixed) return emit(out, key, static_cast<long long>(d.a));
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  if (d.kind == Kind::Uniform) {
    emit(out, "dist", std::string("uniform"));
    emit(out, "min", static_cast<long long>(d.a));
    emit(out, "max", static_cast<long long>(d.b));
  } else {
    emit(out, "dist", std::string(d.kind == Kind::Normal ? "normal" : "lognormal"));
    emit(out, "mean", d.a);
    emit(out, "std", d.b);
  }
  out << YAML::EndMap;
}

void emit_inference(YAML::Emitter& out, const workloads::InferenceSpec& i, int tp) {
  out << YAML::Key << "inference" << YAML::Value << YAML::BeginMap;
  emit(out, "batch", i.batch);
  emit(out, "context", i.context);
  emit(out, "prompt_tokens", i.prompt_tokens);
  emit(out, "output_tokens", i.output_tokens);
  emit_name(out, "weights", to_string(i.weights));
  emit_name(out, "kv_cache", to_string(i.kv_cache));
  emit_name(out, "framework", workloads::to_string(i.framework));
  emit(out, "prefix_cache_hit", i.prefix_cache_hit);
  if (i.kv_offload) {
    out << YAML::Key << "kv_offload" << YAML::Value << YAML::BeginMap;
    emit(out, "host_GB", i.kv_offload->host_GB);
    emit(out, "hit", i.kv_offload->hit);
    out << YAML::EndMap;
  }
  if (i.speculative) {
    out << YAML::Key << "speculative" << YAML::Value << YAML::BeginMap;
    emit_model(out, i.speculative->draft, "draft");
    emit(out, "tokens", i.speculative->tokens);
    emit(out, "acceptance", i.speculative->acceptance);
    emit(out, "tp", workloads::draft_tp(*i.speculative, tp));
    out << YAML::EndMap;
  }
  if (i.requests) {
    const workloads::RequestStream& r = *i.requests;
    out << YAML::Key << "requests" << YAML::Value << YAML::BeginMap;
    emit_length(out, "prompt_tokens", r.prompt_tokens);
    emit_length(out, "output_tokens", r.output_tokens);
    emit(out, "rate_per_s", r.rate_per_s);
    emit(out, "duration_s", r.duration_s);
    emit(out, "seed", r.seed);
    out << YAML::EndMap;
    const workloads::SchedulerLimits& l = i.scheduler;
    out << YAML::Key << "scheduler" << YAML::Value << YAML::BeginMap;
    emit(out, "max_tokens_per_iteration", l.max_tokens_per_iteration);
    if (!l.sequences_from_cache) emit(out, "max_sequences", l.max_sequences);   // else: what the cache gives (SGLang)
    if (l.kv_blocks > 0) emit(out, "kv_blocks", l.kv_blocks);   // else: what the memory plan leaves
    emit(out, "block_tokens", l.block_tokens);
    emit(out, "chunked_prefill", l.chunked_prefill);
    emit(out, "mixed_batches", l.mixed_batches);
    out << YAML::EndMap;
    if (i.disaggregation) {
      out << YAML::Key << "disaggregation" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, pool] : {std::pair{"prefill", i.disaggregation->prefill}, std::pair{"decode", i.disaggregation->decode}}) {
        out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
        emit(out, "gpus", pool.gpus);
        emit(out, "tp", pool.tp);
        out << YAML::EndMap;
      }
      out << YAML::EndMap;
    }
  }
  out << YAML::EndMap;
}

// layers_per_stage stays null when the plan leaves the split to stage_layers (as even as possible).
void emit_plan(YAML::Emitter& out, const workloads::ParallelPlan& p, const AutoKeys& autos) {
  out << YAML::Key << "parallelism" << YAML::Value << YAML::BeginMap;
  emit(out, "tp", p.tp);
  emit(out, "pp", p.pp);
  emit(out, "dp", p.dp);
  if (left_auto(autos, "parallelism.vpp")) emit_name(out, "vpp", kAuto);
  else emit(out, "vpp", p.vpp);
  emit_name(out, "schedule", to_string(p.schedule));
  out << YAML::Key << "layers_per_stage" << YAML::Value;
  if (p.layers_per_stage.empty()) out << YAML::Null;
  else out << YAML::Flow << p.layers_per_stage;
  if (!p.replica_micro_batches.empty())
    out << YAML::Key << "replica_micro_batches" << YAML::Value << YAML::Flow << p.replica_micro_batches;
  emit(out, "order", workloads::order_name(p.order));
  emit(out, "zero", p.zero);
  emit(out, "scatter_gather", p.scatter_gather);
  if (p.cp > 1) emit(out, "cp", p.cp);
  if (p.fsdp != workloads::Fsdp::None) emit_name(out, "fsdp", to_string(p.fsdp));
  if (p.ep > 1) emit(out, "ep", p.ep);
  if (p.etp > 0) emit(out, "etp", p.etp);   // as given: unset follows tp
  out << YAML::EndMap;
}

void emit_workload(YAML::Emitter& out, const workloads::Workload& w, const AutoKeys& autos) {
  emit_model(out, w.model);
  if (w.training) emit_training(out, *w.training, autos);
  if (w.inference) emit_inference(out, *w.inference, w.plan.tp);
  emit_plan(out, w.plan, autos);
}


void emit_simulation(YAML::Emitter& out, const SimulationSpec& s) {
  out << YAML::Key << "simulation" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "engine" << YAML::Value << (s.engine == EngineKind::Simgrid ? "simgrid" : "analytic");
  out << YAML::Key << "collective_algo" << YAML::Value << std::string(sim::to_string(s.collective_algo));
  out << YAML::Key << "max_channels" << YAML::Value << s.max_channels;
  out << YAML::Key << "granularity" << YAML::Value
      << (s.granularity == workloads::Granularity::Layer ? "layer" : "kernel");
  out << YAML::Key << "memoize" << YAML::Value << s.memoize;
  out << YAML::Key << "aggregate" << YAML::Value << s.aggregate;
  out << YAML::Key << "symmetry" << YAML::Value << s.symmetry;
  out << YAML::Key << "interference" << YAML::Value << s.interference;
  if (s.max_seconds) emit(out, "max_seconds", *s.max_seconds);
  out << YAML::EndMap;
}

// Only what the scenario gave: the catalog's defaults are written where they apply (the result's `cost`).
void emit_cost(YAML::Emitter& out, const CostSpec& c) {
  out << YAML::Key << "cost" << YAML::Value << YAML::BeginMap;
  emit_name(out, "mode", std::string(results::to_string(c.mode)));
  if (c.gpu_hour_usd) emit(out, "gpu_hour_usd", *c.gpu_hour_usd);
  if (c.gpu_usd) emit(out, "gpu_usd", *c.gpu_usd);
  if (c.years) emit(out, "years", *c.years);
  if (c.kwh_usd) emit(out, "kwh_usd", *c.kwh_usd);
  if (c.pue) emit(out, "pue", *c.pue);
  if (!c.parts.empty()) {
    out << YAML::Key << "parts" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, p] : c.parts) {
      out << YAML::Key << name << YAML::Value << YAML::BeginMap;
      if (p.usd) emit(out, "usd", *p.usd);
      if (p.watts) emit(out, "watts", *p.watts);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void emit_reference(YAML::Emitter& out, const Reference& r) {
  out << YAML::Key << "reference" << YAML::Value << YAML::BeginMap;
  if (!r.source.empty()) out << YAML::Key << "source" << YAML::Value << r.source;
  for (const auto& [key, value] : r.values) out << YAML::Key << key << YAML::Value << value;
  if (!r.unstated.empty()) out << YAML::Key << "unstated" << YAML::Value << YAML::Flow << r.unstated;
  if (!r.stated.empty()) out << YAML::Key << "stated" << YAML::Value << YAML::Flow << r.stated;
  out << YAML::EndMap;
}

}  // namespace

std::string to_yaml(const Scenario& scenario) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << scenario.name;
  emit_cluster(out, scenario.cluster, scenario.storage);
  if (scenario.workload) emit_workload(out, *scenario.workload, scenario.auto_keys);
  emit_simulation(out, scenario.simulation);
  emit_cost(out, scenario.cost);
  if (scenario.workload && scenario.workload->training) emit_reliability(out, scenario.reliability);
  if (!scenario.reference.source.empty() || !scenario.reference.values.empty() || !scenario.reference.unstated.empty() ||
      !scenario.reference.stated.empty())
    emit_reference(out, scenario.reference);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace dtsim::scenario
