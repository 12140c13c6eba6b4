#include "policy/builtin_descriptions.h"

#include <utility>

namespace lsb {
namespace {

// name -> description. Keep in step with docs/policy.md ("Shipped policies").
constexpr std::pair<std::string_view, std::string_view> kBuiltinDescriptions[] = {
    {"code-sandbox", "Python with pip (the requirements' policy): no shell, no network; pip cannot install "
                     "here (no network, read-only root)"},
};

}  // namespace

std::string_view BuiltinDescription(std::string_view name) {
  for (const auto& [policy, description] : kBuiltinDescriptions)
    if (policy == name) return description;
  return {};
}

void ApplyBuiltinDescription(Policy& policy) {
  if (!policy.description.empty()) return;
  policy.description = std::string(BuiltinDescription(policy.name));
}

}  // namespace lsb
