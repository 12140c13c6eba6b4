// One problem found in a policy file: where, what, and how to fix it. The loader collects all of a
// file's diagnostics before failing, so one `policy check` run shows every mistake.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"

namespace lsb {

struct PolicyDiagnostic {
  SourcePos pos;
  std::string message;  // what is wrong, naming the key: "resources: unknown key 'memroy'"
  std::string hint;     // how to fix it; never empty

  // "file:line:column: message\n  hint: hint"
  std::string ToString() const;
};

// All diagnostics, one ToString() per entry, joined by newlines.
std::string FormatDiagnostics(const std::vector<PolicyDiagnostic>& diagnostics);

}  // namespace lsb
