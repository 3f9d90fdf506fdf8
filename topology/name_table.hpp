// Enum <-> name tables: one pair per value, looked up both ways. Used for every enum users type by name.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "topology/error.hpp"

namespace dtsim::topology {

template <class Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

template <class Enum, std::size_t N>
std::string_view name_of(const NameTable<Enum, N>& table, Enum value) {
  const auto* it = std::ranges::find(table, value, &std::pair<Enum, std::string_view>::first);
  DTSIM_ASSERT(it != table.end(), "enum value missing from its name table");
  return it->second;
}

template <class Enum, std::size_t N>
std::optional<Enum> value_of(const NameTable<Enum, N>& table, std::string_view name) {
  const auto* it = std::ranges::find(table, name, &std::pair<Enum, std::string_view>::second);
  if (it == table.end()) return std::nullopt;
  return it->first;
}

}  // namespace dtsim::topology
