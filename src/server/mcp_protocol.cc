#include "server/mcp_protocol.h"

#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "policy/suggest.h"
#include "server/api_error.h"
#include "server/json_codec.h"
#include "server/router.h"
#include "server/routes.h"

namespace lsb::server::mcp {
namespace {

using nlohmann::json;

// A stream for the in-process calls: they never ask for server-sent events.
class NoStream : public ResponseStream {
 public:
  bool Begin(int, const std::string&) override { return false; }
  bool Write(std::string_view) override { return false; }
};

json TextContent(const std::string& text) { return json::array({{{"type", "text"}, {"text", text}}}); }

json ToolError(const std::string& text) { return {{"content", TextContent(text)}, {"isError", true}}; }

// An API error answer as the words a model reads: "not_found (HTTP 404): no session ...".
json ApiFailure(const ApiAnswer& a) {
  std::string code = "error";
  std::string message = a.body.is_null() ? std::string() : a.body.dump();
  if (a.body.is_object() && a.body.contains("error") && a.body["error"].is_object()) {
    code = a.body["error"].value("code", code);
    message = a.body["error"].value("message", message);
  }
  return ToolError(code + " (HTTP " + std::to_string(a.status) + "): " + message);
}

bool Ok(const ApiAnswer& a) { return a.status >= 200 && a.status < 300; }

// An optional string argument: "" when absent; false when present but not a string.
bool OptString(const json& args, const char* name, std::string* out) {
  out->clear();
  if (!args.contains(name) || args[name].is_null()) return true;
  if (!args[name].is_string()) return false;
  *out = args[name].get<std::string>();
  return true;
}

// The ExecResult JSON of the API as the text a model reads, most useful part first.
std::string ExecText(const json& r) {
  std::ostringstream o;
  o << "status: " << r.value("status", "?") << ", exit code " << r.value("exit_code", -1);
  if (r.value("signal", 0)) o << " (signal " << r.value("signal", 0) << ")";
  o << ", " << r.value("duration_ms", 0) << " ms, policy " << r.value("policy", "?");
  if (r.value("truncated", false)) o << ", output truncated at the policy's cap";
  o << "\n";
  std::string out = r.value("stdout", "");
  std::string err = r.value("stderr", "");
  o << "--- stdout ---\n" << out << (out.empty() || out.back() == '\n' ? "" : "\n");
  if (!err.empty()) o << "--- stderr ---\n" << err << (err.back() == '\n' ? "" : "\n");
  if (r.contains("alerts") && r["alerts"].is_array() && !r["alerts"].empty()) {
    o << "--- alerts (what the sandbox refused or noticed) ---\n";
    for (const auto& a : r["alerts"])
      o << "[" << a.value("severity", "") << "] " << a.value("rule", "") << ": " << a.value("message", "") << "\n";
  }
  return o.str();
}

// The text, then each rich output (docs/api.md "Rich outputs") a model can take: images as MCP
// `image` content, the text forms of the others (a displayed value, an error entry) as text.
json ExecContent(const json& r, std::string text) {
  json images = json::array();
  if (r.contains("outputs") && r["outputs"].is_array()) {
    std::string more;
    for (const auto& o : r["outputs"]) {
      if (!o.is_object()) continue;
      bool image = false;
      for (const char* mime : {"image/png", "image/jpeg"})
        if (o.contains(mime) && o[mime].is_string() && !image) {
          images.push_back({{"type", "image"}, {"data", o[mime]}, {"mimeType", mime}});
          image = true;
        }
      if (o.contains("error") && o["error"].is_string()) more += "[output error] " + o["error"].get<std::string>() + "\n";
      else if (!image && o.contains("text/plain") && o["text/plain"].is_string()) more += o["text/plain"].get<std::string>() + "\n";
    }
    if (!more.empty()) text += "--- outputs ---\n" + more;
    if (!images.empty()) text += "(" + std::to_string(images.size()) + " image(s) follow)\n";
  }
  json content = TextContent(text);
  for (auto& i : images) content.push_back(std::move(i));
  return content;
}

json ExecOutcome(const ApiAnswer& a) {
  if (!Ok(a)) return ApiFailure(a);
  return {{"content", ExecContent(a.body, ExecText(a.body))}, {"structuredContent", a.body}, {"isError", false}};
}

// The policies a model may be offered: those this daemon's backend can run (GET /v1/policies marks
// the others `runnable: false`; offering them would only end in a refusal).
json PolicyList(const ApiCall& api) {
  ApiAnswer a = api("GET", "/v1/policies", nullptr);
  if (!Ok(a) || !a.body.is_object() || !a.body.contains("policies")) return json::array();
  json runnable = json::array();
  for (const auto& p : a.body["policies"])
    if (p.value("runnable", true)) runnable.push_back(p);
  return runnable;
}

std::string PolicyLine(const json& p) {
  std::string line = "- " + p.value("name", "?");
  if (p.value("default", false)) line += " (default)";
  std::string desc = p.value("description", "");
  if (!desc.empty()) line += ": " + desc;
  json langs = p.value("languages", json::array());
  if (!langs.empty()) {
    line += " [languages:";
    for (const auto& l : langs) line += " " + l.get<std::string>();
    line += "]";
  }
  if (p.value("network", false)) line += " [network on]";
  return line;
}

}  // namespace

const std::vector<std::string>& SupportedVersions() {
  static const std::vector<std::string> v = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return v;
}

bool IsSupportedVersion(const std::string& v) {
  for (const auto& s : SupportedVersions())
    if (s == v) return true;
  return false;
}

json ErrorMessage(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

ApiCall InProcessApi(ServerContext& ctx, const std::string& owner) {
  auto router = std::make_shared<Router>();
  AddExecuteRoutes(*router, ctx);
  AddSessionRoutes(*router, ctx);
  AddPolicyRoutes(*router, ctx);
  return [router, owner](const std::string& method, const std::string& path, const json& body) -> ApiAnswer {
    HttpRequest req;
    req.owner = owner;
    req.method = method;
    req.target = path;
    req.path = path;
    req.headers["content-type"] = "application/json";
    if (!body.is_null()) req.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    NoStream stream;
    Reply r = router->Dispatch(req, stream);
    ApiAnswer a;
    a.status = r.response.status;
    if (!r.response.body.empty()) {
      // The daemon's own answer, but it carries the box's output: parsed like any other text.
      ParsedJson parsed = ParseBoundedJson(r.response.body, {SIZE_MAX, kJsonMaxDepth, SIZE_MAX});
      a.body = parsed.ok() ? std::move(parsed).value() : json(r.response.body);
    }
    return a;
  };
}

ParsedJson ParseMessageText(std::string_view text, size_t max_bytes) {
  JsonLimits limits = RequestJsonLimits();
  limits.max_bytes = max_bytes;
  return ParseBoundedJson(text, limits);
}

json RefusalMessage(const JsonError& e) {
  if (e.kind == JsonErrorKind::kSyntax)
    return ErrorMessage(nullptr, kParseError, "parse error: the message is " + e.message);
  return ErrorMessage(nullptr, kInvalidRequest, "invalid request: " + e.message);
}

McpServer::McpServer(ApiCall api) : api_(std::move(api)) {}

std::optional<json> McpServer::HandleText(const std::string& text) {
  ParsedJson msg = ParseMessageText(text);
  if (!msg.ok()) return RefusalMessage(msg.error());
  return Handle(*msg);
}

std::optional<json> McpServer::Handle(const json& message) {
  if (message.is_array()) {
    if (message.empty()) return ErrorMessage(nullptr, kInvalidRequest, "invalid request: empty batch");
    json answers = json::array();
    for (const auto& m : message) {
      bool has = false;
      json a = HandleOne(m, &has);
      if (has) answers.push_back(std::move(a));
    }
    if (answers.empty()) return std::nullopt;
    return answers;
  }
  bool has = false;
  json a = HandleOne(message, &has);
  if (!has) return std::nullopt;
  return a;
}

json McpServer::HandleOne(const json& m, bool* has_answer) {
  *has_answer = true;
  if (!m.is_object()) return ErrorMessage(nullptr, kInvalidRequest, "invalid request: a message is a JSON object");
  // Members are looked at in place, never copied: a message's values are the sender's, and only
  // the id (a string or an integer) is echoed back.
  const json* raw_id = m.contains("id") ? &m["id"] : nullptr;
  bool id_ok = raw_id && (raw_id->is_string() || raw_id->is_number_integer() || raw_id->is_number_unsigned());
  json id = id_ok ? *raw_id : json(nullptr);
  auto version = m.find("jsonrpc");
  if (version == m.end() || *version != "2.0")
    return ErrorMessage(id_ok ? id : json(nullptr), kInvalidRequest, "invalid request: \"jsonrpc\" must be \"2.0\"");
  if (!m.contains("method")) {
    // A response to a request of ours (we send none) or junk.
    if (m.contains("result") || m.contains("error")) {
      *has_answer = false;
      return nullptr;
    }
    return ErrorMessage(id_ok ? id : json(nullptr), kInvalidRequest, "invalid request: no \"method\"");
  }
  if (!m["method"].is_string())
    return ErrorMessage(id_ok ? id : json(nullptr), kInvalidRequest, "invalid request: \"method\" must be a string");
  std::string method = m["method"].get<std::string>();
  if (!m.contains("id")) {  // a notification: never answered (initialized, cancelled, ...)
    *has_answer = false;
    return nullptr;
  }
  if (!id_ok) return ErrorMessage(nullptr, kInvalidRequest, "invalid request: \"id\" must be a string or an integer");
  static const json kNoParams = json::object();
  const json& params = m.contains("params") ? m["params"] : kNoParams;
  if (!params.is_object())
    return ErrorMessage(id, kInvalidParams, "invalid params: \"params\" must be an object");
  auto result = [&](json r) { return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(r)}}; };
  try {
    if (method == "initialize") {
      if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string())
        return ErrorMessage(id, kInvalidParams, "invalid params: initialize needs \"protocolVersion\" (a string)");
      return result(Initialize(params));
    }
    if (method == "ping") return result(json::object());
    if (method == "tools/list") return result({{"tools", Tools()}});
    if (method == "tools/call") {
      bool rpc_error = false;
      json r = CallTool(id, params, &rpc_error);
      return rpc_error ? r : result(std::move(r));
    }
    return ErrorMessage(id, kMethodNotFound, "method not found: " + method +
                                                 " (this server offers initialize, ping, tools/list, tools/call)");
  } catch (const std::exception& e) {
    return ErrorMessage(id, kInternalError, std::string("internal error: ") + e.what());
  }
}

