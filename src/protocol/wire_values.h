// The enumerated values of the init protocol (docs/protocol.md): the box mode, a run's status, an
// alert's severity and rule, the stage of an init error. Each has ONE table in wire_values.cc that
// gives its JSON spelling, and host and init both include this file, so the two ends and the
// clients read the same words. The alert rule table also holds each rule's default severity and
// description: init raises a rule with that severity, the policy's monitoring.alerts may change it
// on the host (policy/alert_rules.h), docs and `policy explain` print the description.
//
// On the wire every value is the string it always was. A string that is not in its table is a
// protocol error (from_json throws std::invalid_argument naming the field and the valid words;
// ParseMessage's callers report it), never a silent default.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace lsb::protocol {

// BoxSetup.mode. kBuildRoot: init is in fresh user+mount namespaces (native backend) and
// assembles the root itself from `rootfs`, then pivots into it. kInPlace: the outer box already
// provides the mounts (Docker: ReadonlyRootfs, Tmpfs, masked /proc); init only adds Landlock,
// seccomp and its watch.
enum class BoxMode { kBuildRoot, kInPlace };

// ExitReport.status and every front end's result status. Init reports all but kOom, which only
// the outer box knows (the host refines the report with it), and kReset, which only a session's
// host knows (a reset preempted the execution: docs/api.md "Reset and snapshot").
enum class ExecStatus { kOk, kError, kTimeout, kOom, kKilled, kDenied, kOutputLimit, kReset };

// Event.severity, in rising order (webhooks compare them: --webhook-min-severity).
enum class Severity { kInfo, kWarning, kCritical };

// Event.rule: the built-in alert rules; kNone ("" on the wire) is a trace event, no alert.
enum class AlertRule {
  kNone,
  kNetworkAttempt,
  kDeniedExec,
  kEscapeSyscall,
  kOomKill,
  kPidsLimit,
  kTimeout,
  kOutputFlood,
  kInterpreterRestarted,
  kNetworkDenied,
};

// InitError.stage: where init failed. kSetup: building the box (it refused to start); kRun: one
// run could not be started as the policy says; kProtocol: the host sent something init cannot use.
enum class ErrorStage { kSetup, kRun, kProtocol };

// One row of the alert rule table.
struct AlertRuleInfo {
  AlertRule rule;
  const char* name;   // its wire spelling, "network_attempt"
  Severity severity;  // the default severity it is raised with
  // A run's outcome (timeout, output cap, OOM, pids): raised once per run, outside the alert
  // total of protocol/alert_coalescer.h.
  bool outcome;
  const char* what;  // one line for docs and explain
};

// The built-in rules, kNone left out, in table order.
std::span<const AlertRuleInfo> AlertRules();
const AlertRuleInfo& RuleInfo(AlertRule rule);  // kNone: {kNone, "", kInfo, false, ...}
inline Severity DefaultSeverity(AlertRule rule) { return RuleInfo(rule).severity; }

// Each enum's wire spelling, and back (nullopt: not a word of its table).
const char* Name(BoxMode v);
const char* Name(ExecStatus v);
const char* Name(Severity v);
const char* Name(AlertRule v);
const char* Name(ErrorStage v);
std::optional<BoxMode> ParseBoxMode(std::string_view s);
std::optional<ExecStatus> ParseExecStatus(std::string_view s);
std::optional<Severity> ParseSeverity(std::string_view s);
std::optional<AlertRule> ParseAlertRule(std::string_view s);
std::optional<ErrorStage> ParseErrorStage(std::string_view s);

// Every value of each enum, in table order (for lists of valid words).
std::span<const ExecStatus> AllExecStatuses();
std::span<const Severity> AllSeverities();

// JSON: the wire spelling; from_json throws std::invalid_argument for a word not in the table.
void to_json(nlohmann::json& j, BoxMode v);
void to_json(nlohmann::json& j, ExecStatus v);
void to_json(nlohmann::json& j, Severity v);
void to_json(nlohmann::json& j, AlertRule v);
void to_json(nlohmann::json& j, ErrorStage v);
void from_json(const nlohmann::json& j, BoxMode& v);
void from_json(const nlohmann::json& j, ExecStatus& v);
void from_json(const nlohmann::json& j, Severity& v);
void from_json(const nlohmann::json& j, AlertRule& v);
void from_json(const nlohmann::json& j, ErrorStage& v);

}  // namespace lsb::protocol
