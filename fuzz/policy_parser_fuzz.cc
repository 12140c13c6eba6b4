// libFuzzer target: the policy parser (YAML text -> Policy, or diagnostics). Any input must give
// a Policy or an Error; never a crash, a hang, or an exception escaping ParsePolicyText.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/policy_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = lsb::ParsePolicyText(text, "fuzz.yaml");
  if (!p.ok() && p.error().message.empty()) __builtin_trap();  // an error must say why
  return 0;
}
