#include "policy/alert_rules.h"

namespace lsb {

const std::vector<AlertRuleInfo>& BuiltinAlertRules() {
  static const std::vector<AlertRuleInfo> rules = {
      {"network_attempt", "warning", "connect/sendto to an inet address while the network is off (names the address)"},
      {"denied_exec", "warning", "exec of a file that is not in commands.allow, or is denied (path and argv)"},
      {"escape_syscall", "critical", "a refused escape syscall: mount, unshare, setns, ptrace, bpf, chroot, ... (its name)"},
      {"oom_kill", "critical", "the OOM killer acted at the memory limit"},
      {"pids_limit", "warning", "process creation failed at the pids limit"},
      {"timeout", "warning", "the program was killed at its timeout"},
      {"output_flood", "warning", "the program was killed at the output cap"},
      {"interpreter_restarted", "warning", "a session's interpreter was restarted after a timeout (variables lost)"},
  };
  return rules;
}

std::optional<std::string> EffectiveAlertSeverity(const Policy& policy, const std::string& rule,
                                                  const std::string& reported) {
  auto it = policy.alert_severity.find(rule);
  if (it == policy.alert_severity.end()) return reported;
  if (it->second == "off") return std::nullopt;
  return it->second;
}

}  // namespace lsb
