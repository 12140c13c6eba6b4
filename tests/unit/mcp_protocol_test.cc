// The MCP JSON-RPC dispatch (server/mcp_protocol.h) on a fake API: version negotiation, errors,
// notifications, batches, tool schemas and tool results. The transports and the real API are
// tested end to end by tests/mcp (CTest integration_mcp).
#include "server/mcp_protocol.h"

#include <gtest/gtest.h>

namespace lsb::server::mcp {
namespace {

using nlohmann::json;

struct FakeApi {
  std::vector<std::string> calls;  // "METHOD path body"
  ApiCall Call() {
    return [this](const std::string& m, const std::string& path, const json& body) -> ApiAnswer {
      calls.push_back(m + " " + path + " " + body.dump());
      if (m == "GET" && path == "/v1/policies")
        return {200, {{"policies", json::array({{{"name", "code-sandbox"}, {"description", "general code"},
                                                 {"languages", {"python"}}, {"default", true}},
                                                {{"name", "strict"}, {"description", "no network, tight limits"},
                                                 {"languages", {"python"}}, {"default", false}},
                                                {{"name", "gvisor"}, {"description", "under runsc"},
                                                 {"languages", {"python"}}, {"default", false},
                                                 {"runnable", false}, {"reason", "native backend"}}})}}};
      if (m == "POST" && path == "/v1/execute") {
        if (body.value("policy", "") == "nope")
          return {404, {{"error", {{"code", "not_found"}, {"message", "no policy named 'nope'"}}}}};
        return {200, {{"stdout", "hi\n"}, {"stderr", ""}, {"exit_code", 0}, {"status", "ok"}, {"duration_ms", 5},
                      {"policy", "code-sandbox"},
                      {"alerts", json::array({{{"rule", "denied_exec"}, {"severity", "warning"},
                                               {"message", "exec of /bin/sh denied"}}})}}};
      }
      if (m == "POST" && path == "/v1/sessions") return {201, {{"session_id", "ses-1"}, {"policy", "code-sandbox"}}};
      if (m == "DELETE" && path == "/v1/sessions/ses-1") return {204, nullptr};
      return {404, {{"error", {{"code", "not_found"}, {"message", "no route"}}}}};
    };
  }
};

json Req(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

TEST(McpProtocol, InitializeNegotiatesTheVersion) {
  FakeApi api;
  McpServer s(api.Call());
  auto r = s.Handle(Req(1, "initialize", {{"protocolVersion", "2025-03-26"}, {"capabilities", json::object()}}));
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["id"], 1);
  EXPECT_EQ((*r)["result"]["protocolVersion"], "2025-03-26");
  EXPECT_TRUE((*r)["result"]["capabilities"]["tools"].is_object());
  EXPECT_EQ((*r)["result"]["serverInfo"]["name"], "llm-sandbox");
  r = s.Handle(Req(2, "initialize", {{"protocolVersion", "1999-01-01"}}));
  EXPECT_EQ((*r)["result"]["protocolVersion"], SupportedVersions().front());
  r = s.Handle(Req(3, "initialize", json::object()));
  EXPECT_EQ((*r)["error"]["code"], kInvalidParams);
}

TEST(McpProtocol, JsonRpcErrors) {
  FakeApi api;
  McpServer s(api.Call());
  auto r = s.HandleText("{oops");
  EXPECT_EQ((*r)["error"]["code"], kParseError);
  EXPECT_TRUE((*r)["id"].is_null());
  r = s.Handle(json{{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}});
  EXPECT_EQ((*r)["error"]["code"], kInvalidRequest);
  r = s.Handle(json{{"jsonrpc", "2.0"}, {"id", json::array()}, {"method", "ping"}});
  EXPECT_EQ((*r)["error"]["code"], kInvalidRequest);
  r = s.Handle(json(42));
  EXPECT_EQ((*r)["error"]["code"], kInvalidRequest);
  r = s.Handle(Req(7, "resources/list"));
  EXPECT_EQ((*r)["error"]["code"], kMethodNotFound);
  EXPECT_EQ((*r)["id"], 7);
  r = s.Handle(json{{"jsonrpc", "2.0"}, {"id", "a"}, {"method", "ping"}, {"params", 3}});
  EXPECT_EQ((*r)["error"]["code"], kInvalidParams);
  r = s.Handle(Req(8, "tools/call", {{"name", "rm_rf"}}));
  EXPECT_EQ((*r)["error"]["code"], kInvalidParams);
  r = s.Handle(Req(9, "tools/call", json::object()));
  EXPECT_EQ((*r)["error"]["code"], kInvalidParams);
}

TEST(McpProtocol, NotificationsAndResponsesGetNoAnswer) {
  FakeApi api;
  McpServer s(api.Call());
  EXPECT_FALSE(s.Handle(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
  EXPECT_FALSE(s.Handle(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}}));
  EXPECT_FALSE(s.Handle(json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", json::object()}}));
  auto r = s.Handle(json::array({json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, Req(4, "ping")}));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->is_array());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0]["id"], 4);
  EXPECT_EQ((*r)[0]["result"], json::object());
}

TEST(McpProtocol, ToolsListCarriesThePolicies) {
  FakeApi api;
  McpServer s(api.Call());
  auto r = s.Handle(Req(1, "tools/list"));
  const json& tools = (*r)["result"]["tools"];
  ASSERT_EQ(tools.size(), 5u);
  const json& exec = tools[0];
  EXPECT_EQ(exec["name"], "execute_code");
  EXPECT_EQ(exec["inputSchema"]["properties"]["policy"]["enum"], json({"code-sandbox", "strict"}));
  std::string desc = exec["description"];
  EXPECT_NE(desc.find("strict: no network, tight limits"), std::string::npos) << desc;
  EXPECT_NE(desc.find("code-sandbox (default)"), std::string::npos) << desc;
}

TEST(McpProtocol, PoliciesTheBackendCannotRunAreNotOffered) {
  FakeApi api;
  McpServer s(api.Call());
  json tools = s.Tools();
  for (const auto& t : tools) {
    if (!t["inputSchema"]["properties"].contains("policy")) continue;
    const json& policy = t["inputSchema"]["properties"]["policy"];
    EXPECT_EQ(policy["enum"], json::array({"code-sandbox", "strict"})) << t["name"];
    EXPECT_EQ(policy["description"].get<std::string>().find("gvisor"), std::string::npos) << t["name"];
    EXPECT_EQ(t["description"].get<std::string>().find("gvisor"), std::string::npos) << t["name"];
  }
  auto r = s.Handle(Req(1, "tools/call", {{"name", "list_policies"}, {"arguments", json::object()}}));
  std::string text = (*r)["result"]["content"][0]["text"];
  EXPECT_NE(text.find("- strict: no network"), std::string::npos) << text;
  EXPECT_NE(text.find("Not runnable on this server's backend (do not choose): gvisor"), std::string::npos) << text;
  EXPECT_EQ(text.find("- gvisor"), std::string::npos) << text;
}

TEST(McpProtocol, ExecuteCodeResultAndToolErrors) {
  FakeApi api;
  McpServer s(api.Call());
  auto r = s.Handle(Req(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "print('hi')"}}}}));
  const json& res = (*r)["result"];
  EXPECT_EQ(res["isError"], false);
  EXPECT_EQ(res["structuredContent"]["stdout"], "hi\n");
  std::string text = res["content"][0]["text"];
  EXPECT_NE(text.find("status: ok, exit code 0"), std::string::npos) << text;
  EXPECT_NE(text.find("denied_exec: exec of /bin/sh denied"), std::string::npos) << text;
  EXPECT_EQ(api.calls.back(), "POST /v1/execute {\"code\":\"print('hi')\"}");

  r = s.Handle(Req(2, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}, {"policy", "nope"}}}}));
  EXPECT_EQ((*r)["result"]["isError"], true);
  EXPECT_EQ((*r)["result"]["content"][0]["text"], "not_found (HTTP 404): no policy named 'nope'");

  r = s.Handle(Req(3, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", 5}}}}));
  EXPECT_EQ((*r)["result"]["isError"], true);
}

// An argument the tool does not take (env, memory...) is a tool error, never silently dropped, and
// nothing reaches the API.
TEST(McpProtocol, UnknownArgumentsAreRefusedNotDropped) {
  FakeApi api;
  McpServer s(api.Call());
  for (const auto& [tool, args] : std::vector<std::pair<std::string, json>>{
           {"execute_code", {{"code", "1"}, {"env", {{"LD_PRELOAD", "/x.so"}}}}},
           {"session_execute", {{"session_id", "ses-1"}, {"code", "1"}, {"env", {{"A", "b"}}}}},
           {"session_create", {{"memory", "1G"}}},
           {"list_policies", {{"x", 1}}}}) {
    size_t calls = api.calls.size();
    auto r = s.Handle(Req(1, "tools/call", {{"name", tool}, {"arguments", args}}));
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["result"]["isError"], true) << tool;
    std::string text = (*r)["result"]["content"][0]["text"];
    EXPECT_NE(text.find("not an argument of " + tool), std::string::npos) << text;
    EXPECT_EQ(api.calls.size(), calls) << tool;
  }
}

