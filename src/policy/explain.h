// `policy explain`: per control, its setting and how each backend enforces it, or why it cannot.
// All of the wording lives here, as data, so the CLI prints it and an HTTP API can serve it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policy/policy.h"

namespace lsb {

struct Enforcement {
  bool enforced = true;  // false: this backend cannot enforce the control as written
  std::string how;       // the mechanism, or the reason it cannot be enforced
};

struct ControlExplanation {
  std::string control;  // dotted policy key: "resources.memory", "commands.allow", ...
  std::string setting;  // the value in words: "256Mi (268435456 bytes)"
  std::string source;   // "file:line:column", or "(default)" when the policy left it out
  Enforcement native;
  Enforcement docker;
};

// One entry per control, in the order of docs/policy.md.
std::vector<ControlExplanation> ExplainPolicy(const Policy& policy);

// The text `llm-sandbox policy explain` prints.
std::string FormatExplanation(const Policy& policy);

// {"policy": NAME, "file": FILE, "backend": ..., "runtime": ..., "controls": [{control, setting,
// source, native: {enforced, how}, docker: {enforced, how}}, ...]}
nlohmann::json ExplanationJson(const Policy& policy);

}  // namespace lsb
