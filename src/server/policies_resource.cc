// GET /v1/policies and GET /v1/policies/{name}: the daemon's policies and, per control, how each
// backend enforces it (the `policy explain` view).
#include "policy/explain.h"
#include "policy/languages.h"
#include "server/json_codec.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

std::string How(const Enforcement& e) { return e.enforced ? e.how : "not enforced: " + e.how; }

}  // namespace

void AddPolicyRoutes(Router& router, ServerContext& ctx) {
  router.Add("GET", "/v1/policies", [&ctx](HttpRequest&, ResponseStream&) -> Reply {
    json list = json::array();
    for (const auto& [name, p] : *ctx.policies.Snapshot()) {
      json langs = json::array();
      // Only the languages this policy can actually run (interpreter allowed, not denied).
      for (const auto& [l, lang] : p.languages)
        if (CheckLanguageRunnable(p, lang).ok()) langs.push_back(l);
      list.push_back({{"name", name}, {"description", p.description}, {"backend", p.backend},
                      {"network", p.network_enabled}, {"languages", langs},
                      {"default", name == ctx.limits.default_policy}});
    }
    return JsonResponse(200, {{"policies", list}});
  });
  router.Add("GET", "/v1/policies/{name}", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    auto p = ctx.policies.Find(req.params.at("name"));
    if (!p) return ErrorResponse(NotFound("no policy named '" + req.params.at("name") + "'; GET /v1/policies lists them"));
    json explain = json::array();
    for (const auto& c : ExplainPolicy(*p))
      explain.push_back({{"control", c.control}, {"setting", c.setting}, {"source", c.source},
                         {"native", How(c.native)}, {"docker", How(c.docker)},
                         {"native_enforced", c.native.enforced}, {"docker_enforced", c.docker.enforced}});
    return JsonResponse(200, {{"name", p->name}, {"policy", PolicyJson(*p)}, {"explain", explain}});
  });
}

}  // namespace lsb::server
