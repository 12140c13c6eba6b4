// Sessions: a box kept for several executions (docs/api.md). Every operation that touches the box
// runs on the executor; a session runs one operation at a time (409 conflict otherwise).
#include "policy/tighten.h"
#include "scheduler/sandbox_path.h"
#include "server/execute_plan.h"
#include "server/session_ops.h"
#include "server/session_turn.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

using session_ops::Conflict;
using session_ops::Find;
using session_ops::MissingSession;
using session_ops::OnSession;

ApiOr<std::string> FilePath(const HttpRequest& req, const sched::Session& s) {
  std::string path = req.Query("path");
  if (path.empty()) return BadRequest("path: give the file as ?path=/tmp/name");
  auto p = sched::CheckSandboxPath(s.policy(), path);
  if (!p.ok()) return BadRequest("path: " + p.error().message);
  return *p;
}

Reply Create(ServerContext& ctx, HttpRequest& req) {
  auto j = ParseObject(req.body.empty() ? "{}" : req.body);
  if (!j.ok()) return ErrorResponse(j.error());
  auto body = ParseSessionBody(*j);
  if (!body.ok()) return ErrorResponse(body.error());
  auto policy = ResolvePolicy(ctx, body->policy, "policy");
  if (!policy.ok()) return ErrorResponse(policy.error());
  sched::SessionConfig cfg;
  cfg.language = body->language.empty() ? (*policy)->default_language : body->language;
  if (!(*policy)->FindLanguage(cfg.language))
    return ErrorResponse(BadRequest("language: policy '" + (*policy)->name + "' has no language '" + cfg.language + "'"));
  cfg.idle_timeout_ms = body->idle_timeout_ms.value_or(ctx.limits.default_idle_timeout_ms);
  cfg.max_lifetime_ms = body->max_lifetime_ms.value_or(ctx.limits.default_max_lifetime_ms);
  cfg.owner = req.owner;
  cfg.setup = (*policy)->session_setup;
  cfg.changes = body->changes;
  if (cfg.changes) {
    if (sched::WritableDirs(**policy).empty())
      return ErrorResponse(BadRequest("changes: policy '" + (*policy)->name + "' has no writable path (container.tmpfs, or an overlay in container.mounts)"));
  }
  if (!body->setup.empty()) cfg.setup += (cfg.setup.empty() ? "" : "\n") + body->setup;
  if (cfg.max_lifetime_ms > ctx.limits.max_session_lifetime_ms)
    return ErrorResponse({ApiCode::kForbidden, "max_lifetime: at most " +
                                                   std::to_string(ctx.limits.max_session_lifetime_ms / 1000) +
                                                   " s on this daemon"});
  auto turn = AwaitSessionSlots(ctx, 1);  // at the cap: wait in line (bounded), or 429 with the place
  if (!turn.ok()) return ErrorResponse(turn.error());
  turn->runs_user_code = !cfg.setup.empty();  // its open runs the setup: it takes no turn
  std::string id = ctx.sessions.NewId();
  sched::Admission admission;
  std::function<Result<std::shared_ptr<sched::Session>>()> open =
      [&]() -> Result<std::shared_ptr<sched::Session>> {
    auto s = sched::Session::Open(ctx.backend, ctx.boxes, **policy, cfg, id);
    if (!s.ok()) return s.error();
    return std::shared_ptr<sched::Session>(std::move(*s));
  };
  auto r = RunForTurn<Result<std::shared_ptr<sched::Session>>>(ctx, *turn, open, &admission);
  if (!r) return ErrorResponse(FromAdmission(admission));
  if (!r->ok() && r->error().field == "setup") return ErrorResponse(BadRequest(r->error().message));
  if (!r->ok()) return ErrorResponse(SandboxError(r->error().message));
  std::shared_ptr<sched::Session> s = **r;
  if (!ctx.sessions.Add(s)) {
    s->Close();
    return ErrorResponse(ctx.shutting_down ? FromAdmission(sched::Admission::kShuttingDown)
                                           : ApiError{ApiCode::kTooManyRequests, "too many sessions; retry later", 5});
  }
  turn->slots.Release();  // the manager counts the session now
  json created = SessionJson(s->Info());
  created["node"] = ctx.node;  // where the session lives (its id names it too)
  if (!turn->reason.empty()) created["queued"] = turn->Queued();
  HttpResponse res = JsonResponse(201, created);
  turn->AddHeader(res);
  res.headers.emplace_back("Location", "/v1/sessions/" + id);
  if (ctx.monitor) ctx.monitor->SessionEvent("session_created", SessionJson(s->Info()), s->owner());
  return res;
}

