#include "sim/scenario/simulation_reader.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <string_view>

#include "sim/scenario/workload_reader.hpp"

namespace dtsim::scenario {
namespace {

constexpr double kMostSeconds = 7 * 24 * 3600.0;   // simulation.max_seconds: a week of wall time at most

// Result fields a reference may quote (DESIGN.md's JSON fields, plus the TP traffic of claim S16), for a training
// step, a served batch and a served stream (its fields and the batch's).
constexpr std::array<std::string_view, 11> kReferenceKeys = {
    "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "hw_tflops_per_gpu", "mfu", "hfu", "scaling_efficiency",
    "tp_comm_ms", "tp_comm_GB", "memory_GB"};
constexpr std::array<std::string_view, 6> kServingReferenceKeys = {"tokens_per_s", "tokens_per_s_per_gpu", "ttft_ms",
                                                                   "tpot_ms", "request_time_ms", "memory_GB"};
constexpr std::array<std::string_view, 7> kStreamReferenceKeys = {"throughput_tokens_per_s", "mean_ttft_ms", "mean_tpot_ms",
                                                                  "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms"};

std::optional<EngineKind> parse_engine(std::string_view name) {
  if (name == "simgrid") return EngineKind::Simgrid;
  if (name == "analytic") return EngineKind::Analytic;
  return std::nullopt;
}

std::optional<workloads::Granularity> parse_granularity(std::string_view name) {
  if (name == "layer") return workloads::Granularity::Layer;
  if (name == "kernel") return workloads::Granularity::Kernel;
  return std::nullopt;
}

}  // namespace

std::string reference_keys(ReferenceKind kind) {
  switch (kind) {
    case ReferenceKind::Training: return fmt::format("source, baseline, unstated, stated, {}", fmt::join(kReferenceKeys, ", "));
    case ReferenceKind::Serving: return fmt::format("source, baseline, {}", fmt::join(kServingReferenceKeys, ", "));
    case ReferenceKind::Stream:
      return fmt::format("source, baseline, {}, {}", fmt::join(kServingReferenceKeys, ", "), fmt::join(kStreamReferenceKeys, ", "));
  }
  return "";
}

SimulationSpec read_simulation(const YamlMap& m) {
  m.allow_only({"engine", "collective_algo", "max_channels", "granularity", "memoize", "aggregate", "symmetry",
                "interference", "max_seconds"});
  SimulationSpec s;
  s.engine = read_enum(m, "engine", s.engine, parse_engine, "simgrid, analytic");
  s.collective_algo = read_enum(m, "collective_algo", s.collective_algo, sim::parse_algorithm, sim::kAlgorithmNames);
  s.max_channels = static_cast<int>(m.integer("max_channels", 0, sim::kMaxChannels).value_or(s.max_channels));
  s.granularity = read_enum(m, "granularity", s.granularity, parse_granularity, "layer, kernel");
  s.memoize = m.boolean("memoize").value_or(s.memoize);
  s.aggregate = m.boolean("aggregate").value_or(s.aggregate);
  s.symmetry = m.boolean("symmetry").value_or(s.symmetry);
  s.interference = m.boolean("interference").value_or(s.interference);
  s.max_seconds = m.number("max_seconds", 0.0, false, kMostSeconds);
  return s;
}

CostSpec read_cost(const YamlMap& m) {
  m.allow_only({"mode", "gpu_hour_usd", "gpu_usd", "years", "kwh_usd", "pue", "parts"});
  CostSpec c;
  if (const auto mode = m.text("mode")) {
    if (*mode == "rental") c.mode = results::CostMode::Rental;
    else if (*mode == "ownership") c.mode = results::CostMode::Ownership;
    else m.fail("mode", *mode, "unknown cost mode", "rental, ownership");
  }
  constexpr double kMost = 1e12;
  c.gpu_hour_usd = m.number("gpu_hour_usd", 0.0, true, kMost);
  c.gpu_usd = m.number("gpu_usd", 0.0, true, kMost);
  c.years = m.number("years", 0.0, false, 100.0);
  c.kwh_usd = m.number("kwh_usd", 0.0, true, 100.0);
  c.pue = m.number("pue", 1.0, true, 10.0);
  if (m.has("parts")) {
    const YamlMap parts = m.map("parts");
    std::string names;
    for (const auto& p : topology::part_catalog()) names += (names.empty() ? "" : ", ") + p.name;
    for (const std::string& name : parts.keys()) {
      const bool known = std::ranges::any_of(topology::part_catalog(), [&](const auto& p) { return p.name == name; });
      if (!known) parts.fail(name, name, "unknown part", names);
      const YamlMap part = parts.map(name);
      part.allow_only({"usd", "watts"});
      c.parts[name] = PartOverride{part.number("usd", 0.0, true, kMost), part.number("watts", 0.0, true, 1e7)};
    }
  }
  return c;
}

void resolve_cost(CostSpec& c, const topology::GpuSpec& gpu, bool kinds) {
  const auto& site = topology::site_defaults();
  if (!c.gpu_hour_usd) c.gpu_hour_usd = gpu.price_per_hour.value();
  if (!c.gpu_usd && !kinds) c.gpu_usd = gpu.price.value();   // several kinds: each at its own catalog price
  if (!c.years) c.years = site.years;
  if (!c.kwh_usd) c.kwh_usd = site.kwh_usd;
  if (!c.pue) c.pue = site.pue;
}

// Null values are allowed so a zipped sweep axis can leave a figure out for some points.
Reference read_reference(const YamlMap& m, ReferenceKind kind) {
  const auto allowed = [kind](std::string_view key) {
    const auto in = [key](const auto& keys) { return std::find(keys.begin(), keys.end(), key) != keys.end(); };
    if (kind == ReferenceKind::Training) return in(kReferenceKeys);
    return in(kServingReferenceKeys) || (kind == ReferenceKind::Stream && in(kStreamReferenceKeys));
  };
  Reference r;
  for (const auto& key : m.keys()) {
    if (key == "source") {
      r.source = m.text("source").value_or("");
      continue;
    }
    if (key == "baseline") {
      if (!m.is_null(key)) r.baseline = m.text("baseline").value_or("");
      continue;
    }
    if (key == "unstated") {
      for (const std::string& k : m.names(key, [](std::string_view n) { return n.find('.') != std::string_view::npos; },
                                          "dotted scenario keys (training.micro_batch, ...)")
                                      .value_or(std::vector<std::string>{}))
        r.unstated.push_back(k);
      continue;
    }
    if (key == "stated") {
      const YamlMap stated = m.map(key);
      for (const auto& k : stated.keys()) {
        if (k.find('.') == std::string::npos)
          stated.fail(k, k, "is not a dotted scenario key", "dotted scenario keys (training.framework, ...)");
        r.stated[k] = stated.text(k).value_or("");
      }
      continue;
    }
    if (!allowed(key)) m.fail(key, key, "unknown key", reference_keys(kind));
    if (m.is_null(key)) continue;
    r.values[key] = *m.number(key, -1e300, true, 1e300);
  }
  return r;
}

}  // namespace dtsim::scenario
