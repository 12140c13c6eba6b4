// POST /v1/sessions/{id}/pause and /resume (docs/api.md "Pause and resume"): pause saves a python
// session's state (the globals that pickle, its modules, the files of its writable paths: the
// fork's export, scheduler/session/session_fork.h) to the daemon's state directory
// (scheduler/session/paused_sessions.h) and ends its box, freeing its memory; resume rebuilds it, with
// the same id, in a new box, in this daemon or a later one. Processes do not survive: CRIU could
// checkpoint them, but it needs privileges the daemon does not have inside a user namespace (see
// docs/architecture.md "Session fork"), so nothing claims they do. Owned: another token's paused
// session is 404 like a missing one. Bounded (paused_sessions.h): a share per token, an expiry,
// bytes per record and in all; DELETE /v1/sessions/{id} removes its owner's record. Memory: pause
// and resume reserve from the daemon's fan-out budget (byte_budget.h) what they buffer.
#include <chrono>

#include "base/time_format.h"
#include "scheduler/session/paused_sessions.h"
#include "scheduler/session/session_fork.h"
#include "server/execute_plan.h"
#include "server/fanout_reserve.h"
#include "server/json_codec.h"
#include "server/routes.h"
#include "server/session_ops.h"
#include "server/session_turn.h"

namespace lsb::server {
namespace {

using nlohmann::json;
using session_ops::Conflict;
using session_ops::Find;
using session_ops::OnSession;

const char* kNotKept =
    "processes (a resumed session has a fresh interpreter and no process of the paused one), values that do not "
    "pickle (functions, classes and their instances defined in the session, open files, sockets, threads), and "
    "the snapshot a reset returned to (a resumed session resets to its setup)";

ApiError NoPausedStore() {
  return {ApiCode::kNotImplemented,
          "pause: this daemon has no state directory to keep paused sessions in (set $LLM_SANDBOX_STATE_DIR or "
          "HOME for serve)"};
}

ApiError FromStateOp(const Error& e) {
  if (e.code == ErrorCode::kInvalidArgument) return BadRequest(e.message);
  if (e.code == ErrorCode::kResourceExhausted) return {ApiCode::kTooManyRequests, e.message, 5};
  return SandboxError(e.message);
}

std::optional<ApiError> CheckEmptyBody(const HttpRequest& req) {
  if (req.body.empty()) return std::nullopt;
  auto j = ParseObject(req.body);
  if (!j.ok()) return j.error();
  if (!j->empty()) return BadRequest(std::string(j->begin().key()) + ": unknown field (this route takes no body)");
  return std::nullopt;
}

int64_t MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

Reply Pause(ServerContext& ctx, HttpRequest& req) {
  auto start = std::chrono::steady_clock::now();
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  if (auto bad = CheckEmptyBody(req)) return ErrorResponse(*bad);
  if (!ctx.paused) return ErrorResponse(NoPausedStore());
  sched::Session& session = **s;
  if (session.Info().state == "busy") return ErrorResponse(Conflict(session.id()));
  auto reserved = ReserveFanout(ctx, ExportWorstBytes(ctx, session.policy()), "pause of " + session.id());
  if (!reserved.ok()) return ErrorResponse(reserved.error());
  const sched::PausedLimits& lim = ctx.paused->limits();
  auto saved = OnSession<uint64_t>(ctx, session, [&]() -> ApiOr<uint64_t> {
    auto x = sched::ExportForFork(session, ctx.limits.tree, ctx.limits.archive);
    if (!x.ok()) return FromStateOp(x.error());
    std::vector<sched::UnpackedArchive>().swap(x->trees);  // pause keeps the tars only
    uint64_t size = 0;
    for (const auto& t : x->tars) size += t.size();
    (*reserved)->ShrinkTo(2 * size);
    if (size > lim.max_record_bytes)
      return ApiError{ApiCode::kPayloadTooLarge,
                      "pause: the session's files and state are " + std::to_string(size) +
                          " bytes, more than a paused session may keep (serve --max-paused-bytes " +
                          std::to_string(lim.max_record_bytes) +
                          "); remove files under its writable paths or large globals, or close it"};
    sched::PausedRecord r;
    const sched::SessionConfig& c = session.config();
    r.id = session.id();
    r.owner = session.owner();
    r.policy = session.policy().name;
    r.language = c.language;
    r.setup = c.setup;
    r.idle_timeout_ms = c.idle_timeout_ms;
    r.max_lifetime_ms = c.max_lifetime_ms;
    r.state_path = x->state_path;
    r.values = x->values;
    r.modules = x->modules;
    r.skipped = x->skipped;
    r.paused_at = Rfc3339(std::chrono::system_clock::now());
    uint64_t bytes = 0;
    for (const auto& t : x->tars) bytes += t.size();
    r.tars = std::move(x->tars);
    sched::PausedRefusal refusal;
    auto st = ctx.paused->Save(r, &refusal);
    if (!st.ok() && st.error().code == ErrorCode::kResourceExhausted)
      return ApiError{ApiCode::kTooManyRequests, st.error().message,
                      static_cast<int>(std::min<uint64_t>(refusal.retry_after_s, 24 * 3600))};
    if (!st.ok()) return FromStateOp(st.error());
    return bytes;
  });
  if (!saved.ok()) return ErrorResponse(saved.error());
  ctx.sessions.Remove(session.id(), session.owner());  // the box ends: its memory is freed
  if (ctx.monitor) ctx.monitor->SessionEvent("session_paused", {{"session_id", session.id()}}, session.owner());
  return JsonResponse(200, {{"session_id", session.id()},
                            {"state", "paused"},
                            {"pause", {{"bytes", *saved}, {"duration_ms", MsSince(start)}, {"not_kept", kNotKept}}}});
}

Reply Resume(ServerContext& ctx, HttpRequest& req) {
  auto start = std::chrono::steady_clock::now();
  const std::string& id = req.params.at("id");
  if (auto bad = CheckEmptyBody(req)) return ErrorResponse(*bad);
  if (!ctx.paused) return ErrorResponse(NoPausedStore());
  if (ctx.sessions.Get(id, req.owner))
    return ErrorResponse({ApiCode::kConflict, "session " + id + " is not paused; it is running"});
  // The record as read, its trees and one copy-in message: each up to its size on disk.
  auto reserved = ReserveFanout(ctx, 3 * ctx.paused->RecordBytes(id, req.owner) + (8u << 20), "resume of " + id);
  if (!reserved.ok()) return ErrorResponse(reserved.error());
  auto rec = ctx.paused->Load(id, req.owner);
  if (!rec.ok()) return ErrorResponse(SandboxError(rec.error().message));
  if (!*rec) return ErrorResponse(NotFound("no paused session " + id));
  const sched::PausedRecord& r = **rec;
  auto policy = ResolvePolicy(ctx, r.policy, "policy");
  if (!policy.ok())
    return ErrorResponse({ApiCode::kConflict, "resume: the paused session's policy '" + r.policy +
                                                  "' is not loaded any more: " + policy.error().message});
  auto trees = sched::ReadForkTrees(**policy, r.tars, ctx.limits.archive);
  if (!trees.ok()) return ErrorResponse({ApiCode::kConflict, "resume: " + trees.error().message});
  auto turn = AwaitSessionSlots(ctx, 1, "resume: ");  // at the cap: wait in line (bounded), or 429
  if (!turn.ok()) return ErrorResponse(turn.error());
  sched::ForkExport state;
  state.trees = std::move(*trees);
  state.state_path = r.state_path;
  sched::SessionConfig cfg;
  cfg.language = r.language;
  cfg.setup = r.setup;
  cfg.owner = r.owner;
  cfg.idle_timeout_ms = r.idle_timeout_ms;
  cfg.max_lifetime_ms = r.max_lifetime_ms;
  std::vector<std::string> not_loaded;
  sched::Admission admission;
  std::function<ApiOr<std::shared_ptr<sched::Session>>()> open = [&]() -> ApiOr<std::shared_ptr<sched::Session>> {
    auto s = sched::Session::Open(ctx.backend, ctx.boxes, **policy, cfg, id);
    if (!s.ok()) return SandboxError("resume: " + s.error().message);
    std::shared_ptr<sched::Session> session(std::move(*s));
    sched::Session::Use use(*session);
    auto in = sched::ImportFork(*session, state);
    if (!in.ok()) {
      session->Close();
      return FromStateOp(in.error());
    }
    not_loaded = std::move(in->failed);
    return session;
  };
  auto opened = sched::RunOn<ApiOr<std::shared_ptr<sched::Session>>>(ctx.executor, open, &admission);
  if (!opened) return ErrorResponse(FromAdmission(admission));
  if (!opened->ok()) return ErrorResponse(opened->error());
  std::shared_ptr<sched::Session> session = **opened;
  if (!ctx.sessions.Add(session)) {
    session->Close();
    return ErrorResponse(ctx.shutting_down ? FromAdmission(sched::Admission::kShuttingDown)
                                           : ApiError{ApiCode::kTooManyRequests, "too many sessions; retry later", 5});
  }
  ctx.paused->Remove(id);
  json body = SessionJson(session->Info());
  body["resume"] = {{"paused_at", r.paused_at},
                    {"carried", {{"globals", r.values}, {"modules", r.modules}}},
                    {"not_carried", {{"globals", r.skipped}, {"not_loaded", not_loaded}}},
                    {"not_kept", kNotKept},
                    {"duration_ms", MsSince(start)}};
  if (!turn->reason.empty()) body["queued"] = turn->Queued();
  if (ctx.monitor) ctx.monitor->SessionEvent("session_resumed", {{"session_id", id}}, session->owner());
  return JsonResponse(200, body);
}

}  // namespace

std::optional<Reply> DeletePaused(ServerContext& ctx, const HttpRequest& req) {
  if (!ctx.paused || !ctx.paused->Remove(req.params.at("id"), req.owner)) return std::nullopt;
  if (ctx.monitor)
    ctx.monitor->SessionEvent("session_closed", {{"session_id", req.params.at("id")}, {"paused", true}}, req.owner);
  HttpResponse res;
  res.status = 204;
  return Reply(std::move(res));
}

void AddSessionPauseRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/sessions/{id}/pause", [&ctx](HttpRequest& req, ResponseStream&) { return Pause(ctx, req); });
  router.Add("POST", "/v1/sessions/{id}/resume", [&ctx](HttpRequest& req, ResponseStream&) { return Resume(ctx, req); });
}

}  // namespace lsb::server
