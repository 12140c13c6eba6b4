// The MCP server (Model Context Protocol): JSON-RPC 2.0 dispatch and the sandbox tools, shared by
// both transports: stdio (`llm-sandbox mcp`, src/cli/mcp_cmd.cc) and Streamable HTTP (`/mcp` on the
// daemon, mcp_resource.cc). Neither transport knows the tools; this file knows no transport.
//
// The tools do not reimplement the API: they call the daemon's own routes (POST /v1/execute,
// /v1/sessions..., GET /v1/policies) in process through an ApiCall, so policies, limits, errors,
// monitoring and sessions behave exactly as over HTTP. InProcessApi() builds that call on a
// ServerContext (the daemon's, or the one `llm-sandbox mcp` wires up); unit tests give a fake.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/server_context.h"

namespace lsb::server::mcp {

// JSON-RPC 2.0 error codes used here.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

// Protocol revisions this server speaks, newest first. An initialize naming one of them gets it
// back; any other gets the newest (the client then decides whether to go on).
const std::vector<std::string>& SupportedVersions();
bool IsSupportedVersion(const std::string& v);

// One answer of the REST API: the HTTP status and the parsed JSON body (null when empty).
struct ApiAnswer {
  int status = 500;
  nlohmann::json body;
};
using ApiCall = std::function<ApiAnswer(const std::string& method, const std::string& path, const nlohmann::json& body)>;

// The execute, session and policy routes of `ctx`, called in process (no socket, no auth: the
// transport in front already authorised the MCP request) as `owner` (HttpRequest::owner: the
// sessions and executions the tools make are its own). `ctx` must outlive the returned call.
ApiCall InProcessApi(ServerContext& ctx, const std::string& owner);

// {"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}}
nlohmann::json ErrorMessage(const nlohmann::json& id, int code, const std::string& message);

class McpServer {
 public:
  explicit McpServer(ApiCall api);

  // One parsed JSON-RPC message or batch (array). Returns the answer to send, or nullopt when
  // there is none (notifications, responses, a batch of only those). Thread-safe.
  std::optional<nlohmann::json> Handle(const nlohmann::json& message);
  // Text as received (one stdio line, one HTTP body): invalid JSON is answered with -32700.
  std::optional<nlohmann::json> HandleText(const std::string& text);

  // The tool definitions as tools/list returns them (policy names and descriptions filled in
  // from GET /v1/policies at call time, so a SIGHUP reload shows).
  nlohmann::json Tools();

 private:
  nlohmann::json HandleOne(const nlohmann::json& message, bool* has_answer);
  nlohmann::json Initialize(const nlohmann::json& params);
  nlohmann::json CallTool(const nlohmann::json& id, const nlohmann::json& params, bool* rpc_error);

  nlohmann::json ExecuteCode(const nlohmann::json& args);
  nlohmann::json ListPolicies();
  nlohmann::json SessionCreate(const nlohmann::json& args);
  nlohmann::json SessionExecute(const nlohmann::json& args);
  nlohmann::json SessionClose(const nlohmann::json& args);

  ApiCall api_;
};

}  // namespace lsb::server::mcp
