#include "results/memory_report.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string_view>
#include <utility>

namespace dtsim::results {
namespace {

using workloads::MemoryParts;
using workloads::MemoryPlan;

// The parts in DESIGN.md's order, with their JSON names (which also prefix their notes).
std::array<std::pair<std::string_view, Bytes>, 6> named_parts(const MemoryParts& p) {
  return {{{"params", p.params},
           {"grads", p.grads},
           {"optimizer", p.optimizer},
           {"activations", p.activations},
           {"kv_cache", p.kv_cache},
           {"buffers", p.buffers}}};
}

// The note of `part` without its "part: " prefix; empty when the plan has none.
std::string_view note_of(const MemoryPlan& plan, std::string_view part) {
  for (const std::string& note : plan.notes) {
    const std::string_view n = note;
    if (n.size() > part.size() + 1 && n.starts_with(part) && n[part.size()] == ':') return n.substr(part.size() + 2);
  }
  return {};
}

double gib(Bytes b) { return to_gibibytes(b); }

// Whole bytes print as integers; a fraction (a ZeRO shard of an odd count) keeps its decimals.
nlohmann::json bytes_json(Bytes b) {
  const double v = b.value();
  const double whole = std::round(v);
  if (whole == v && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(whole);
  return v;
}

std::string row(std::string_view label, Bytes value, std::string_view comment = {}) {
  std::string line = fmt::format("  {:<12} {:>9.2f} GiB", label, gib(value));
  if (!comment.empty()) line += fmt::format("   {}", comment);
  return line + "\n";
}

}  // namespace

nlohmann::json memory_json(const MemoryPlan& plan) {
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [name, bytes] : named_parts(plan.parts)) parts[std::string(name)] = bytes_json(bytes);
  nlohmann::json j;
  j["per_gpu_bytes"] = bytes_json(plan.per_gpu);
  j["capacity_bytes"] = bytes_json(plan.capacity);
  j["margin_bytes"] = bytes_json(plan.margin);
  j["fits"] = plan.fits;
  j["parts_bytes"] = parts;
  j["stage"] = plan.stage;
  j["in_flight_micro_batches"] = plan.in_flight_micro_batches;
  j["notes"] = plan.notes;
  return j;
}

std::string memory_verdict(const MemoryPlan& plan) {
  if (plan.fits) return "fits";
  return fmt::format("does not fit: short by {:.2f} GiB", gib(-plan.margin));
}

std::string memory_table(const std::string& name, const topology::GpuSpec& gpu, const MemoryPlan& plan) {
  const std::string when = plan.inference ? std::string("serving (one decode step)")
                                         : fmt::format("pipeline stage {}, {} micro-batch{} in flight", plan.stage,
                                                       plan.in_flight_micro_batches,
                                                       plan.in_flight_micro_batches == 1 ? "" : "es");
  std::string out = fmt::format("{}: memory per GPU on {}, {}\n", name, gpu.name, when);
  for (const auto& [part, bytes] : named_parts(plan.parts)) out += row(part, bytes, note_of(plan, part));
  out += row("per GPU", plan.per_gpu);
  out += row("capacity", plan.capacity,
             fmt::format("{:.2f} GiB memory - {:.2f} GiB reserve", gib(gpu.memory), gib(gpu.memory_reserve)));
  out += row("margin", plan.margin);
  out += fmt::format("  {:<12} {}\n", "verdict", memory_verdict(plan));
  return out;
}

}  // namespace dtsim::results
