#include "policy/backend_choice.h"

#include <array>
#include <utility>

namespace lsb {
namespace {

#define LSB_SPELLING_ROW(id, spelling) std::pair{Type::id, std::string_view(spelling)},
template <typename Type>
struct Table;
template <>
struct Table<BackendKind> {
  using Type = BackendKind;
  static constexpr std::array rows = {LSB_BACKEND_KINDS(LSB_SPELLING_ROW)};
};
template <>
struct Table<ContainerRuntime> {
  using Type = ContainerRuntime;
  static constexpr std::array rows = {LSB_CONTAINER_RUNTIMES(LSB_SPELLING_ROW)};
};
#undef LSB_SPELLING_ROW

template <typename E>
std::string SpellingIn(E value) {
  for (const auto& [v, text] : Table<E>::rows)
    if (v == value) return std::string(text);
  return "";  // not reached: every enumerator has its row (the enum is made from the same list)
}

template <typename E>
std::optional<E> ParseIn(std::string_view text) {
  for (const auto& [v, spelling] : Table<E>::rows)
    if (spelling == text) return v;
  return std::nullopt;
}

template <typename E>
std::vector<std::string> SpellingsIn() {
  std::vector<std::string> all;
  for (const auto& [v, text] : Table<E>::rows) all.emplace_back(text);
  return all;
}

}  // namespace

std::string Spelling(BackendKind kind) { return SpellingIn(kind); }
std::string Spelling(ContainerRuntime runtime) { return SpellingIn(runtime); }
std::optional<BackendKind> ParseBackendKind(std::string_view text) { return ParseIn<BackendKind>(text); }
std::optional<ContainerRuntime> ParseContainerRuntime(std::string_view text) {
  return ParseIn<ContainerRuntime>(text);
}
std::vector<std::string> BackendKindSpellings() { return SpellingsIn<BackendKind>(); }
std::vector<std::string> ContainerRuntimeSpellings() { return SpellingsIn<ContainerRuntime>(); }

}  // namespace lsb
