// JSON <-> request/response values of the API (docs/api.md). Every field error names the field:
// "timeout: must be a number of seconds". Unknown fields are refused, so a typo cannot silently
// drop a limit the caller meant to set.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/time_format.h"
#include "policy/policy.h"
#include "policy/tighten.h"
#include "runtime/exec_result.h"
#include "scheduler/session/session.h"
#include "server/api_error.h"

namespace lsb::server {

struct FileBody {
  std::string path;
  std::string data;  // decoded
  bool archive = false;  // archive_base64: `data` is a tar/tar.gz/tar.zst/zip unpacked under `path`
};

// The body of POST /v1/execute, a batch task, or (session = true) POST /v1/sessions/{id}/execute.
struct ExecuteBody {
  std::string code;
  std::string language;
  std::string policy;
  std::optional<std::string> stdin_data;
  // timeout, timeout_grace (may be 0: SIGKILL at the timeout), memory, cpu, network and
  // network_allow: the request's narrowing of its policy, applied by TightenPolicy.
  PolicyOverrides overrides;
  std::map<std::string, std::string> env;
  std::vector<FileBody> files;
  std::vector<std::string> command;  // instead of code (exactly one of them)
  std::vector<std::string> collect;  // glob patterns of files returned after the run
  bool outputs = true;               // rich outputs (scheduler/driver/rich_outputs.h); false: none
  std::optional<std::string> changes;  // a change set: "" every writable path, else that directory
};

struct SessionBody {
  std::string policy;
  std::string language;
  std::optional<uint64_t> idle_timeout_ms;
  std::optional<uint64_t> max_lifetime_ms;
  std::string setup;  // python run once when the interpreter starts (docs/api.md "Sessions")
  bool changes = false;  // keep a baseline for GET /v1/sessions/{id}/changes
};

// The limits of base/bounded_json.h for request bodies (JSON API and /mcp): depth and element
// count as there; bytes are the HTTP server's --max-body, checked before the body is read.
JsonLimits RequestJsonLimits();
// A refused JSON text as the API's error: 413 over a size limit, 400 otherwise. `what` names the
// text ("the request body").
ApiError JsonRefusal(const JsonError& e, const std::string& what);
// Parses a request body as a JSON object within RequestJsonLimits() (400/413 when it is not one).
ApiOr<nlohmann::json> ParseObject(const std::string& body);
// `where` prefixes field names in messages ("tasks[3].").
ApiOr<ExecuteBody> ParseExecuteBody(const nlohmann::json& j, bool session, const std::string& where = "");
ApiOr<SessionBody> ParseSessionBody(const nlohmann::json& j);

// `node`: the daemon's node name (--node-name), in every result; "" leaves it out.
nlohmann::json ExecResultJson(const ExecResult& r, const std::string& policy, const std::string& node = "");
nlohmann::json SessionJson(const sched::SessionInfo& s);
nlohmann::json PolicyJson(const Policy& p);
std::string Base64Decode(const std::string& in, bool* ok);

}  // namespace lsb::server