// Issue 37: a misspelled argument gets the policy loader's did-you-mean.
TEST(McpProtocol, AMisspelledArgumentSaysWhatWasMeant) {
  FakeApi api;
  McpServer s(api.Call());
  auto r = s.Handle(Req(1, "tools/call", {{"name", "execute_code"}, {"arguments", {{"code", "1"}, {"polcy", "x"}}}}));
  ASSERT_TRUE(r);
  std::string text = (*r)["result"]["content"][0]["text"];
  EXPECT_NE(text.find("polcy: not an argument of execute_code; did you mean 'policy'?"), std::string::npos) << text;
}

TEST(McpProtocol, SessionTools) {
  FakeApi api;
  McpServer s(api.Call());
  auto r = s.Handle(Req(1, "tools/call", {{"name", "session_create"}, {"arguments", {{"language", "python"}}}}));
  EXPECT_EQ((*r)["result"]["structuredContent"]["session_id"], "ses-1");
  EXPECT_EQ(api.calls.back(), "POST /v1/sessions {\"language\":\"python\"}");
  r = s.Handle(Req(2, "tools/call", {{"name", "session_close"}, {"arguments", {{"session_id", "ses-1"}}}}));
  EXPECT_EQ((*r)["result"]["isError"], false);
  // An id that could change the path never reaches the API.
  size_t n = api.calls.size();
  r = s.Handle(Req(3, "tools/call", {{"name", "session_execute"}, {"arguments", {{"session_id", "../x"}, {"code", "1"}}}}));
  EXPECT_EQ((*r)["result"]["isError"], true);
  EXPECT_EQ(api.calls.size(), n);
}

}  // namespace
}  // namespace lsb::server::mcp
