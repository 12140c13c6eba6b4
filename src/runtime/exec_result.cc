#include "runtime/exec_result.h"

#include "base/base64.h"
#include "base/random_id.h"
#include "base/utf8.h"

namespace lsb {

nlohmann::json ExecResult::ToJson() const {
  nlohmann::json j;
  j["execution_id"] = execution_id;
  j["backend"] = backend;
  j["trust"] = trust;
  j["status"] = ExecStatusName(status);
  j["exit_code"] = exit_code;
  j["signal"] = signal;
  // Program output is bytes; JSON needs UTF-8: ToJsonText() replaces invalid sequences, and the
  // bytes themselves come as base64 next to the text when they are not valid UTF-8.
  SetOutputField(j, "stdout", stdout_data);
  SetOutputField(j, "stderr", stderr_data);
  j["truncated"] = truncated;
  j["duration_ms"] = duration_ms;
  j["cpu_ms"] = cpu_ms;
  j["memory_peak_bytes"] = memory_peak_bytes ? nlohmann::json(*memory_peak_bytes) : nlohmann::json(nullptr);
  j["alerts"] = nlohmann::json::array();
  for (const auto& a : alerts) j["alerts"].push_back(a);
  if (!outputs.empty()) j["outputs"] = outputs;
  if (changes) j["changes"] = *changes;
  if (!collected.empty()) {
    // Text when the bytes are UTF-8, else content_base64: the same shapes as the input `files`.
    j["collected"] = nlohmann::json::array();
    for (const auto& c : collected) {
      nlohmann::json f = {{"path", c.path}};
      if (!c.error.empty()) {
        f["error"] = c.error;
      } else {
        f["size"] = c.data.size();
        if (IsValidUtf8(c.data)) f["content"] = c.data;
        else f["content_base64"] = Base64Encode(c.data);
      }
      j["collected"].push_back(std::move(f));
    }
  }
  return j;
}

void SetOutputField(nlohmann::json& j, const std::string& key, std::string_view bytes) {
  j[key] = std::string(bytes);
  if (!IsValidUtf8(bytes)) j[key + "_base64"] = Base64Encode(bytes);
}

std::string ExecResult::ToJsonText(int indent) const {
  return ToJson().dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

int CliExitCode(const ExecResult& r) {
  switch (r.status) {
    case ExecStatus::kOk:
    case ExecStatus::kError: return r.exit_code >= 0 ? r.exit_code : 1;
    case ExecStatus::kTimeout: return protocol::kTimeoutExitCode;
    case ExecStatus::kOom: return 137;
    case ExecStatus::kKilled: return r.signal > 0 ? 128 + r.signal : (r.exit_code > 0 ? r.exit_code : 137);
    case ExecStatus::kDenied: return 126;
    case ExecStatus::kReset: return 137;  // SIGKILLed from outside, as a cancelled run
    case ExecStatus::kOutputLimit:
      if (r.signal > 0) return 128 + r.signal;
      return r.exit_code > 0 ? r.exit_code : 1;
  }
  return 1;
}

std::string NewExecutionId() { return RandomHex("ex-", 8); }

}  // namespace lsb
