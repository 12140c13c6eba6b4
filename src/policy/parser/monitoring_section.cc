// monitoring: trace events, and each alert rule's severity (or off).
#include <optional>
#include <string>
#include <vector>

#include "policy/alert_rules.h"
#include "policy/parser/section_context.h"
#include "protocol/messages.h"

namespace lsb::policy_parser {

void SectionParser::Monitoring(const Field& f) {
  if (f.key.Scalar() != "alerts") return Unread(f);
  // alerts: {RULE: info|warning|critical|off}; the rule names are fixed.
  std::vector<std::string> rules, levels;
  for (const auto& r : protocol::AlertRules()) rules.push_back(r.name);
  for (protocol::Severity v : protocol::AllSeverities()) levels.push_back(protocol::Name(v));
  levels.push_back("off");
  p_.positions[f.path] = r_.Pos(f.mark());
  r_.ForEachKnownKey(f, rules, [&](const Field& a) {
    // YAML reads a bare off as a string here (yaml-cpp keeps scalars as text).
    std::string level;
    Choice(a, levels, level, "off stops reporting the rule; the sandbox still refuses");
    auto rule = protocol::ParseAlertRule(a.key.Scalar());
    // Choice allowed only the levels above: a level that is no severity is "off" (nullopt).
    if (!level.empty() && rule) p_.alert_severity[*rule] = protocol::ParseSeverity(level);
  });
}

}  // namespace lsb::policy_parser