json McpServer::Initialize(const json& params) {
  std::string asked = params["protocolVersion"].get<std::string>();
  std::string version = IsSupportedVersion(asked) ? asked : SupportedVersions().front();
  return {{"protocolVersion", version},
          {"capabilities", {{"tools", json::object()}}},
          {"serverInfo", {{"name", "llm-sandbox"}, {"title", "LLM Sandbox"}, {"version", LSB_VERSION}}},
          {"instructions",
           "Runs code in isolated sandboxes governed by the operator's policies. execute_code runs one "
           "program in a fresh sandbox; session_create/session_execute keep state (variables, files) "
           "across calls; list_policies tells what each policy allows."}};
}

json McpServer::Tools() {
  json policies = PolicyList(api_);
  json names = json::array();
  std::string lines;
  for (const auto& p : policies) {
    names.push_back(p.value("name", ""));
    lines += "\n" + PolicyLine(p);
  }
  json policy_prop = {{"type", "string"},
                      {"description", "The sandbox policy to run under (omit for the default). Policies:" + lines}};
  if (!names.empty()) policy_prop["enum"] = names;
  json language_prop = {{"type", "string"},
                        {"description", "The language, e.g. \"python\" (omit for the policy's default language)"}};
  auto object = [](json props, json required) {
    json s = {{"type", "object"}, {"properties", std::move(props)}, {"additionalProperties", false}};
    if (!required.empty()) s["required"] = std::move(required);
    return s;
  };
  json tools = json::array();
  tools.push_back(
      {{"name", "execute_code"},
       {"title", "Run code in a sandbox"},
       {"description",
        "Run a program in a fresh, isolated sandbox and return its stdout, stderr, exit code, status "
        "and the alerts for what the sandbox refused (e.g. a denied exec or network attempt). Nothing "
        "persists between calls; use session_create for state. Choose the policy that fits the task:" +
            lines},
       {"inputSchema",
        object({{"code", {{"type", "string"}, {"description", "The program's source code"}}},
                {"language", language_prop},
                {"policy", policy_prop}},
               {"code"})}});
  tools.push_back({{"name", "list_policies"},
                   {"title", "List sandbox policies"},
                   {"description", "The sandbox policies this server allows: name, what each is for, its "
                                   "languages, whether it has network, and which is the default."},
                   {"inputSchema", object(json::object(), json::array())}});
  tools.push_back({{"name", "session_create"},
                   {"title", "Open a sandbox session"},
                   {"description", "Open a sandbox that keeps its state (interpreter variables, files in "
                                   "/tmp) across session_execute calls; returns its session_id. Close it "
                                   "with session_close when done (idle sessions expire). Policies:" +
                                       lines},
                   {"inputSchema", object({{"policy", policy_prop}, {"language", language_prop}}, json::array())}});
  tools.push_back(
      {{"name", "session_execute"},
       {"title", "Run code in a session"},
       {"description", "Run code in an open session (session_create); variables and files from earlier "
                       "calls in the same session are still there. Returns output, exit code, status, alerts."},
       {"inputSchema", object({{"session_id", {{"type", "string"}, {"description", "From session_create"}}},
                               {"code", {{"type", "string"}, {"description", "The code to run"}}}},
                              {"session_id", "code"})}});
  tools.push_back({{"name", "session_close"},
                   {"title", "Close a sandbox session"},
                   {"description", "Close a session and destroy its sandbox."},
                   {"inputSchema", object({{"session_id", {{"type", "string"}, {"description", "From session_create"}}}},
                                          {"session_id"})}});
  return tools;
}

