// The controls llm-sandbox-init enforces the same way in every box, whichever backend made it
// (limits set before exec, the timeout, the output cap, the environment): their words for
// `policy explain`, shared by each backend's answers (native_controls.cc, docker_controls.cc).
#pragma once

#include <string>

#include "policy/controls.h"
#include "policy/policy.h"

namespace lsb {

// How init enforces `control` of `policy`; "" for a control init does not enforce alone.
std::string InitEnforces(Control control, const Policy& policy);

// Landlock's part in commands.allow, applied by init inside the box.
std::string LandlockExecRules();

}  // namespace lsb
