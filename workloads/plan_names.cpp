// Names users type for the plan's enums: the pipeline schedule and the rank order ("tp-dp-pp").
#include <string>

#include "topology/name_table.hpp"
#include "workloads/plan.hpp"

namespace dtsim::workloads {
namespace {

using topology::NameTable;
using topology::name_of;
using topology::value_of;

constexpr NameTable<Schedule, 2> kSchedules{{{Schedule::OneFOneB, "1f1b"}, {Schedule::Gpipe, "gpipe"}}};
constexpr NameTable<Axis, 3> kAxes{{{Axis::Tp, "tp"}, {Axis::Dp, "dp"}, {Axis::Pp, "pp"}}};

}  // namespace

std::string_view to_string(Schedule s) { return name_of(kSchedules, s); }
std::optional<Schedule> parse_schedule(std::string_view name) { return value_of(kSchedules, name); }

std::string order_name(const std::array<Axis, 3>& order) {
  std::string out;
  for (const Axis a : order) {
    if (!out.empty()) out += '-';
    out += name_of(kAxes, a);
  }
  return out;
}

// Exactly three axis names joined by '-', each axis once.
std::optional<std::array<Axis, 3>> parse_order(std::string_view name) {
  std::array<Axis, 3> order{};
  std::array<bool, 3> seen{};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto dash = name.find('-');
    const bool last = i + 1 == order.size();
    if (last != (dash == std::string_view::npos)) return std::nullopt;
    const auto axis = value_of(kAxes, name.substr(0, dash));
    if (!axis) return std::nullopt;
    auto& once = seen[static_cast<std::size_t>(*axis)];
    if (once) return std::nullopt;
    once = true;
    order[i] = *axis;
    name = last ? std::string_view() : name.substr(dash + 1);
  }
  return order;
}

}  // namespace dtsim::workloads
