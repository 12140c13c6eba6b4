#include "protocol/wire_values.h"

#include <array>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "base/enum_words.h"

namespace lsb::protocol {
namespace {

template <typename E>
using Word = EnumWord<E>;

constexpr std::array<Word<BoxMode>, 2> kBoxModes{{
    {BoxMode::kBuildRoot, "build_root"},
    {BoxMode::kInPlace, "in_place"},
}};

constexpr std::array<Word<ExecStatus>, 8> kExecStatuses{{
    {ExecStatus::kOk, "ok"},
    {ExecStatus::kError, "error"},
    {ExecStatus::kTimeout, "timeout"},
    {ExecStatus::kOom, "oom"},
    {ExecStatus::kKilled, "killed"},
    {ExecStatus::kDenied, "denied"},
    {ExecStatus::kOutputLimit, "output_limit"},
    {ExecStatus::kReset, "reset"},
}};

constexpr std::array<Word<Severity>, 3> kSeverities{{
    {Severity::kInfo, "info"},
    {Severity::kWarning, "warning"},
    {Severity::kCritical, "critical"},
}};

constexpr std::array<Word<ErrorStage>, 3> kErrorStages{{
    {ErrorStage::kSetup, "setup"},
    {ErrorStage::kRun, "run"},
    {ErrorStage::kProtocol, "protocol"},
}};

// The alert rules: the one place a rule, its default severity and its description are written.
// kNone first (the trace events' empty rule); AlertRules() leaves it out.
constexpr std::array<AlertRuleInfo, 10> kRules{{
    {AlertRule::kNone, "", Severity::kInfo, false, "a trace event (monitoring.trace), not an alert"},
    {AlertRule::kNetworkAttempt, "network_attempt", Severity::kWarning, false,
     "connect/sendto to an inet address while the network is off (names the address)"},
    {AlertRule::kDeniedExec, "denied_exec", Severity::kWarning, false,
     "exec of a file that is not in commands.allow, or is denied (path and argv)"},
    {AlertRule::kEscapeSyscall, "escape_syscall", Severity::kCritical, false,
     "a refused escape syscall: mount, unshare, setns, ptrace, bpf, chroot, ... (its name)"},
    {AlertRule::kOomKill, "oom_kill", Severity::kCritical, true, "the OOM killer acted at the memory limit"},
    {AlertRule::kPidsLimit, "pids_limit", Severity::kWarning, true, "process creation failed at the pids limit"},
    {AlertRule::kTimeout, "timeout", Severity::kWarning, true, "the program was killed at its timeout"},
    {AlertRule::kOutputFlood, "output_flood", Severity::kWarning, true, "the program was killed at the output cap"},
    {AlertRule::kInterpreterRestarted, "interpreter_restarted", Severity::kWarning, false,
     "a session's interpreter was restarted after a timeout (variables lost)"},
    {AlertRule::kNetworkDenied, "network_denied", Severity::kWarning, false,
     "the egress proxy refused a connection: a name or address the policy does not allow, a TLS name other "
     "than the CONNECT target, a limit (names the host)"},
}};

constexpr std::array<ExecStatus, 8> kAllExecStatuses{ExecStatus::kOk,     ExecStatus::kError,  ExecStatus::kTimeout,
                                                     ExecStatus::kOom,    ExecStatus::kKilled, ExecStatus::kDenied,
                                                     ExecStatus::kOutputLimit, ExecStatus::kReset};
constexpr std::array<Severity, 3> kAllSeverities{Severity::kInfo, Severity::kWarning, Severity::kCritical};

template <typename E, size_t N>
const char* NameIn(const std::array<Word<E>, N>& table, E v) {
  return WordOf<E>(table, v);  // "?": a missing row (wire_values_test checks every enumerator)
}

template <typename E, size_t N>
std::optional<E> ParseIn(const std::array<Word<E>, N>& table, std::string_view s) {
  return EnumOf<E>(table, s);
}

template <typename E, size_t N>
std::string Words(const std::array<Word<E>, N>& table) {
  std::string out;
  for (const auto& w : table) out += (out.empty() ? "" : ", ") + std::string("\"") + w.word + "\"";
  return out;
}

// `j` as a word of `table`, or std::invalid_argument naming `what` and the valid words.
template <typename E, size_t N>
E FromJson(const nlohmann::json& j, const std::array<Word<E>, N>& table, const char* what) {
  if (!j.is_string()) throw std::invalid_argument(std::string(what) + " must be a string, one of " + Words(table));
  const auto& s = j.get_ref<const std::string&>();
  if (auto v = ParseIn(table, s)) return *v;
  throw std::invalid_argument(std::string(what) + " \"" + s + "\" is not one of " + Words(table));
}

}  // namespace

std::span<const AlertRuleInfo> AlertRules() { return std::span<const AlertRuleInfo>(kRules).subspan(1); }

const AlertRuleInfo& RuleInfo(AlertRule rule) {
  for (const auto& r : kRules)
    if (r.rule == rule) return r;
  return kRules[0];  // not reached: every enumerator has its row (wire_values_test checks)
}

const char* Name(BoxMode v) { return NameIn(kBoxModes, v); }
const char* Name(ExecStatus v) { return NameIn(kExecStatuses, v); }
const char* Name(Severity v) { return NameIn(kSeverities, v); }
const char* Name(AlertRule v) { return RuleInfo(v).name; }
const char* Name(ErrorStage v) { return NameIn(kErrorStages, v); }

std::optional<BoxMode> ParseBoxMode(std::string_view s) { return ParseIn(kBoxModes, s); }
std::optional<ExecStatus> ParseExecStatus(std::string_view s) { return ParseIn(kExecStatuses, s); }
std::optional<Severity> ParseSeverity(std::string_view s) { return ParseIn(kSeverities, s); }
std::optional<ErrorStage> ParseErrorStage(std::string_view s) { return ParseIn(kErrorStages, s); }
std::optional<AlertRule> ParseAlertRule(std::string_view s) {
  for (const auto& r : kRules)
    if (s == r.name) return r.rule;
  return std::nullopt;
}

std::span<const ExecStatus> AllExecStatuses() { return kAllExecStatuses; }
std::span<const Severity> AllSeverities() { return kAllSeverities; }

void to_json(nlohmann::json& j, BoxMode v) { j = Name(v); }
void to_json(nlohmann::json& j, ExecStatus v) { j = Name(v); }
void to_json(nlohmann::json& j, Severity v) { j = Name(v); }
void to_json(nlohmann::json& j, AlertRule v) { j = Name(v); }
void to_json(nlohmann::json& j, ErrorStage v) { j = Name(v); }

void from_json(const nlohmann::json& j, BoxMode& v) { v = FromJson(j, kBoxModes, "mode"); }
void from_json(const nlohmann::json& j, ExecStatus& v) { v = FromJson(j, kExecStatuses, "status"); }
void from_json(const nlohmann::json& j, Severity& v) { v = FromJson(j, kSeverities, "severity"); }
void from_json(const nlohmann::json& j, ErrorStage& v) { v = FromJson(j, kErrorStages, "stage"); }
void from_json(const nlohmann::json& j, AlertRule& v) {
  if (j.is_string())
    if (auto r = ParseAlertRule(j.get_ref<const std::string&>())) {
      v = *r;
      return;
    }
  std::string words = "\"\" (a trace event)";
  for (const auto& r : AlertRules()) words += std::string(", \"") + r.name + "\"";
  throw std::invalid_argument("rule " + (j.is_string() ? "\"" + j.get<std::string>() + "\" is not one of " : std::string("must be a string, one of ")) + words);
}

}  // namespace lsb::protocol
