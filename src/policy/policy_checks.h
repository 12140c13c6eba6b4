// Checks that span several fields (a path both allowed and denied, a default language whose
// interpreter cannot run, runsc without accepting its weaker confinement...). Run by the loader
// after each field was read on its own; positions come from Policy::positions.
#pragma once

#include <vector>

#include "policy/diagnostic.h"
#include "policy/policy.h"

namespace lsb {

// `explicit_languages` are the names the policy's languages: section defines or overrides; their
// interpreters must be runnable (a built-in the policy does not mention may stay unusable).
std::vector<PolicyDiagnostic> CheckPolicyConsistency(const Policy& policy,
                                                     const std::vector<std::string>& explicit_languages);

}  // namespace lsb
