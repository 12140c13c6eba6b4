#include "server/e2b/front_door.h"

namespace lsb::server::e2b {
namespace {

HttpResponse PlainError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = nlohmann::json{{"code", status}, {"message", message}}.dump();
  return r;
}

}  // namespace

std::string AccessToken(const HttpRequest& req) {
  std::string t = req.Header("x-access-token");
  return t.empty() ? req.Header("e2b-traffic-access-token") : t;
}

std::optional<SandboxTable::Found> DataTarget(SandboxTable& table, const HttpRequest& req) {
  std::string id = req.Header("e2b-sandbox-id");
  std::string token = AccessToken(req);
  if (id.empty() || token.empty()) return std::nullopt;
  return table.Authenticate(id, token);
}

FrontDoor::FrontDoor(ServerContext& ctx) : ctx_(ctx), table_(ctx.sessions) {
  AddEnvdRoutes(envd_, ctx_, table_);
  AddEnvdFileRoutes(envd_, ctx_, table_);
  AddInterpreterRoutes(interpreter_, ctx_, table_);
}

const Router* FrontDoor::PortRouter(const HttpRequest& req) const {
  std::string port = req.Header("e2b-sandbox-port");
  return port == std::to_string(kEnvdPort)          ? &envd_
         : port == std::to_string(kInterpreterPort) ? &interpreter_
                                                    : nullptr;
}

std::string FrontDoor::PatternOf(const HttpRequest& req) const {
  const Router* router = PortRouter(req);
  return router ? router->PatternOf(req) : std::string();
}

Reply FrontDoor::Dispatch(HttpRequest& req, ResponseStream& out) const {
  const Router* router = PortRouter(req);
  if (!router)
    return PlainError(502, "E2b-Sandbox-Port '" + req.Header("e2b-sandbox-port") +
                               "' is not served: this daemon serves envd on " + std::to_string(kEnvdPort) +
                               " and the code interpreter on " + std::to_string(kInterpreterPort) + " (docs/e2b.md)");
  if (AccessToken(req).empty())
    return PlainError(401, "the data plane needs the sandbox's access token in X-Access-Token or "
                           "E2B-Traffic-Access-Token (the create answer's envdAccessToken and "
                           "trafficAccessToken); this daemon creates every sandbox with one");
  auto target = DataTarget(table_, req);
  // Unknown id, another sandbox's token and a deleted sandbox answer alike: nothing to probe.
  if (!target) return PlainError(401, "no sandbox " + req.Header("e2b-sandbox-id") + " with this access token");
  req.owner = target->record.owner;
  return router->Dispatch(req, out);
}

}  // namespace lsb::server::e2b
