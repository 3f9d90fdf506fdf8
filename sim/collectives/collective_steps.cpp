// A lowering's steps (collective.hpp): a periodic lowering written out, its first step, and its aggregate (one
// step whose transfers carry the bytes of all of them; DESIGN.md "Scale").
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "sim/collectives/collective.hpp"

namespace dtsim::sim {

Lowered expand(Lowered lowered) {
  if (!lowered.periodic) return lowered;
  const std::vector<Transfer> step = std::move(lowered.transfers);
  lowered.transfers.clear();
  lowered.transfers.reserve(step.size() * static_cast<std::size_t>(lowered.steps));
  for (int k = 0; k < lowered.steps; ++k)
    for (Transfer t : step) {
      t.step = k;
      lowered.transfers.push_back(t);
    }
  lowered.periodic = false;
  return lowered;
}

std::optional<Lowered> first_step(const Lowered& lowered) {
  if (lowered.periodic) return lowered.steps >= 2 ? std::optional(lowered) : std::nullopt;
  if (lowered.steps < 2 || lowered.transfers.empty() ||
      lowered.transfers.size() % static_cast<std::size_t>(lowered.steps) != 0)
    return std::nullopt;
  const std::size_t per_step = lowered.transfers.size() / static_cast<std::size_t>(lowered.steps);
  const auto same = [](const Transfer& a, const Transfer& b) {
    return a.src == b.src && a.dst == b.dst && a.bytes == b.bytes && a.machine == b.machine && a.rate == b.rate;
  };
  for (std::size_t i = 0; i < lowered.transfers.size(); ++i) {
    const Transfer& t = lowered.transfers[i];
    if (t.step != static_cast<int>(i / per_step) || !same(t, lowered.transfers[i % per_step])) return std::nullopt;
  }
  Lowered out = lowered;
  out.transfers.resize(per_step);
  out.periodic = true;
  return out;
}

Lowered aggregate_first_step(Lowered step) {
  for (Transfer& t : step.transfers) t.bytes = t.bytes * static_cast<double>(step.steps);
  step.steps = 1;
  step.periodic = false;
  return step;
}

std::optional<Lowered> aggregate_steps(const Lowered& lowered) {
  auto step = first_step(lowered);
  if (!step) return std::nullopt;
  return aggregate_first_step(std::move(*step));
}

}  // namespace dtsim::sim
