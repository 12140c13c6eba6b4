// /mcp: the MCP server over the Streamable HTTP transport (docs/api.md "MCP"). The tools and the
// JSON-RPC dispatch are mcp_protocol.cc's; this file is the transport only:
//   POST   /mcp  one JSON-RPC message (or batch) -> 200 application/json with the answer, or 202
//                with no body when it held only notifications/responses. An initialize request
//                opens an MCP session: the answer carries Mcp-Session-Id, which every later
//                request must send back (400 without it, 404 once it is unknown or deleted).
//   DELETE /mcp  ends the session named by Mcp-Session-Id (204).
//   GET    /mcp  not offered (405): this server sends no server-initiated messages.
// The bearer-token check and shutdown refusal happen in front of every route (daemon.cc). Without
// tokens, a browser page from another origin is refused (Origin must be a loopback host), so a
// DNS-rebinding page cannot drive a loopback daemon.

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "base/random_id.h"
#include "server/api_error.h"
#include "server/daemon.h"
#include "server/mcp_protocol.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxMcpSessions = 4096;  // past it the least recently used one is forgotten

class McpSessions {
 public:
  // A new session id (128 random bits, hex: visible ASCII as the spec asks), owned by `owner`.
  std::string Open(const std::string& version, const std::string& owner) {
    std::string id = RandomHex("", 16);
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.size() >= kMaxMcpSessions) {
      auto oldest = sessions_.begin();
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
        if (it->second.used < oldest->second.used) oldest = it;
      sessions_.erase(oldest);
    }
    sessions_[id] = {version, Clock::now(), owner};
    return id;
  }
  // The session's protocol version; nullopt when unknown or another owner's.
  std::optional<std::string> Touch(const std::string& id, const std::string& owner) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.owner != owner) return std::nullopt;
    it->second.used = Clock::now();
    return it->second.version;
  }
  bool Close(const std::string& id, const std::string& owner) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.owner != owner) return false;
    sessions_.erase(it);
    return true;
  }

 private:
  struct Entry {
    std::string version;
    Clock::time_point used;
    std::string owner;
  };
  std::mutex mu_;
  std::map<std::string, Entry> sessions_;
};

// One MCP server per owner, so that the tools act as the token that called them; bounded by the
// daemon's tokens (plus "" without tokens).
class McpServers {
 public:
  explicit McpServers(ServerContext& ctx) : ctx_(ctx) {}
  std::shared_ptr<mcp::McpServer> For(const std::string& owner) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = servers_[owner];
    if (!s) s = std::make_shared<mcp::McpServer>(mcp::InProcessApi(ctx_, owner));
    return s;
  }

 private:
  ServerContext& ctx_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<mcp::McpServer>> servers_;
};

HttpResponse RpcResponse(int status, const json& body) {
  HttpResponse res;
  res.status = status;
  res.content_type = "application/json";
  res.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return res;
}

bool LoopbackOrigin(const std::string& origin) {
  // scheme://host[:port]
  size_t p = origin.find("://");
  if (p == std::string::npos) return false;
  std::string host = origin.substr(p + 3);
  if (!host.empty() && host[0] == '[') {
    size_t e = host.find(']');
    host = e == std::string::npos ? host : host.substr(1, e - 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  return IsLoopback(host);
}

bool IsInitialize(const json& m) {
  auto one = [](const json& x) { return x.is_object() && x.value("method", json()) == "initialize" && x.contains("id"); };
  if (m.is_array()) {
    for (const auto& x : m)
      if (one(x)) return true;
    return false;
  }
  return one(m);
}

}  // namespace

void AddMcpRoutes(Router& router, ServerContext& ctx) {
  auto servers = std::make_shared<McpServers>(ctx);
  auto sessions = std::make_shared<McpSessions>();

  auto origin_ok = [&ctx](const HttpRequest& req) {
    std::string origin = req.Header("origin");
    return origin.empty() || !ctx.tokens.empty() || LoopbackOrigin(origin);
  };

  router.Add("POST", "/mcp", [servers, sessions, origin_ok](HttpRequest& req, ResponseStream&) -> Reply {
    if (!origin_ok(req))
      return RpcResponse(403, mcp::ErrorMessage(nullptr, mcp::kInvalidRequest,
                                                "Origin " + req.Header("origin") + " is not allowed"));
    json msg = json::parse(req.body, nullptr, false);
    if (msg.is_discarded())
      return RpcResponse(400, mcp::ErrorMessage(nullptr, mcp::kParseError, "parse error: the body is not valid JSON"));
    std::string sid = req.Header("mcp-session-id");
    std::string new_sid;
    auto server = servers->For(req.owner);
    if (IsInitialize(msg)) {
      auto answer = server->Handle(msg);
      if (!answer) return RpcResponse(400, mcp::ErrorMessage(nullptr, mcp::kInvalidRequest, "initialize is a request"));
      const json& first = answer->is_array() ? (*answer)[0] : *answer;
      if (first.contains("result")) new_sid = sessions->Open(first["result"].value("protocolVersion", ""), req.owner);
      HttpResponse res = RpcResponse(200, *answer);
      if (!new_sid.empty()) res.headers.emplace_back("Mcp-Session-Id", new_sid);
      return res;
    }
    if (sid.empty())
      return RpcResponse(400, mcp::ErrorMessage(nullptr, mcp::kInvalidRequest,
                                                "missing Mcp-Session-Id header: send initialize first and echo "
                                                "the Mcp-Session-Id it answers with"));
    if (!sessions->Touch(sid, req.owner))
      return RpcResponse(404, mcp::ErrorMessage(nullptr, mcp::kInvalidRequest,
                                                "unknown MCP session (it was deleted or forgotten); initialize again"));
    std::string version = req.Header("mcp-protocol-version");
    if (!version.empty() && !mcp::IsSupportedVersion(version))
      return RpcResponse(400, mcp::ErrorMessage(nullptr, mcp::kInvalidRequest,
                                                "unsupported MCP-Protocol-Version " + version));
    auto answer = server->Handle(msg);
    if (!answer) {
      HttpResponse res;
      res.status = 202;
      res.content_type = "application/json";
      return res;
    }
    return RpcResponse(200, *answer);
  });

  router.Add("DELETE", "/mcp", [sessions, origin_ok](HttpRequest& req, ResponseStream&) -> Reply {
    if (!origin_ok(req)) return ErrorResponse({ApiCode::kForbidden, "Origin " + req.Header("origin") + " is not allowed"});
    std::string sid = req.Header("mcp-session-id");
    if (sid.empty()) return ErrorResponse(BadRequest("missing Mcp-Session-Id header"));
    if (!sessions->Close(sid, req.owner)) return ErrorResponse(NotFound("unknown MCP session"));
    HttpResponse res;
    res.status = 204;
    res.content_type = "application/json";
    return res;
  });
}

}  // namespace lsb::server
