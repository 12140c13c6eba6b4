// GET /v1/policies and GET /v1/policies/{name}: the daemon's policies and, per control, how each
// backend enforces it (the `policy explain` view), and whether this daemon's backend can run each
// (policy_runnable.h).
#include "runtime/policy_explain.h"
#include "runtime/build_plan.h"
#include "policy/languages.h"
#include "server/json_codec.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

std::string How(const Enforcement& e) { return e.enforced() ? e.how : "not enforced: " + e.how; }

// What container.build made for `p`, once built: the backend's record of its last build (native:
// the image store's; Docker: the built image's labels). nullopt before, and without a build.
std::optional<BuildRecord> BuiltContents(const ServerContext& ctx, const Policy& p) {
  if (p.build.empty()) return std::nullopt;
  return ctx.backend.BuildRecordOf(p);
}

// container.build: what the policy asks for and, once built, what its environment has (python,
// packages; docs/api.md). Null without a build.
json Environment(const ServerContext& ctx, const Policy& p) {
  if (p.build.empty()) return nullptr;
  json files = json::array();
  for (const auto& f : p.build.files) files.push_back({{"target", f.target}, {"source", f.source}});
  json env = {{"apt", p.build.apt}, {"apt_sources", p.build.apt_sources},
              {"pip", p.build.pip}, {"pip_index_url", p.build.pip_index_url}, {"files", files},
              {"run", p.build.run}, {"built", false}};
  auto built = BuiltContents(ctx, p);
  if (!built) return env;
  env["built"] = true;
  env["image"] = built->reference;
  env["python"] = built->python;
  env["packages"] = NameVersionObjects(built->packages);
  env["apt_packages"] = NameVersionObjects(built->apt);
  return env;
}

// "name version" of each pair (GET /v1/policies lists them flat for the tools).
json NamesWithVersions(const NameVersions& pairs) {
  json names = json::array();
  for (const auto& [name, version] : pairs) names.push_back(name + " " + version);
  return names;
}

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
      json entry = {{"name", name}, {"description", p.description}, {"backend", Spelling(p.backend)},
                    {"network", p.network_enabled}, {"languages", langs},
                    {"default", name == ctx.limits.default_policy}, {"runnable", r.runnable}};
      if (!r.runnable) entry["reason"] = r.reason;
      if (!p.build.empty()) {  // built or not yet: the lists are there (empty before the build)
        auto built = BuiltContents(ctx, p);
        entry["packages"] = NamesWithVersions(built ? built->packages : NameVersions{});
        entry["apt_packages"] = NamesWithVersions(built ? built->apt : NameVersions{});
      }
      list.push_back(std::move(entry));
    }
    return JsonResponse(200, {{"policies", list}});
  });
  router.Add("GET", "/v1/policies/{name}", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    auto p = ctx.policies.Find(req.params.at("name"));
    if (!p) return ErrorResponse(NotFound("no policy named '" + req.params.at("name") + "'; GET /v1/policies lists them"));
    json explain = json::array();
    for (const auto& c : ExplainPolicy(*p))
      explain.push_back({{"control", c.row.label}, {"setting", c.row.setting}, {"source", c.row.source},
                         {"native", How(c.native)}, {"docker", How(c.docker)},
                         {"native_enforced", c.native.enforced()}, {"docker_enforced", c.docker.enforced()}});
    Runnability r = ctx.runnability.Of(ctx.policies, *p);
    json body = {{"name", p->name}, {"policy", PolicyJson(*p)}, {"explain", explain}, {"runnable", r.runnable}};
    if (!r.runnable) body["reason"] = r.reason;
    body["environment"] = Environment(ctx, *p);
    return JsonResponse(200, body);
  });
}

}  // namespace lsb::server
