// How a policy's `monitoring.alerts` changes the built-in alert rules (their table, with each
// rule's built-in severity, is protocol/wire_values.h, shared with init): each rule keeps its
// built-in severity unless the policy names another one (info | warning | critical) or turns it
// off. Only the report changes: what the sandbox refuses stays refused.
#pragma once

#include <optional>

#include "policy/policy.h"
#include "protocol/wire_values.h"

namespace lsb {

// The severity to report `rule` with under `policy`, or nullopt when the policy turned it off.
// `reported` is the severity the alert came with (used for rules the policy leaves alone).
std::optional<protocol::Severity> EffectiveAlertSeverity(const Policy& policy, protocol::AlertRule rule,
                                                         protocol::Severity reported);

}  // namespace lsb
