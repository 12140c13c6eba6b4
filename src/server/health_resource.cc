// /healthz: the process answers. /readyz: it takes work (503 while shutting down), with the
// backend's name and what it holds now.
#include "base/time_format.h"
#include "scheduler/one_shot_pool.h"
#include "scheduler/session/session_pool.h"
#include "server/api_error.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

nlohmann::json SessionPoolJson(ServerContext& ctx) {
  const sched::SessionPool* p = ctx.boxes.session_pool();
  if (!p) return nullptr;
  auto s = p->stats();
  return {{"per_key", s.per_key}, {"keys", s.keys}, {"warm_boxes", s.ready}, {"hits", s.hits}, {"misses", s.misses},
          {"full", s.full}};
}

}  // namespace

void AddHealthRoutes(Router& router, ServerContext& ctx) {
  router.Add("GET", "/healthz", [](HttpRequest&, ResponseStream&) -> Reply {
    return JsonResponse(200, {{"status", "ok"}});
  });
  router.Add("GET", "/readyz", [&ctx](HttpRequest&, ResponseStream&) -> Reply {
    if (ctx.shutting_down) return ErrorResponse(FromAdmission(sched::Admission::kShuttingDown));
    // Whoever keeps the warm boxes (the backend, or the one-shot pool); zeros when none does.
    PoolStats pool = sched::WarmPoolStats(ctx.backend, ctx.boxes).value_or(PoolStats{});
    return JsonResponse(200, {{"status", "ready"},
                              {"node", ctx.node},
                              {"started_at", Rfc3339(ctx.started_at)},
                              {"backend", ctx.backend.name()},
                              {"policies", ctx.policies.Snapshot()->size()},
                              {"boxes", ctx.boxes.size()},
                              {"sessions", ctx.sessions.count()},
                              {"running", ctx.executor.running()},
                              {"queued", ctx.executor.queued()},
                              {"workers", ctx.executor.workers()},
                              // the warm pool, any backend's: boxes waiting, used ones waiting
                              // to be destroyed, boxes handed out warm / started cold
                              {"warm_boxes", pool.ready},
                              {"reaping", pool.reaping},
                              {"pool_hits", pool.hits},
                              {"pool_misses", pool.misses},
                              {"fork_servers", ctx.backend.ForkServers()},  // zygote boxes alive
                              // the warm session pool (--session-pool): sessions started set up / not
                              {"session_pool", SessionPoolJson(ctx)}});
  });
}

}  // namespace lsb::server
