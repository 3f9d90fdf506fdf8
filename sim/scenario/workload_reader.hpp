// The scenario sections that describe the job (`model`, `training`, `inference`, `parallelism`) read into a
// workloads::Workload, and the enum helper every section reader shares. Private to the scenario loader.
//
// Each key is parsed and range-checked on its own; checks across sections (tp divides heads, the degrees
// multiply to the GPU count, ...) are workloads::check_plan's, which the commands run after loading.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/scenario/yaml_reader.hpp"
#include "topology/error.hpp"
#include "topology/cluster.hpp"
#include "workloads/plan.hpp"

namespace dtsim::scenario {

// The model keys' limits (the reader's and hf_config's, so that what either reads writes back and loads).
inline constexpr long long kMaxLayers = 100'000;
inline constexpr long long kMaxWidth = 1'000'000;          // hidden, ffn_hidden, heads, kv_heads
inline constexpr long long kMaxTokens = 1'000'000'000;     // vocab, seq_length, context
inline constexpr double kMaxDropout = 0.99;                 // hidden_dropout, attention_dropout (1 drops everything)
inline constexpr long long kMaxExperts = 1'000'000;        // experts, experts_per_token, shared_experts
inline constexpr double kMaxImbalance = 1'000;             // expert_imbalance
inline constexpr long long kMaxDegree = 1'000'000;         // tp, pp, dp and the others (the serving pools' too)

// The enum named at `key`, parsed by `parse` (a function returning std::optional), or `fallback` when the key
// is absent; an unknown name fails, listing `allowed`.
template <class E, class Parse>
E read_enum(const YamlMap& m, const std::string& key, E fallback, Parse parse, std::string_view allowed) {
  auto s = m.text(key);
  if (!s) return fallback;
  auto v = parse(*s);
  if (!v && *s == "auto") m.no_auto(key, std::string(allowed));
  if (!v) m.fail(key, *s, "unknown value", std::string(allowed));
  return *v;
}

// An integer key's value in [min, max], or `fallback` when it is absent.
inline int read_int(const YamlMap& m, const std::string& key, int fallback, long long min, long long max) {
  return static_cast<int>(m.integer(key, min, max).value_or(fallback));
}

// Runs `fn`; an InputError it throws without a location gets the line of `key` in `m`.
template <class Fn>
auto located(const YamlMap& m, const std::string& key, Fn fn) {
  try {
    return fn();
  } catch (const InputError& e) {
    if (!e.location().empty()) throw;
    throw InputError(e.key(), e.value(), e.reason(), e.allowed(), m.where(key));
  }
}

// The `model` section: a preset or a Hugging Face config.json, overridden by explicit keys, validated.
workloads::ModelSpec read_model(const YamlMap& m, const std::string& scenario_name, const std::string& file);

// The job of one scenario document `top`, or none when it has no `model` section (a topology-only scenario).
// A model needs exactly one of `training` and `inference`; `parallelism` is optional. `scenario_name` names a
// model given without a preset; `cluster` gives the GPU count that parallelism.dp defaults from.
// `auto_keys` (when given) receives the dotted knobs left to `auto` (training.micro_batch, parallelism.vpp,
// training.recompute, training.offload_layers), which hold the framework's default until resolve_auto chooses them.
std::optional<workloads::Workload> read_workload(const YamlMap& top, const topology::ClusterSpec& cluster,
                                                 const std::string& scenario_name, const std::string& file,
                                                 std::vector<std::string>* auto_keys = nullptr);

}  // namespace dtsim::scenario
