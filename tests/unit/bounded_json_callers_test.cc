// Each parser of outside JSON goes through base/bounded_json.h and turns a refusal into its own
// error: the JSON API (400 / 413 naming the limit), the MCP dispatcher (-32600 / -32700, shared
// by stdio and /mcp), the init protocol (an exception the host and init catch) and the Docker
// engine client. Inputs 10^5 and 10^6 levels deep, which overflowed the stack in
// McpServer::HandleOne (a copy of "params"), are answered, not crashed on. Issue 15, class 1.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "protocol/messages.h"
#include "runtime/docker/engine_client.h"
#include "server/json_codec.h"
#include "server/mcp_protocol.h"

namespace lsb {
namespace {

using nlohmann::json;

std::string Nested(size_t n) { return std::string(n, '[') + std::string(n, ']'); }

std::string Wide(size_t n) {
  std::string s = "[0";
  for (size_t i = 1; i < n; ++i) s += ",0";
  return s + "]";
}

TEST(BoundedJsonCallers, ApiBodiesDeepIs400AndWideIs413) {
  for (size_t n : {size_t{65}, size_t{100000}, size_t{1000000}}) {
    auto r = server::ParseObject(R"({"code":"1","env":)" + Nested(n) + "}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(server::HttpStatus(r.error().code), 400);
    EXPECT_NE(r.error().message.find("the request body: "), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("limit of 64 levels"), std::string::npos) << r.error().message;
  }
  auto wide = server::ParseObject(R"({"code":"1","env":)" + Wide(kJsonMaxElements + 1) + "}");
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(server::HttpStatus(wide.error().code), 413);
  EXPECT_NE(wide.error().message.find("limit of 1048576"), std::string::npos) << wide.error().message;
  auto bad = server::ParseObject("{oops");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(server::HttpStatus(bad.error().code), 400);
  EXPECT_NE(bad.error().message.find("not valid JSON"), std::string::npos);
  // A deep-looking string is only a string.
  auto s = server::ParseObject(R"({"code":")" + std::string(100000, '[') + R"("})");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(server::ParseExecuteBody(*s, false).ok());
}

server::mcp::ApiAnswer EchoApi(const std::string&, const std::string&, const json& body) {
  return {200, {{"status", "ok"}, {"exit_code", 0}, {"stdout", body.dump()}, {"policy", "p"}}};
}

TEST(BoundedJsonCallers, McpDeepMessagesAreInvalidRequestsNamingTheLimit) {
  server::mcp::McpServer s(EchoApi);
  const std::string head = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":)";
  for (size_t n : {size_t{100000}, size_t{1000000}}) {
    for (const std::string& text : std::vector<std::string>{
          head + Nested(n) + "}",                                                             // params
          R"({"jsonrpc":"2.0","method":"initialize","id":)" + Nested(n) + "}",               // id
          R"({"jsonrpc":)" + Nested(n) + R"(,"id":1,"method":"ping"})",                       // jsonrpc
          R"({"jsonrpc":"2.0","id":1,"method":)" + Nested(n) + "}",                           // method
          head + R"({"name":"execute_code","arguments":{"code":"1","x":)" + Nested(n) + "}}}",  // arguments
          "[" + Nested(n) + "]",                                                              // batch
          std::string(n, '{')}) {                                                             // unclosed
      auto r = s.HandleText(text);
      ASSERT_TRUE(r);
      EXPECT_EQ((*r)["error"]["code"], server::mcp::kInvalidRequest) << r->dump();
      EXPECT_NE((*r)["error"]["message"].get<std::string>().find("limit of 64 levels"), std::string::npos);
      EXPECT_TRUE((*r)["id"].is_null());
    }
  }
  // The same message at the limit is served.
  auto ok = s.HandleText(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)" + Nested(62) + "}}");
  ASSERT_TRUE(ok);
  EXPECT_TRUE((*ok)["result"].is_object()) << ok->dump();
  auto wide = s.HandleText(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)" +
                           Wide(kJsonMaxElements + 1) + "}}");
  EXPECT_EQ((*wide)["error"]["code"], server::mcp::kInvalidRequest);
  EXPECT_NE((*wide)["error"]["message"].get<std::string>().find("limit of 1048576"), std::string::npos);
  auto bad = s.HandleText("{oops");
  EXPECT_EQ((*bad)["error"]["code"], server::mcp::kParseError);
  // The stdio transport's byte cap is named as such.
  auto big = server::mcp::ParseMessageText(std::string(100, ' ') + "1", 50);
  ASSERT_FALSE(big.ok());
  auto refusal = server::mcp::RefusalMessage(big.error());
  EXPECT_EQ(refusal["error"]["code"], server::mcp::kInvalidRequest);
  EXPECT_NE(refusal["error"]["message"].get<std::string>().find("limit of 50 bytes"), std::string::npos);
}

TEST(BoundedJsonCallers, McpArgumentsAreEchoedOnlyAsStrings) {
  // A tool's arguments reach the API serialized: only the code string, never the other values.
  std::string sent;
  server::mcp::McpServer s([&](const std::string&, const std::string&, const json& body) -> server::mcp::ApiAnswer {
    sent = body.dump();
    return {200, {{"status", "ok"}, {"exit_code", 0}, {"policy", "p"}}};
  });
  auto r = s.HandleText(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code",)"
                        R"("arguments":{"code":"x","junk":)" + Nested(60) + "}}}");
  ASSERT_TRUE(r);
  // An argument the tool does not take is refused by name (Class 8), so nothing reaches the API.
  EXPECT_EQ(sent, "");
  EXPECT_NE(r->dump().find("junk: not an argument of execute_code"), std::string::npos) << r->dump();
  // A deep value where a string belongs reaches the API only as what the tool reads of it.
  auto typed = s.HandleText(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code",)"
                            R"("arguments":{"code":"x","language":)" + Nested(60) + "}}}");
  ASSERT_TRUE(typed);
  EXPECT_EQ(sent.find('['), std::string::npos) << sent;
}

TEST(BoundedJsonCallers, InitMessagesDeepOrHugeAreRefused) {
  const std::string deep = R"({"kind":"exec","argv":)" + Nested(100000) + "}";
  try {
    (void)protocol::ParseMessage<protocol::Event>(deep);
    FAIL() << "a deep message was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 64 levels"), std::string::npos) << e.what();
  }
  const std::string huge = R"({"kind":"exec","message":")" + std::string(protocol::kMaxFramePayload, 'x') + R"("})";
  try {
    (void)protocol::ParseMessage<protocol::Event>(huge);
    FAIL() << "a message larger than a frame was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
  }
  auto ok = protocol::ParseMessage<protocol::Event>(R"({"kind":"exec","argv":["/bin/sh"]})");
  EXPECT_EQ(ok.argv.at(0), "/bin/sh");
}

TEST(BoundedJsonCallers, EngineAnswersAreBounded) {
  auto deep = docker::ParseEngineJson(R"({"Id":"x","Config":)" + Nested(100000) + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().kind, JsonErrorKind::kTooDeep);
  auto big = docker::ParseEngineJson(std::string(docker::kMaxBodyBytes + 1, ' '));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, JsonErrorKind::kTooLarge);
  auto ok = docker::ParseEngineJson(R"({"ApiVersion":"1.43","Components":[{"Name":"Engine","Details":{"a":{}}}]})");
  ASSERT_TRUE(ok.ok());
}

}  // namespace
}  // namespace lsb
