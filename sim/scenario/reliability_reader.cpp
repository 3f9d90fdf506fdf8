// The `reliability` section and `cluster.storage` read and written (reliability_reader.hpp).
#include "sim/scenario/reliability_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <type_traits>
#include <string>

#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

using results::FailureClass;
using results::FailureScope;

constexpr double kMostPerHour = 1.0;         // a component failing every hour, per component
constexpr double kMostSeconds = 86400.0 * 365;
constexpr std::string_view kScopes = "gpu, node, nic, switch";

std::optional<FailureScope> parse_scope(std::string_view s) {
  if (s == "gpu") return FailureScope::Gpu;
  if (s == "node") return FailureScope::Node;
  if (s == "nic") return FailureScope::Nic;
  if (s == "switch") return FailureScope::Switch;
  return std::nullopt;
}

// `failures`: `default`, `none`, or a map of classes: a default class's name changes its rate (and must say where the
// new rate comes from); a new name adds a class, with the component it counts in (`per`).
std::vector<FailureClass> read_failures(const YamlMap& m) {
  constexpr const char* kAllowed = "default, none, or a map of COMPONENT: {per_hour, source, per, repair}";
  if (m.is_list("failures")) m.fail("failures", "[...]", "a list, not a failure model", kAllowed);
  if (!m.is_map("failures")) {
    const std::string v = m.text("failures").value_or("default");
    if (v == "default") return results::default_failure_classes();
    if (v == "none") return {};
    m.fail("failures", v, "unknown failure model", kAllowed);
  }
  std::vector<FailureClass> out = results::default_failure_classes();
  const YamlMap classes = m.map("failures");
  for (const std::string& name : classes.keys()) {
    const YamlMap c = classes.map(name);
    c.allow_only({"per_hour", "source", "per", "repair"});
    auto it = std::find_if(out.begin(), out.end(), [&](const FailureClass& f) { return f.component == name; });
    if (it == out.end()) {
      if (!c.has("per")) c.fail("per", "", "missing for a class dtsim does not know", std::string(kScopes));
      out.push_back(FailureClass{name, 0, FailureScope::Gpu, ""});
      it = std::prev(out.end());
    }
    const auto rate = c.number("per_hour", 0.0, true, kMostPerHour);
    if (!rate) c.fail("per_hour", "", "missing", "failures per component-hour, a number in [0, 1]");
    it->per_hour = *rate;
    const auto source = c.text("source");
    if (!source || source->empty()) c.fail("source", "", "missing", "where the rate comes from (a study, a log)");
    it->source = *source;
    if (const auto repair = c.boolean("repair")) it->repair = *repair;
    if (const auto per = c.text("per")) {
      const auto scope = parse_scope(*per);
      if (!scope) c.fail("per", *per, "unknown component", std::string(kScopes));
      it->scope = *scope;
    }
  }
  return out;
}

// A map of NAME: factor, each factor in [1, kMostFactor]; `integer_keys`: names are whole numbers in [0, 2^31).
constexpr double kMostFactor = 100.0;
template <class Key>
std::map<Key, double> read_factors(const YamlMap& m, const std::string& key, const char* what) {
  std::map<Key, double> out;
  if (!m.has(key)) return out;
  if (!m.is_map(key)) m.fail(key, m.text(key).value_or("[...]"), "not a map", fmt::format("a map of {}: factor", what));
  const YamlMap f = m.map(key);
  for (const std::string& name : f.keys()) {
    const auto factor = f.number(name, 1.0, true, kMostFactor);
    if (!factor) f.fail(name, "", "missing", fmt::format("how many times slower, a number in [1, {:g}]", kMostFactor));
    if constexpr (std::is_same_v<Key, int>) {
      char* end = nullptr;
      const long v = std::strtol(name.c_str(), &end, 10);
      if (name.empty() || *end != '\0' || v < 0 || v > 2147483647L)
        m.fail(key, name, fmt::format("is not a {}", what), "a whole number from 0");
      out[static_cast<int>(v)] = *factor;
    } else {
      out[name] = *factor;
    }
  }
  return out;
}

StragglerSpec read_stragglers(const YamlMap& m) {
  m.allow_only({"ranks", "nodes", "nics", "spread", "slow_nodes"});
  StragglerSpec s;
  s.ranks = read_factors<int>(m, "ranks", "rank");
  s.nodes = read_factors<int>(m, "nodes", "server index");
  s.nics = read_factors<std::string>(m, "nics", "NIC name");
  s.spread = m.number("spread", 0.0, true, 1.0).value_or(0.0);
  if (m.has("slow_nodes") && m.is_map("slow_nodes")) {
    const YamlMap slow = m.map("slow_nodes");
    slow.allow_only({"share", "factor", "pass"});
    const auto share = slow.number("share", 0.0, true, 1.0);
    const auto factor = slow.number("factor", 1.0, true, kMostFactor);
    if (!share || !factor) slow.fail(share ? "factor" : "share", "", "missing", "slow_nodes: {share: S, factor: F}");
    s.slow_share = *share;
    s.slow_factor = *factor;
    const std::string pass = slow.text("pass").value_or("all");
    if (pass != "all" && pass != "forward") slow.fail("pass", pass, "unknown", "all, or forward (its recomputation too)");
    s.slow_forward_only = pass == "forward";
  } else if (m.has("slow_nodes")) {
    const std::string v = m.text("slow_nodes").value_or("");
    if (v != "default") m.fail("slow_nodes", v, "unknown", "default, or {share: S in [0, 1], factor: F >= 1}");
    s.slow_share = kSlowNodeShare;
    s.slow_factor = kSlowNodeFactor;
    s.slow_forward_only = true;
  }
  return s;
}

}  // namespace

