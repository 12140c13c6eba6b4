// The outcome of one execution, as every front end reports it (CLI --json, HTTP API, audit log).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/messages.h"

namespace lsb {

// One enum and one table for the host's results and init's ExitReport (protocol/wire_values.h).
using protocol::ExecStatus;
// "ok", "error", "timeout", "oom", "killed", "denied", "output_limit", "reset" (a session execution a reset ended)
inline const char* ExecStatusName(ExecStatus s) { return protocol::Name(s); }
inline std::optional<ExecStatus> ParseExecStatus(std::string_view name) { return protocol::ParseExecStatus(name); }

// A file `collect` returned after the program ended (docs/api.md "Files out"): its bytes, or why
// it could not be returned (error set, data empty). `path` is the path in the box, or the pattern
// when nothing matched it.
struct CollectedFile {
  std::string path;
  std::string data;
  std::string error;
};

struct ExecResult {
  // `stdout`/`stderr` are macros in <cstdio>, hence the suffix; JSON keys are "stdout"/"stderr".
  std::string stdout_data;
  std::string stderr_data;
  int exit_code = -1;       // the program's exit code, or 128+signal when killed
  int signal = 0;
  ExecStatus status = ExecStatus::kError;
  uint64_t duration_ms = 0;
  uint64_t cpu_ms = 0;
  std::optional<uint64_t> memory_peak_bytes;
  std::vector<protocol::Event> alerts;
  bool truncated = false;   // stdout/stderr were cut at the policy's output cap
  std::string execution_id;
  std::string backend;
  // What the record can be trusted for (docs/security.md, Class 9). "execution": a fresh box ran
  // this program alone. "session": earlier executions of the session shared the box (its files)
  // and, for python, the interpreter that ran this code and reported its stdout, stderr and exit
  // code, so they could have forged those; status timeout/oom/killed, alerts and usage come from
  // init and the backend, outside any program's reach, and hold either way.
  std::string trust = "execution";
  // Rich outputs (docs/api.md): each an object {mime type: data} or {"error": why}, checked.
  std::vector<nlohmann::json> outputs;
  std::optional<nlohmann::json> changes;  // the request's change set (scheduler/changes/change_set.h)
  std::vector<CollectedFile> collected;  // the request's `collect`, in pattern order ("collected" in JSON when asked)

  nlohmann::json ToJson() const;
  // ToJson() as text; program output that is not valid UTF-8 is replaced (U+FFFD), never a throw.
  std::string ToJsonText(int indent = -1) const;
};

// Program output as JSON (docs/api.md "Binary output"): j[key] is the text (invalid UTF-8 replaced
// by U+FFFD when dumped), and when the bytes are not valid UTF-8 j[key + "_base64"] holds them
// exactly. Used for stdout/stderr of every result and for the data of streamed output events.
void SetOutputField(nlohmann::json& j, const std::string& key, std::string_view bytes);

// The exit code `llm-sandbox run` uses for a result: the program's own for ok/error; 124 timeout;
// 137 oom; 128+signal killed; 126 denied; output_limit: the program's (128+signal when it was
// killed at the cap).
int CliExitCode(const ExecResult& r);

// A fresh random id ("ex-" + 16 hex digits).
std::string NewExecutionId();

}  // namespace lsb