json McpServer::CallTool(const json& id, const json& params, bool* rpc_error) {
  if (!params.contains("name") || !params["name"].is_string()) {
    *rpc_error = true;
    return ErrorMessage(id, kInvalidParams, "invalid params: tools/call needs \"name\" (a string)");
  }
  static const json kNoArguments = json::object();
  const json& args =
      params.contains("arguments") && !params["arguments"].is_null() ? params["arguments"] : kNoArguments;
  if (!args.is_object()) {
    *rpc_error = true;
    return ErrorMessage(id, kInvalidParams, "invalid params: \"arguments\" must be an object");
  }
  std::string name = params["name"].get<std::string>();
  // An argument a tool does not take is refused, never dropped: a caller that passed `env` must
  // not believe it reached the program (docs/security.md, Class 8).
  static const std::map<std::string, std::set<std::string>> kArguments = {
      {"execute_code", {"code", "language", "policy"}}, {"list_policies", {}},
      {"session_create", {"policy", "language"}},       {"session_execute", {"session_id", "code"}},
      {"session_close", {"session_id"}}};
  if (auto tool = kArguments.find(name); tool != kArguments.end()) {
    for (const auto& [k, _] : args.items()) {
      if (tool->second.count(k)) continue;
      std::string takes;
      for (const auto& t : tool->second) takes += (takes.empty() ? "" : ", ") + t;
      std::string guess = ClosestMatch(k, {tool->second.begin(), tool->second.end()});
      return ToolError(k + ": not an argument of " + name + (guess.empty() ? "" : "; did you mean '" + guess + "'?") +
                       " (it takes: " + (takes.empty() ? "none" : takes) + ")");
    }
  }
  if (name == "execute_code") return ExecuteCode(args);
  if (name == "list_policies") return ListPolicies();
  if (name == "session_create") return SessionCreate(args);
  if (name == "session_execute") return SessionExecute(args);
  if (name == "session_close") return SessionClose(args);
  *rpc_error = true;
  return ErrorMessage(id, kInvalidParams,
                      "invalid params: unknown tool '" + name +
                          "' (tools: execute_code, list_policies, session_create, session_execute, session_close)");
}

