// YAML -> Policy. Strict: unknown keys, wrong types, bad units and contradictions are errors that
// carry file:line:column and a hint (docs/policy.md lists every field and its default).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb {

// Parses policy text; `file_name` is used in error positions.
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
