// The dashboard's filters over executions (docs/monitoring.md "Filters"): by policy, by status and
// by alert rule, the same on GET /v1/executions, GET /v1/history and in the page. A value outside
// the known set is refused with the list of valid ones (a typo must not look like "no matches").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace lsb::monitor {

// The values each filter accepts.
struct FilterChoices {
  std::vector<std::string> policies;  // the daemon's policies now
  std::vector<std::string> statuses;  // ExecStatusName()s and "sandbox_error"
  std::vector<std::string> rules;     // the built-in alert rules
};

// The statuses and rules every daemon knows; `policies` are the caller's to fill.
FilterChoices BuiltinFilterChoices(std::vector<std::string> policies);

struct ExecutionFilter {
  std::string policy, status, rule;  // "" = any

  bool empty() const { return policy.empty() && status.empty() && rule.empty(); }
  // `execution` is an execution's view or audit record: "policy", "status", "alerts": [{"rule"}].
  // A field of the wrong type does not match (the audit log is read back from a file).
  bool Matches(const nlohmann::json& execution) const;
};

// Checks each non-empty value against `choices`; the error names the parameter and lists the
// valid values ("status: 'bogus' is not one of ok, error, ...").
Result<ExecutionFilter> MakeExecutionFilter(std::string policy, std::string status, std::string rule,
                                            const FilterChoices& choices);

}  // namespace lsb::monitor
