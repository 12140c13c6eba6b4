// Descriptions for shipped policies whose file cannot carry one. policies/code-sandbox.yaml is the
// requirements' text, kept verbatim, and has no description: models choosing a policy (tool
// enums, MCP) still need one, so the loader gives it the one written here. A description in the
// file always wins; a policy of another name gets none from here.
#pragma once

#include <string_view>

#include "policy/policy.h"

namespace lsb {

// The built-in description for a policy named `name`, or "" when there is none.
std::string_view BuiltinDescription(std::string_view name);

// Sets policy.description from BuiltinDescription when the file left it out (or empty); explain
// shows its source as "(built in)".
void ApplyBuiltinDescription(Policy& policy);

}  // namespace lsb
