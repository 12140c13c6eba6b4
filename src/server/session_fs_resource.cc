// The v1 file-system API of a session (docs/api.md "File system"): list, stat, mkdir, rename and
// remove, carried out in the box by init's file worker (runtime/box_files.h) for every language,
// as the program's uid under its Landlock. Paths the API changes must lie inside the policy's
// writable dirs (sandbox_path.h); paths it only reads about need be absolute and normalized, and
// the box's own rules decide what can be seen. No link is followed anywhere in a path.
#include <chrono>
#include <set>
#include <thread>

#include "scheduler/sandbox_path.h"
#include "server/json_codec.h"
#include "server/routes.h"
#include "server/session_ops.h"
#include "server/unknown_field.h"

namespace lsb::server {
namespace {

using nlohmann::json;
using protocol::FileOp;
using protocol::FileOpKind;
using protocol::FileStatus;
using session_ops::Find;
using session_ops::OnSession;

ApiOr<std::string> ReadablePath(const std::string& raw, const char* field) {
  if (raw.empty()) return BadRequest(std::string(field) + ": give an absolute path, e.g. ?path=/tmp");
  std::string path = raw.size() > 1 && raw.back() == '/' ? raw.substr(0, raw.size() - 1) : raw;
  if (path != "/" && !sched::IsNormalizedAbsolute(path))
    return BadRequest(std::string(field) + " '" + raw.substr(0, 256) +
                      "': give an absolute path without '.', '..' or empty parts");
  return path;
}

ApiOr<std::string> WritablePath(const Policy& policy, const std::string& raw, const char* field) {
  auto p = sched::CheckSandboxPath(policy, raw);
  if (!p.ok()) return BadRequest(std::string(field) + ": " + p.error().message);
  return *p;
}

json EntryJson(const protocol::FileEntry& e) {
  json j = {{"name", e.name}, {"type", e.type}, {"size", e.size}, {"mode", e.mode}, {"mtime_ms", e.mtime_ms}};
  if (e.type == "symlink") j["target"] = e.target;
  return j;
}

// A JSON body with only `allowed` keys (an unknown one is refused, not ignored).
ApiOr<json> BodyOf(const HttpRequest& req, const std::set<std::string>& allowed) {
  auto j = ParseObject(req.body.empty() ? "{}" : req.body);
  if (!j.ok()) return j.error();
  for (const auto& [k, _] : j->items())
    if (!allowed.count(k)) return UnknownField("", k, {allowed.begin(), allowed.end()});
  return std::move(*j);
}

// Runs `op` on the session; a failed reply becomes its HTTP error (session_ops::FileReplyError).
ApiOr<FileCall> Call(ServerContext& ctx, sched::Session& s, const FileOp& op) {
  auto r = OnSession<FileCall>(ctx, s, [&]() -> ApiOr<FileCall> {
    auto x = s.Files(op);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (r.ok() && r->reply.status != FileStatus::kOk) return session_ops::FileReplyError(r->reply, op.path, 0);
  return r;
}

Reply List(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto path = ReadablePath(req.Query("path"), "path");
  if (!path.ok()) return ErrorResponse(path.error());
  FileOp op;
  op.op = FileOpKind::kList;
  op.path = *path;
  op.max_entries = protocol::kMaxListEntries;
  if (std::string limit = req.Query("limit"); !limit.empty()) {
    const bool digits =
        !limit.empty() && limit.size() <= 6 && limit.find_first_not_of("0123456789") == std::string::npos;
    const uint64_t n = digits ? std::stoull(limit) : 0;
    if (n == 0 || n > protocol::kMaxListEntries)
      return ErrorResponse(
          BadRequest("limit: a number of entries from 1 to " + std::to_string(protocol::kMaxListEntries)));
    op.max_entries = n;
  }
  auto r = Call(ctx, **s, op);
  if (!r.ok()) return ErrorResponse(r.error());
  json entries = json::array();
  for (const auto& e : r->reply.entries) entries.push_back(EntryJson(e));
  json body = {{"path", *path}, {"entries", entries}, {"truncated", r->reply.truncated}, {"total", r->reply.total}};
  if (!r->reply.message.empty()) body["message"] = r->reply.message;
  return JsonResponse(200, body);
}

Reply Stat(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto path = ReadablePath(req.Query("path"), "path");
  if (!path.ok()) return ErrorResponse(path.error());
  FileOp op;
  op.op = FileOpKind::kStat;
  op.path = *path;
  auto r = Call(ctx, **s, op);
  if (!r.ok()) return ErrorResponse(r.error());
  if (r->reply.entries.size() != 1) return ErrorResponse(SandboxError("stat: the box's answer had no entry"));
  json e = EntryJson(r->reply.entries[0]);
  e["path"] = *path;
  return JsonResponse(200, e);
}

Reply Mkdir(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto body = BodyOf(req, {"path", "parents"});
  if (!body.ok()) return ErrorResponse(body.error());
  auto path = WritablePath((*s)->policy(), body->value("path", ""), "path");
  if (!path.ok()) return ErrorResponse(path.error());
  FileOp op;
  op.op = FileOpKind::kMkdir;
  op.path = *path;
  op.parents = body->value("parents", false);
  auto r = Call(ctx, **s, op);
  if (!r.ok()) return ErrorResponse(r.error());
  return JsonResponse(201, {{"path", *path}});
}

Reply Rename(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto body = BodyOf(req, {"from", "to"});
  if (!body.ok()) return ErrorResponse(body.error());
  auto from = WritablePath((*s)->policy(), body->value("from", ""), "from");
  if (!from.ok()) return ErrorResponse(from.error());
  auto to = WritablePath((*s)->policy(), body->value("to", ""), "to");
  if (!to.ok()) return ErrorResponse(to.error());
  FileOp op;
  op.op = FileOpKind::kRename;
  op.path = *from;
  op.to = *to;
  auto r = Call(ctx, **s, op);
  if (!r.ok()) return ErrorResponse(r.error());
  return JsonResponse(200, {{"from", *from}, {"to", *to}});
}

Reply Remove(ServerContext& ctx, HttpRequest& req) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto body = BodyOf(req, {"path", "recursive"});
  if (!body.ok()) return ErrorResponse(body.error());
  auto path = WritablePath((*s)->policy(), body->value("path", ""), "path");
  if (!path.ok()) return ErrorResponse(path.error());
  FileOp op;
  op.op = FileOpKind::kRemove;
  op.path = *path;
  op.recursive = body->value("recursive", false);
  auto r = Call(ctx, **s, op);
  if (!r.ok()) return ErrorResponse(r.error());
  return JsonResponse(200, {{"path", *path}, {"removed", true}});
}

std::string EventChunk(const protocol::FileEvent& e) {
  json data = {{"path", e.path}, {"op", e.op}, {"dir", e.dir}};
  return "event: " + e.op + "\ndata: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

// GET .../fs/watch?path=&recursive=: the box's file events as server-sent events until the client
// leaves, the session ends, or the watch ends (its directory went, its box was replaced, another
// watch took over). While nothing runs, this handler reads the box's stream itself for a few ms at
// a time (Session::PollWatch); during an execute, the execute's reader hands the events over.
Reply Watch(ServerContext& ctx, HttpRequest& req, ResponseStream& out) {
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto path = ReadablePath(req.Query("path"), "path");
  if (!path.ok()) return ErrorResponse(path.error());
  sched::Session& session = **s;
  protocol::WatchSpec spec{*path, req.Query("recursive") == "true" || req.Query("recursive") == "1"};
  using Feed = std::shared_ptr<sched::WatchFeed>;
  auto feed = OnSession<Feed>(ctx, session, [&]() -> ApiOr<Feed> {
    auto x = session.Watch(spec);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (!feed.ok()) return ErrorResponse(feed.error());
  if (!out.Begin(200, "text/event-stream") || !out.Write(": watching " + *path + "\n\n")) return Reply::Streamed();
  auto last_write = std::chrono::steady_clock::now();
  bool over = false;
  while (!over && !ctx.shutting_down && session.Info().state != "closed") {
    {
      sched::Session::Use use(session, sched::Session::Use::IfFree{});
      if (use.owned()) (void)session.PollWatch(std::chrono::milliseconds(10));
    }
    uint64_t dropped = 0;
    std::string chunk;
    for (const auto& e : (*feed)->Take(&dropped)) {
      chunk += EventChunk(e);
      over = over || e.op == "end";
    }
    if (dropped) chunk += EventChunk({*path + ": " + std::to_string(dropped) + " events dropped", "overflow", true});
    const auto now = std::chrono::steady_clock::now();
    if (chunk.empty() && now - last_write > std::chrono::seconds(15)) chunk = ": keepalive\n\n";
    if (!chunk.empty()) {
      if (!out.Write(chunk)) break;
      last_write = now;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  sched::Session::Use use(session);
  if (use.owned()) session.Unwatch(*feed);
  return Reply::Streamed();
}

}  // namespace

void AddSessionFsRoutes(Router& router, ServerContext& ctx) {
  const std::pair<const char*, Reply (*)(ServerContext&, HttpRequest&)> routes[] = {
      {"GET /fs/list", List}, {"GET /fs/stat", Stat}, {"POST /fs/mkdir", Mkdir},
      {"POST /fs/rename", Rename}, {"POST /fs/remove", Remove}};
  for (const auto& [route, handler] : routes) {
    const std::string r = route;
    const size_t space = r.find(' ');
    auto h = handler;
    router.Add(r.substr(0, space), "/v1/sessions/{id}" + r.substr(space + 1),
               [&ctx, h](HttpRequest& req, ResponseStream&) { return h(ctx, req); });
  }
  router.Add("GET", "/v1/sessions/{id}/fs/watch",
             [&ctx](HttpRequest& req, ResponseStream& out) { return Watch(ctx, req, out); });
}

}  // namespace lsb::server
