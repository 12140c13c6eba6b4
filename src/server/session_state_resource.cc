// Session state operations (docs/api.md "Reset and snapshot"): reset returns a session to the
// state after its creation or its last snapshot; snapshot moves that point to now. Both are
// operations on the session like an execute: one at a time (409 while another runs), the owner's
// sessions only (404 otherwise).
#include <optional>

#include "server/json_codec.h"
#include "server/routes.h"
#include "server/session_ops.h"

namespace lsb::server {
namespace {

using nlohmann::json;
using session_ops::Conflict;
using session_ops::Find;
using session_ops::OnSession;

// Neither route takes options yet: a body other than empty or {} is refused, not ignored.
std::optional<ApiError> CheckEmptyBody(const HttpRequest& req) {
  if (req.body.empty()) return std::nullopt;
  auto j = ParseObject(req.body);
  if (!j.ok()) return j.error();
  if (!j->empty()) return BadRequest(std::string(j->begin().key()) + ": unknown field (this route takes no body)");
  return std::nullopt;
}

Reply Reset(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  if (auto bad = CheckEmptyBody(req)) return ErrorResponse(*bad);
  sched::Session& session = **s;
  // A running operation is preempted, not waited for (an execute ends with status "reset").
  std::function<ApiOr<sched::ResetReport>()> task = [&]() -> ApiOr<sched::ResetReport> {
    bool preempted = false;
    sched::Session::Use use(session, sched::Session::Use::Preempting{}, &preempted);
    auto x = session.Reset();
    if (!x.ok()) return SandboxError("reset: " + x.error().message);
    x->preempted = preempted;
    return std::move(*x);
  };
  sched::Admission admission;
  auto ran = sched::RunOn<ApiOr<sched::ResetReport>>(ctx.executor, task, &admission);
  if (!ran) return ErrorResponse(FromAdmission(admission));
  auto& r = *ran;
  if (!r.ok()) return ErrorResponse(r.error());
  json reset = {{"mode", r->mode}, {"duration_ms", r->duration_ms}, {"duration_us", r->duration_us}};
  if (!r->why.empty()) reset["why"] = r->why;
  if (r->snapshot_lost) reset["snapshot_lost"] = true;
  if (r->preempted) reset["preempted"] = true;
  json body = SessionJson(session.Info());
  body["reset"] = reset;
  if (ctx.monitor)
    ctx.monitor->SessionEvent("session_reset", {{"session_id", session.id()}, {"reset", reset}}, session.owner());
  return JsonResponse(200, body);
}

Reply Snapshot(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  if (auto bad = CheckEmptyBody(req)) return ErrorResponse(*bad);
  sched::Session& session = **s;
  if (session.Info().state == "busy") return ErrorResponse(Conflict(session.id()));
  auto r = OnSession<bool>(ctx, session, [&]() -> ApiOr<bool> {
    auto x = session.Snapshot();
    if (!x.ok() && x.error().code == ErrorCode::kInvalidArgument) return BadRequest("snapshot: " + x.error().message);
    if (!x.ok()) return SandboxError("snapshot: " + x.error().message);
    return true;
  });
  if (!r.ok()) return ErrorResponse(r.error());
  if (ctx.monitor) ctx.monitor->SessionEvent("session_snapshot", {{"session_id", session.id()}}, session.owner());
  return JsonResponse(200, SessionJson(session.Info()));
}

}  // namespace

void AddSessionStateRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/sessions/{id}/reset", [&ctx](HttpRequest& req, ResponseStream&) { return Reset(ctx, req); });
  router.Add("POST", "/v1/sessions/{id}/snapshot",
             [&ctx](HttpRequest& req, ResponseStream&) { return Snapshot(ctx, req); });
  AddSessionForkRoutes(router, ctx);
  AddSessionPauseRoutes(router, ctx);
  AddSessionFsRoutes(router, ctx);
}

}  // namespace lsb::server
