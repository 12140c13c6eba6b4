// YAML -> Policy. Strict: unknown keys, wrong types, bad units and contradictions are errors that
// carry file:line:column and a hint (docs/policy.md lists every field and its default).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/diagnostic.h"
#include "policy/policy.h"

namespace lsb {

// Every problem of one policy text, for callers that show them one by one (policy check, an API).
struct PolicyParse {
  std::optional<Policy> policy;                 // set only when `diagnostics` is empty
  std::vector<PolicyDiagnostic> diagnostics;    // in file order
};
PolicyParse ParsePolicyDetailed(std::string_view yaml_text, const std::string& file_name);

// Parses policy text; `file_name` is used in error positions. The Error's message holds all
// diagnostics, one "file:line:column: message" line and one "  hint: ..." line each.
Result<Policy> ParsePolicyText(std::string_view yaml_text, const std::string& file_name);

// Loads a policy file.
Result<Policy> LoadPolicyFile(const std::string& path);

// The directories searched for a policy given by name, in order: $LLM_SANDBOX_POLICY_DIR
// (colon-separated), ./policies, /etc/llm-sandbox/policies.
std::vector<std::string> PolicySearchPath();

// `file_or_name` is a path (contains '/' or ends in .yaml/.yml) or a policy name looked up as
// NAME.yaml in PolicySearchPath(); the loaded policy's `name` must equal NAME.
Result<Policy> LoadPolicy(const std::string& file_or_name);

}  // namespace lsb
