#include "sim/cli/simulation_reader.hpp"

#include <array>
#include <fmt/format.h>
#include <string_view>

#include "sim/cli/workload_reader.hpp"

namespace dtsim::cli {
namespace {

// Result fields a reference may quote (DESIGN.md's JSON fields, plus the TP traffic of claim S16).
constexpr std::array<std::string_view, 11> kReferenceKeys = {
    "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "hw_tflops_per_gpu", "mfu", "hfu", "scaling_efficiency",
    "tp_comm_ms", "tp_comm_GB", "memory_GB"};

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

std::string reference_keys() { return fmt::format("source, baseline, {}", fmt::join(kReferenceKeys, ", ")); }

SimulationSpec read_simulation(const YamlMap& m) {
  m.allow_only({"engine", "collective_algo", "max_channels", "granularity", "memoize", "aggregate", "symmetry",
                "interference"});
  SimulationSpec s;
  s.engine = read_enum(m, "engine", s.engine, parse_engine, "simgrid, analytic");
  s.collective_algo = read_enum(m, "collective_algo", s.collective_algo, sim::parse_algorithm, sim::kAlgorithmNames);
  s.max_channels = static_cast<int>(m.integer("max_channels", 0, sim::kMaxChannels).value_or(s.max_channels));
  s.granularity = read_enum(m, "granularity", s.granularity, parse_granularity, "layer, kernel");
  s.memoize = m.boolean("memoize").value_or(s.memoize);
  s.aggregate = m.boolean("aggregate").value_or(s.aggregate);
  s.symmetry = m.boolean("symmetry").value_or(s.symmetry);
  s.interference = m.boolean("interference").value_or(s.interference);
  return s;
}

// Null values are allowed so a zipped sweep axis can leave a figure out for some points.
Reference read_reference(const YamlMap& m) {
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
    if (std::find(kReferenceKeys.begin(), kReferenceKeys.end(), key) == kReferenceKeys.end())
      m.fail(key, key, "unknown key", reference_keys());
    if (m.is_null(key)) continue;
    r.values[key] = *m.number(key, -1e300, true, 1e300);
  }
  return r;
}

}  // namespace dtsim::cli
