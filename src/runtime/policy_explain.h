// `policy explain`: per control, its setting (policy/explain.h) and how each backend enforces it,
// or why it cannot, as the backends themselves answer (native_controls.h, docker_controls.h). The
// CLI prints it; GET /v1/policies/{name} serves it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policy/explain.h"

namespace lsb {

struct ControlExplanation {
  ControlRow row;
  Enforcement native;
  Enforcement docker;
};

// One entry per row of ControlRows(policy), in the table's order.
std::vector<ControlExplanation> ExplainPolicy(const Policy& policy);

// The text `llm-sandbox policy explain` prints.
std::string FormatExplanation(const Policy& policy);

// {"policy": NAME, "file": FILE, "backend": ..., "runtime": ..., "controls": [{control, setting,
// source, native: {enforced, how}, docker: {enforced, how}}, ...]}
nlohmann::json ExplanationJson(const Policy& policy);

}  // namespace lsb
