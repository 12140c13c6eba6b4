#include "policy/policy.h"

#include <algorithm>

#include "policy/diagnostic.h"

namespace lsb {

std::string SourcePos::ToString() const {
  if (line <= 0) return "(default)";
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

bool Policy::NetworkUnfiltered() const {
  return network_enabled && network_allow.size() == 1 && network_allow[0] == "*" && network_deny.empty() &&
         network_secrets.empty();
}

const Language* Policy::FindLanguage(const std::string& lang) const {
  auto it = languages.find(lang);
  return it == languages.end() ? nullptr : &it->second;
}

bool Policy::Allows(const std::string& path) const {
  return std::find(allow.begin(), allow.end(), path) != allow.end();
}

bool Policy::Denies(const std::string& path) const {
  return std::find(deny.begin(), deny.end(), path) != deny.end();
}

std::string PolicyDiagnostic::ToString() const {
  std::string where = pos.line > 0 ? pos.ToString() : pos.file;
  return where + ": " + message + "\n  hint: " + hint;
}

std::string FormatDiagnostics(const std::vector<PolicyDiagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    if (!out.empty()) out += "\n";
    out += d.ToString();
  }
  return out;
}

}  // namespace lsb
