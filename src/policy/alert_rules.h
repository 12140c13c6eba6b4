// The built-in alert rules and how a policy's `monitoring.alerts` changes them: each rule keeps
// its built-in severity unless the policy names another one (info | warning | critical) or
// turns it off. Only the report changes: what the sandbox refuses stays refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace lsb {

struct AlertRuleInfo {
  std::string name;       // "network_attempt"
  std::string severity;   // built-in severity
  std::string what;       // one line for docs and explain
};

const std::vector<AlertRuleInfo>& BuiltinAlertRules();
// The severity to report `rule` with under `policy`, or nullopt when the policy turned it off.
// `reported` is the severity the alert came with (used for rules the policy leaves alone).
std::optional<std::string> EffectiveAlertSeverity(const Policy& policy, const std::string& rule,
                                                  const std::string& reported);

}  // namespace lsb
