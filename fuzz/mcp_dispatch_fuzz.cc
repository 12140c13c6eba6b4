// libFuzzer target: the MCP dispatcher, McpServer::HandleText — one JSON-RPC message text (a
// stdio line, a /mcp body) in, the reply out, as both transports use it. The REST API behind the
// tools is an in-process stand-in that answers like the daemon (policies, an execution that
// echoes the code, sessions, errors), so tools/call runs its whole path. Whatever the text, the
// reply is a JSON-RPC object (or batch array) that serializes, and nothing recurses on the input
// (a deep value must be refused by base/bounded_json.h, issue 15 class 1).
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "server/mcp_protocol.h"

#ifdef LSB_FUZZ_STANDALONE
// The standalone fuzz build links mcp_protocol.cc without the route files; InProcessApi (their
// only user) is never called here, so these only satisfy the linker.
namespace lsb::server {
class Router;
void AddExecuteRoutes(Router&, ServerContext&) {}
void AddSessionRoutes(Router&, ServerContext&) {}
void AddPolicyRoutes(Router&, ServerContext&) {}
}  // namespace lsb::server
#endif

namespace {

using nlohmann::json;
using lsb::server::mcp::ApiAnswer;

ApiAnswer FakeApi(const std::string& method, const std::string& path, const json& body) {
  if (method == "GET" && path == "/v1/policies")
    return {200, {{"policies", json::array({{{"name", "code-sandbox"}, {"default", true},
                                             {"description", "python"}, {"languages", {"python"}}}})}}};
  // The request body as the daemon would get it: serialized (the dump of values from the message).
  std::string sent = body.is_null() ? "" : body.dump(-1, ' ', false, json::error_handler_t::replace);
  if (path == "/v1/execute" || path.find("/execute") != std::string::npos) {
    if (sent.size() % 7 == 3) return {400, {{"error", {{"code", "bad_request"}, {"message", "code: too odd"}}}}};
    return {200, {{"status", "ok"}, {"exit_code", 0}, {"duration_ms", 1}, {"policy", "code-sandbox"},
                  {"stdout", body.value("code", "")}, {"stderr", ""}, {"alerts", json::array()}}};
  }
  if (method == "POST" && path == "/v1/sessions")
    return {201, {{"session_id", "s1"}, {"policy", "code-sandbox"}, {"language", "python"}, {"expires_at", "x"}}};
  if (method == "DELETE") return {path == "/v1/sessions/s1" ? 204 : 404, nullptr};
  return {404, {{"error", {{"code", "not_found"}, {"message", "no such route " + path}}}}};
}

bool IsRpcObject(const json& r) { return r.is_object() && r.contains("jsonrpc") && r["jsonrpc"] == "2.0"; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static lsb::server::mcp::McpServer server(FakeApi);
  std::string text(reinterpret_cast<const char*>(data), size);
  auto reply = server.HandleText(text);
  if (!reply) return 0;  // notifications and responses are not answered
  if (reply->is_array()) {
    if (reply->empty()) __builtin_trap();  // an all-notification batch gets no reply, not []
    for (const auto& r : *reply)
      if (!IsRpcObject(r)) __builtin_trap();
  } else if (!IsRpcObject(*reply)) {
    __builtin_trap();
  }
  // What the transports do with it next.
  std::string out = reply->dump(-1, ' ', false, json::error_handler_t::replace);
  if (out.empty()) __builtin_trap();
  return 0;
}
