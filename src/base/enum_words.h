// An enum's table of words: one row per enumerator, and the two look-ups every such table needs.
// Used by the protocol's wire values (protocol/wire_values.cc), the execution store's states and
// the launcher's stages, so each enum has exactly one place where its spelling is written.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace lsb {

template <typename E>
struct EnumWord {
  E value;
  const char* word;
};

// The word of `v`, or `missing` when the table has no row for it (a table to fix: the tests of
// each table check every enumerator).
template <typename E>
const char* WordOf(std::span<const EnumWord<E>> table, E v, const char* missing = "?") {
  for (const auto& w : table)
    if (w.value == v) return w.word;
  return missing;
}

// The enumerator spelled `s`, or nullopt when no row is (case matters).
template <typename E>
std::optional<E> EnumOf(std::span<const EnumWord<E>> table, std::string_view s) {
  for (const auto& w : table)
    if (s == w.word) return w.value;
  return std::nullopt;
}

}  // namespace lsb
