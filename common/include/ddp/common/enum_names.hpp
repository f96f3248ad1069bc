#pragma once
// Enums whose values are 0, 1, 2... and whose names (the JSON and text spelling) sit in an array
// in the same order: one lookup each way, so an enum is converted to a string only at the edge.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace ddp {

template <typename Enum, size_t N>
constexpr std::string_view enumName(const std::array<std::string_view, N>& names, Enum value) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : std::string_view("?");
}

template <typename Enum, size_t N>
constexpr std::optional<Enum> enumFromName(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace ddp