json McpServer::ExecuteCode(const json& args) {
  if (!args.contains("code") || !args["code"].is_string()) return ToolError("code: required, a string");
  std::string language, policy;
  if (!OptString(args, "language", &language)) return ToolError("language: must be a string");
  if (!OptString(args, "policy", &policy)) return ToolError("policy: must be a string");
  json body = {{"code", args["code"]}};
  if (!language.empty()) body["language"] = language;
  if (!policy.empty()) body["policy"] = policy;
  return ExecOutcome(api_("POST", "/v1/execute", body));
}

json McpServer::ListPolicies() {
  ApiAnswer a = api_("GET", "/v1/policies", nullptr);
  if (!Ok(a)) return ApiFailure(a);
  std::string text = "Policies:";
  std::string elsewhere;
  for (const auto& p : a.body.value("policies", json::array())) {
    if (p.value("runnable", true))
      text += "\n" + PolicyLine(p);
    else
      elsewhere += (elsewhere.empty() ? "" : ", ") + p.value("name", "?");
  }
  if (!elsewhere.empty()) text += "\nNot runnable on this server's backend (do not choose): " + elsewhere;
  return {{"content", TextContent(text)}, {"structuredContent", a.body}, {"isError", false}};
}

json McpServer::SessionCreate(const json& args) {
  std::string language, policy;
  if (!OptString(args, "language", &language)) return ToolError("language: must be a string");
  if (!OptString(args, "policy", &policy)) return ToolError("policy: must be a string");
  json body = json::object();
  if (!language.empty()) body["language"] = language;
  if (!policy.empty()) body["policy"] = policy;
  ApiAnswer a = api_("POST", "/v1/sessions", body);
  if (!Ok(a)) return ApiFailure(a);
  std::string sid = a.body.value("session_id", "");
  return {{"content", TextContent("session_id: " + sid + " (policy " + a.body.value("policy", "?") + ", language " +
                                  a.body.value("language", "?") + ", expires " + a.body.value("expires_at", "?") +
                                  " unless used)")},
          {"structuredContent", a.body},
          {"isError", false}};
}

// Session ids go into a URL path: only the characters the daemon's ids use.
static bool SafeId(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  return true;
}

json McpServer::SessionExecute(const json& args) {
  if (!args.contains("session_id") || !args["session_id"].is_string()) return ToolError("session_id: required, a string");
  if (!args.contains("code") || !args["code"].is_string()) return ToolError("code: required, a string");
  std::string sid = args["session_id"].get<std::string>();
  if (!SafeId(sid)) return ToolError("session_id: no session '" + sid + "'");
  return ExecOutcome(api_("POST", "/v1/sessions/" + sid + "/execute", {{"code", args["code"]}}));
}

json McpServer::SessionClose(const json& args) {
  if (!args.contains("session_id") || !args["session_id"].is_string()) return ToolError("session_id: required, a string");
  std::string sid = args["session_id"].get<std::string>();
  if (!SafeId(sid)) return ToolError("session_id: no session '" + sid + "'");
  ApiAnswer a = api_("DELETE", "/v1/sessions/" + sid, nullptr);
  if (!Ok(a)) return ApiFailure(a);
  return {{"content", TextContent("session " + sid + " closed")}, {"isError", false}};
}

}  // namespace lsb::server::mcp
