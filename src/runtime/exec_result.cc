#include "runtime/exec_result.h"

#include "base/random_id.h"

namespace lsb {

const char* ExecStatusName(ExecStatus s) {
  switch (s) {
    case ExecStatus::kOk: return "ok";
    case ExecStatus::kError: return "error";
    case ExecStatus::kTimeout: return "timeout";
    case ExecStatus::kOom: return "oom";
    case ExecStatus::kKilled: return "killed";
    case ExecStatus::kDenied: return "denied";
    case ExecStatus::kOutputLimit: return "output_limit";
  }
  return "error";
}

std::optional<ExecStatus> ParseExecStatus(std::string_view name) {
  for (auto s : {ExecStatus::kOk, ExecStatus::kError, ExecStatus::kTimeout, ExecStatus::kOom,
                 ExecStatus::kKilled, ExecStatus::kDenied, ExecStatus::kOutputLimit})
    if (name == ExecStatusName(s)) return s;
  return std::nullopt;
}

nlohmann::json ExecResult::ToJson() const {
  nlohmann::json j;
  j["execution_id"] = execution_id;
  j["backend"] = backend;
  j["trust"] = trust;
  j["status"] = ExecStatusName(status);
  j["exit_code"] = exit_code;
  j["signal"] = signal;
  // Program output is bytes; JSON needs UTF-8: ToJsonText() replaces invalid sequences.
  j["stdout"] = stdout_data;
  j["stderr"] = stderr_data;
  j["truncated"] = truncated;
  j["duration_ms"] = duration_ms;
  j["cpu_ms"] = cpu_ms;
  j["memory_peak_bytes"] = memory_peak_bytes ? nlohmann::json(*memory_peak_bytes) : nlohmann::json(nullptr);
  j["alerts"] = nlohmann::json::array();
  for (const auto& a : alerts) j["alerts"].push_back(a);
  return j;
}

std::string ExecResult::ToJsonText(int indent) const {
  return ToJson().dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

int CliExitCode(const ExecResult& r) {
  switch (r.status) {
    case ExecStatus::kOk:
    case ExecStatus::kError: return r.exit_code >= 0 ? r.exit_code : 1;
    case ExecStatus::kTimeout: return 124;
    case ExecStatus::kOom: return 137;
    case ExecStatus::kKilled: return r.signal > 0 ? 128 + r.signal : (r.exit_code > 0 ? r.exit_code : 137);
    case ExecStatus::kDenied: return 126;
    case ExecStatus::kOutputLimit:
      if (r.signal > 0) return 128 + r.signal;
      return r.exit_code > 0 ? r.exit_code : 1;
  }
  return 1;
}

std::string NewExecutionId() { return RandomHex("ex-", 8); }

}  // namespace lsb
