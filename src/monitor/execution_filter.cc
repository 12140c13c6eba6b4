#include "monitor/execution_filter.h"

#include <algorithm>

#include "policy/alert_rules.h"
#include "runtime/exec_result.h"

namespace lsb::monitor {
namespace {

using nlohmann::json;

std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Status CheckOne(const char* param, const std::string& value, const std::vector<std::string>& valid) {
  if (value.empty() || std::find(valid.begin(), valid.end(), value) != valid.end()) return OkStatus();
  std::string list;
  for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
  return Error{std::string(param) + ": '" + value + "' is not one of " + (list.empty() ? "(none)" : list)};
}

}  // namespace

FilterChoices BuiltinFilterChoices(std::vector<std::string> policies) {
  FilterChoices c;
  c.policies = std::move(policies);
  for (ExecStatus s : protocol::AllExecStatuses()) c.statuses.emplace_back(ExecStatusName(s));
  c.statuses.emplace_back("sandbox_error");  // the monitor's status when the sandbox failed
  for (const auto& r : protocol::AlertRules()) c.rules.push_back(r.name);
  return c;
}

bool ExecutionFilter::Matches(const json& e) const {
  if (!e.is_object()) return false;
  if (!policy.empty() && StringField(e, "policy") != policy) return false;
  if (!status.empty() && StringField(e, "status") != status) return false;
  if (rule.empty()) return true;
  auto alerts = e.find("alerts");
  if (alerts == e.end() || !alerts->is_array()) return false;
  return std::any_of(alerts->begin(), alerts->end(),
                     [&](const json& a) { return a.is_object() && StringField(a, "rule") == rule; });
}

Result<ExecutionFilter> MakeExecutionFilter(std::string policy, std::string status, std::string rule,
                                            const FilterChoices& choices) {
  LSB_TRY(CheckOne("policy", policy, choices.policies));
  LSB_TRY(CheckOne("status", status, choices.statuses));
  LSB_TRY(CheckOne("rule", rule, choices.rules));
  return ExecutionFilter{std::move(policy), std::move(status), std::move(rule)};
}

}  // namespace lsb::monitor