ReliabilitySpec read_reliability(const YamlMap& m) {
  m.allow_only({"failures", "checkpoint", "restart_s", "on_failure", "spares", "repair_s", "seed", "stragglers"});
  ReliabilitySpec r;
  const std::string mode = m.text("on_failure").value_or("restart");
  if (mode == "spare") r.on_failure = results::OnFailure::Spare;
  else if (mode == "shrink") r.on_failure = results::OnFailure::Shrink;
  else if (mode != "restart") m.fail("on_failure", mode, "unknown", "restart, spare or shrink");
  r.repair_s = m.number("repair_s", 0.0, false, kMostSeconds);
  if (r.on_failure != results::OnFailure::Restart && !r.repair_s)
    m.fail("repair_s", "", fmt::format("missing for on_failure: {} (no published repair time dtsim could cite)", mode),
           "the seconds a failed server is out, repaired or replaced");
  if (m.has("spares") && r.on_failure != results::OnFailure::Spare)
    m.fail("spares", m.text("spares").value_or(""), fmt::format("apply to on_failure: spare, not {}", mode),
           "spares with on_failure: spare, or no spares");
  if (r.on_failure == results::OnFailure::Spare) {
    const auto spares = m.integer("spares", 0, 1'000'000);
    if (!spares) m.fail("spares", "", "missing for on_failure: spare", "the servers the job holds as spares, 0 or more");
    r.spares = static_cast<int>(*spares);
  }
  if (m.has("failures")) r.failures = read_failures(m);
  if (m.has("checkpoint")) {
    const YamlMap c = m.map("checkpoint");
    c.allow_only({"interval_s", "async"});
    const std::string interval = c.text("interval_s").value_or("auto");
    if (interval != kAuto) r.interval_s = c.number("interval_s", 0.0, false, kMostSeconds);
    r.async = c.boolean("async").value_or(false);
  }
  r.restart_s = m.number("restart_s", 0.0, true, kMostSeconds).value_or(r.restart_s);
  constexpr long long kMostSeed = 9007199254740991LL;   // 2^53 - 1: exact in JSON's numbers
  if (const auto seed = m.integer("seed", 0, kMostSeed)) r.seed = static_cast<unsigned long long>(*seed);
  if (m.has("stragglers")) r.stragglers = read_stragglers(m.map("stragglers"));
  return r;
}

StorageSpec read_storage(const YamlMap& m) {
  m.allow_only({"write_GBps", "read_GBps"});
  constexpr double kMostGBps = 1e6;
  return {m.number("write_GBps", 0.0, false, kMostGBps), m.number("read_GBps", 0.0, false, kMostGBps)};
}

void emit_reliability(YAML::Emitter& out, const ReliabilitySpec& r) {
  out << YAML::Key << "reliability" << YAML::Value << YAML::BeginMap;
  if (r.failures.empty()) {
    out << YAML::Key << "failures" << YAML::Value << "none";
  } else {
    out << YAML::Key << "failures" << YAML::Value << YAML::BeginMap;
    for (const auto& f : r.failures) {
      out << YAML::Key << f.component << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "per_hour" << YAML::Value << f.per_hour;
      out << YAML::Key << "per" << YAML::Value << std::string(results::to_string(f.scope));
      out << YAML::Key << "source" << YAML::Value << f.source;
      out << YAML::Key << "repair" << YAML::Value << f.repair;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap;
  if (r.interval_s) out << YAML::Key << "interval_s" << YAML::Value << *r.interval_s;
  else out << YAML::Key << "interval_s" << YAML::Value << std::string(kAuto);
  out << YAML::Key << "async" << YAML::Value << r.async;
  out << YAML::EndMap;
  out << YAML::Key << "restart_s" << YAML::Value << r.restart_s;
  out << YAML::Key << "on_failure" << YAML::Value << std::string(results::to_string(r.on_failure));
  if (r.on_failure == results::OnFailure::Spare) out << YAML::Key << "spares" << YAML::Value << r.spares;
  if (r.repair_s) out << YAML::Key << "repair_s" << YAML::Value << *r.repair_s;
  if (r.seed) out << YAML::Key << "seed" << YAML::Value << *r.seed;
  if (r.stragglers) {
    const StragglerSpec& st = *r.stragglers;
    out << YAML::Key << "stragglers" << YAML::Value << YAML::BeginMap;
    const auto factors = [&](const char* key, const auto& map) {
      if (map.empty()) return;
      out << YAML::Key << key << YAML::Value << YAML::BeginMap;
      for (const auto& [name, factor] : map) out << YAML::Key << name << YAML::Value << factor;
      out << YAML::EndMap;
    };
    factors("ranks", st.ranks);
    factors("nodes", st.nodes);
    factors("nics", st.nics);
    out << YAML::Key << "spread" << YAML::Value << st.spread;
    if (st.slow_share > 0)
      out << YAML::Key << "slow_nodes" << YAML::Value << YAML::BeginMap << YAML::Key << "share" << YAML::Value
          << st.slow_share << YAML::Key << "factor" << YAML::Value << st.slow_factor << YAML::Key << "pass"
          << YAML::Value << (st.slow_forward_only ? "forward" : "all") << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void emit_storage(YAML::Emitter& out, const StorageSpec& s) {
  if (!s.write_GBps && !s.read_GBps) return;
  out << YAML::Key << "storage" << YAML::Value << YAML::BeginMap;
  if (s.write_GBps) out << YAML::Key << "write_GBps" << YAML::Value << *s.write_GBps;
  if (s.read_GBps) out << YAML::Key << "read_GBps" << YAML::Value << *s.read_GBps;
  out << YAML::EndMap;
}

}  // namespace dtsim::scenario