Reply Execute(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto j = ParseObject(req.body);
  if (!j.ok()) return ErrorResponse(j.error());
  auto body = ParseExecuteBody(*j, true);
  if (!body.ok()) return ErrorResponse(body.error());
  sched::Session& session = **s;
  if (body->overrides.timeout_ms) {
    PolicyOverrides o;
    o.timeout_ms = body->overrides.timeout_ms;
    auto t = TightenPolicy(session.policy(), o);
    if (!t.ok()) return ErrorResponse(FromTightening(t.error(), ""));
  }
  ExecRequest er;
  er.code = std::move(body->code);
  er.language = std::move(body->language);
  er.stdin_data = std::move(body->stdin_data);
  er.env = std::move(body->env);
  er.timeout_ms = body->overrides.timeout_ms;
  er.command = std::move(body->command);
  er.outputs = body->outputs;
  auto collect = PlanCollect(ctx, session.policy(), std::move(body->collect), "");
  if (!collect.ok()) return ErrorResponse(collect.error());
  er.collect = std::move(*collect);
  auto spec = BuildRunSpec(session.policy(), er);
  if (!spec.ok()) return ErrorResponse(FromRunSpec(spec.error(), ""));
  // Refused rather than dropped: the caller must not believe the program saw it.
  if (!er.env.empty() && session.RunsInInterpreter(er))
    return ErrorResponse(BadRequest("env: a python session's interpreter keeps the environment it started with and "
                                    "cannot take one per execution; leave env out, or use a one-shot execution"));
  if (!er.env.empty() && er.command.empty() && session.RunsInRepl(er))
    return ErrorResponse(BadRequest("env: a " + session.Info().language + " session's code runs in one persistent " +
                                    "process that keeps its environment; set variables in the code (export K=V, " +
                                    "process.env.K), or use a one-shot execution"));
  if (session.Info().state == "busy") return ErrorResponse(Conflict(session.id()));
  auto r = OnSession<ExecResult>(ctx, session, [&]() -> ApiOr<ExecResult> {
    std::shared_ptr<monitor::Execution> ex;
    if (ctx.monitor) {
      er.execution_id = ctx.NewExecutionId();
      std::string lang = er.language.empty() ? session.Info().language : er.language;
      ex = ctx.monitor->Begin(
          {er.execution_id, session.policy().name, "session", session.id(), lang,
           er.command.empty() ? er.code : CommandText(er.command), session.owner(), session.policy().cpu});
    }
    auto x = session.Execute(er, ctx.limits.collect, ctx.limits.outputs);
    if (ex && x.ok()) x->execution_id = er.execution_id;  // the interpreter names its own
    if (ex) ctx.monitor->Finish(ex, x.ok() ? &*x : nullptr, x.ok() ? "" : x.error().message, ctx.backend.name());
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (!r.ok()) return ErrorResponse(r.error());
  return JsonResponse(200, ExecResultJson(*r, session.policy().name, ctx.node));
}

Reply PutFile(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto path = FilePath(req, **s);
  if (!path.ok()) return ErrorResponse(path.error());
  if (req.body.size() > ctx.limits.max_file_bytes)
    return ErrorResponse({ApiCode::kPayloadTooLarge, "the file is " + std::to_string(req.body.size()) +
                                                         " bytes; the limit is " + std::to_string(ctx.limits.max_file_bytes)});
  sched::Session& session = **s;
  auto r = OnSession<FileCall>(ctx, session, [&]() -> ApiOr<FileCall> {
    auto x = session.PutFile(*path, req.body);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (!r.ok()) return ErrorResponse(r.error());
  if (r->reply.status != protocol::FileStatus::kOk)
    return ErrorResponse(session_ops::FileReplyError(r->reply, *path, ctx.limits.max_file_bytes));
  return JsonResponse(201, {{"path", *path}, {"size", req.body.size()}});
}

Reply GetFile(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto path = FilePath(req, **s);
  if (!path.ok()) return ErrorResponse(path.error());
  sched::Session& session = **s;
  uint64_t max = ctx.limits.max_file_bytes;
  auto r = OnSession<FileCall>(ctx, session, [&]() -> ApiOr<FileCall> {
    auto x = session.GetFile(*path, max);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (!r.ok()) return ErrorResponse(r.error());
  if (r->reply.status != protocol::FileStatus::kOk) return ErrorResponse(session_ops::FileReplyError(r->reply, *path, max));
  HttpResponse res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.body = std::move(r->data);
  return res;
}

// The archive's target (PUT) or the directory to fetch (GET): ?path=, a dir in the writable dirs.
ApiOr<std::string> DirPath(const HttpRequest& req, const sched::Session& s) {
  std::string path = req.Query("path");
  if (path.empty()) return BadRequest("path: give the directory as ?path=/tmp/work");
  auto p = sched::CheckSandboxDir(s.policy(), path);
  if (!p.ok()) return BadRequest("path: " + p.error().message);
  return *p;
}

Reply PutArchive(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto dir = DirPath(req, **s);
  if (!dir.ok()) return ErrorResponse(dir.error());
  sched::Session& session = **s;
  // Read and checked here, before the box is touched: a refused archive writes nothing.
  auto archive = PlanArchive(ctx, session.policy(), *dir, req.body, "");
  if (!archive.ok()) return ErrorResponse(archive.error());
  auto r = OnSession<bool>(ctx, session, [&]() -> ApiOr<bool> {
    Status x = session.PutArchive(**archive);
    if (!x.ok()) {
      if (x.error().code == ErrorCode::kInvalidArgument) return BadRequest(x.error().message);
      return SandboxError(x.error().message);
    }
    return true;
  });
  if (!r.ok()) return ErrorResponse(r.error());
  const sched::UnpackedArchive& a = **archive;
  return JsonResponse(201, {{"path", *dir}, {"format", sched::ArchiveFormatName(a.format)}, {"files", a.files},
                            {"dirs", a.dirs}, {"bytes", a.bytes}});
}

Reply GetArchive(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto dir = DirPath(req, **s);
  if (!dir.ok()) return ErrorResponse(dir.error());
  sched::Session& session = **s;
  auto r = OnSession<sched::TreeArchive>(ctx, session, [&]() -> ApiOr<sched::TreeArchive> {
    auto x = session.GetTree(*dir, ctx.limits.tree);
    if (x.ok()) return std::move(*x);
    if (x.error().code == ErrorCode::kResourceExhausted) return ApiError{ApiCode::kPayloadTooLarge, x.error().message};
    if (x.error().code == ErrorCode::kNotFound) return NotFound(x.error().message);
    return SandboxError(x.error().message);
  });
  if (!r.ok()) return ErrorResponse(r.error());
  HttpResponse res;
  res.status = 200;
  res.content_type = "application/x-tar";
  res.headers.emplace_back("X-Archive-Files", std::to_string(r->files));
  res.headers.emplace_back("X-Archive-Skipped", std::to_string(r->skipped));
  res.body = std::move(r->tar);
  return res;
}

// GET /v1/sessions/{id}/changes?path=: what changed since the box opened or the last upload.
Reply GetChanges(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  sched::Session& session = **s;
  std::string dir;
  if (!req.Query("path").empty()) {
    auto d = DirPath(req, session);
    if (!d.ok()) return ErrorResponse(d.error());
    dir = *d;
  }
  // ?ignore=a,b replaces the default list (__pycache__, *.pyc, .pytest_cache); ?ignore= drops it.
  std::vector<std::string> ignore = sched::DefaultChangesIgnore();
  if (req.query.count("ignore")) {
    ignore.clear();
    std::string list = req.Query("ignore");
    for (size_t at = 0; at <= list.size();) {
      size_t end = std::min(list.find(',', at), list.size());
      if (end > at) ignore.push_back(list.substr(at, end - at));
      at = end + 1;
    }
    if (ignore.size() > 32) return ErrorResponse(BadRequest("ignore: at most 32 patterns"));
  }
  auto r = OnSession<json>(ctx, session, [&]() -> ApiOr<json> {
    auto x = session.Changes(dir, ignore);
    if (x.ok()) return std::move(*x);
    if (x.error().code == ErrorCode::kInvalidArgument) return BadRequest(x.error().message);
    if (x.error().code == ErrorCode::kResourceExhausted) return ApiError{ApiCode::kPayloadTooLarge, x.error().message};
    return SandboxError(x.error().message);
  });
  if (!r.ok()) return ErrorResponse(r.error());
  return JsonResponse(200, *r);
}

}  // namespace

void AddSessionRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/sessions", [&ctx](HttpRequest& req, ResponseStream&) { return Create(ctx, req); });
  router.Add("GET", "/v1/sessions", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    json list = json::array();
    for (const auto& s : ctx.sessions.List(req.owner)) list.push_back(SessionJson(s->Info()));
    return JsonResponse(200, {{"sessions", list}});
  });
  router.Add("GET", "/v1/sessions/{id}", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    auto s = Find(ctx, req);
    if (!s.ok()) return ErrorResponse(s.error());
    return JsonResponse(200, SessionJson((*s)->Info()));
  });
  router.Add("DELETE", "/v1/sessions/{id}", [&ctx](HttpRequest& req, ResponseStream&) -> Reply {
    if (!ctx.sessions.Remove(req.params.at("id"), req.owner)) {
      if (auto paused = DeletePaused(ctx, req)) return *paused;  // a paused one's record, by its owner
      return ErrorResponse(NotFound(MissingSession(ctx, req.params.at("id"))));
    }
    if (ctx.monitor) ctx.monitor->SessionEvent("session_closed", {{"session_id", req.params.at("id")}}, req.owner);
    HttpResponse res;
    res.status = 204;
    res.content_type = "application/json";
    return res;
  });
  router.Add("POST", "/v1/sessions/{id}/execute", [&ctx](HttpRequest& req, ResponseStream&) { return Execute(ctx, req); });
  router.Add("PUT", "/v1/sessions/{id}/files", [&ctx](HttpRequest& req, ResponseStream&) { return PutFile(ctx, req); },
             BodyKind::kRaw);
  router.Add("GET", "/v1/sessions/{id}/files", [&ctx](HttpRequest& req, ResponseStream&) { return GetFile(ctx, req); });
  router.Add("PUT", "/v1/sessions/{id}/archive", [&ctx](HttpRequest& req, ResponseStream&) { return PutArchive(ctx, req); },
             BodyKind::kRaw);
  router.Add("GET", "/v1/sessions/{id}/archive", [&ctx](HttpRequest& req, ResponseStream&) { return GetArchive(ctx, req); });
  router.Add("GET", "/v1/sessions/{id}/changes", [&ctx](HttpRequest& req, ResponseStream&) { return GetChanges(ctx, req); });
  AddSessionStateRoutes(router, ctx);
}

}  // namespace lsb::server
