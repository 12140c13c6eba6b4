// GET /v1/policies and GET /v1/policies/{name}: the daemon's policies and, per control, how each
// backend enforces it (the `policy explain` view), and whether this daemon's backend can run each
// (policy_runnable.h).
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
    auto snapshot = ctx.policies.Snapshot();
    auto runnable = ctx.runnability.For(snapshot);
    for (const auto& [name, p] : *snapshot) {
      // Only the languages this policy can actually run (interpreter allowed, not denied).
      json langs = RunnableLanguages(p);
      const Runnability& r = runnable->at(name);
      json entry = {{"name", name}, {"description", p.description}, {"backend", p.backend},
                    {"network", p.network_enabled}, {"languages", langs},
                    {"default", name == ctx.limits.default_policy}, {"runnable", r.runnable}};
      if (!r.runnable) entry["reason"] = r.reason;
      list.push_back(std::move(entry));
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
    Runnability r = ctx.runnability.Of(ctx.policies, *p);
    json body = {{"name", p->name}, {"policy", PolicyJson(*p)}, {"explain", explain}, {"runnable", r.runnable}};
    if (!r.runnable) body["reason"] = r.reason;
    return JsonResponse(200, body);
  });
}

}  // namespace lsb::server
