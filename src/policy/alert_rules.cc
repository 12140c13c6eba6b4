#include "policy/alert_rules.h"

namespace lsb {

std::optional<protocol::Severity> EffectiveAlertSeverity(const Policy& policy, protocol::AlertRule rule,
                                                         protocol::Severity reported) {
  auto it = policy.alert_severity.find(rule);
  if (it == policy.alert_severity.end()) return reported;
  return it->second;  // nullopt: "off"
}

}  // namespace lsb
