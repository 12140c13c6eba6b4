// envd's filesystem (docs/e2b.md "Files"): filesystem.Filesystem/ListDir|Stat|MakeDir|Remove|Move
// (Connect unary, carried out by init's file worker: fs_ops.h) and the plain POST /files
// (multipart or octet stream) and GET /files?path=, which are v1's session file upload and
// download: the same host checks (an absolute normalized path strictly inside one of the policy's
// writable dirs, the daemon's --max-file-bytes per file) and the same worker that follows no link. A relative
// path is taken from the policy's workdir, as envd takes it from the user's home.
#include "scheduler/sandbox_path.h"
#include "server/e2b/connect_codec.h"
#include "server/e2b/front_door.h"
#include "server/e2b/fs_ops.h"
#include "server/e2b/multipart.h"
#include "server/e2b/session_run.h"
#include "server/session_ops.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

HttpResponse RestError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = json{{"code", status}, {"message", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}
HttpResponse RestError(const ApiError& e) { return RestError(HttpStatus(e.code), e.message); }

std::string Absolute(const Policy& p, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (p.workdir == "/" ? "" : p.workdir) + "/" + path;
}

// A path the box may be asked to read about (listing, stat): absolute and normalized; the box's
// own confinement decides what it may see.
ApiOr<std::string> ReadablePath(const Policy& p, const std::string& raw) {
  std::string path = Absolute(p, raw);
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path != "/" && !sched::IsNormalizedAbsolute(path))
    return BadRequest("path '" + raw.substr(0, 256) + "': give an absolute path without '.', '..' or empty parts");
  return path;
}

// A path the front door changes (upload, mkdir, remove): v1's checked path.
ApiOr<std::string> WritablePath(const Policy& p, const std::string& raw) {
  auto path = sched::CheckSandboxPath(p, Absolute(p, raw));
  if (!path.ok()) return BadRequest("path: " + path.error().message);
  return *path;
}

enum class FsOp { kList, kStat, kMakeDir, kRemove, kMove };

// One file op on the sandbox's session, as every session operation (409 while another runs).
ApiOr<FileCall> OnFiles(ServerContext& ctx, sched::Session& s, const protocol::FileOp& op) {
  return session_ops::OnSession<FileCall>(ctx, s, [&]() -> ApiOr<FileCall> {
    auto x = s.Files(op);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
}

// A stat's entry as envd's EntryInfo, or its RPC error.
Result<json> StatEntry(ServerContext& ctx, sched::Session& s, const std::string& path, RpcError* err) {
  protocol::FileOp op;
  op.op = protocol::FileOpKind::kStat;
  op.path = path;
  auto r = OnFiles(ctx, s, op);
  if (!r.ok()) return (*err = FromApiError(r.error()), Error{""});
  if (r->reply.status != protocol::FileStatus::kOk || r->reply.entries.size() != 1)
    return (*err = FsError(r->reply, path), Error{""});
  return EntryInfo(r->reply.entries[0], path);
}

// ListDir: `depth` levels below `top`, breadth first, at most kMaxListEntries in all.
Reply ListDir(ServerContext& ctx, sched::Session& s, const std::string& top, unsigned depth) {
  json entries = json::array();
  std::vector<std::pair<std::string, unsigned>> todo{{top, 1}};
  for (size_t next = 0; next < todo.size(); ++next) {
    auto [dir, level] = todo[next];
    protocol::FileOp op;
    op.op = protocol::FileOpKind::kList;
    op.path = dir;
    op.max_entries = protocol::kMaxListEntries;
    auto r = OnFiles(ctx, s, op);
    if (!r.ok()) return UnaryError(FromApiError(r.error()));
    if (r->reply.status != protocol::FileStatus::kOk) return UnaryError(FsError(r->reply, dir));
    if (r->reply.truncated || entries.size() + r->reply.entries.size() > kMaxListEntries)
      return UnaryError({RpcCode::kResourceExhausted, top + " has more than " + std::to_string(kMaxListEntries) +
                                                         " entries at this depth"});
    for (const auto& e : r->reply.entries) {
      std::string path = (dir == "/" ? "" : dir) + "/" + e.name;
      entries.push_back(EntryInfo(e, path));
      if (level < depth && e.type == "dir") todo.push_back({path, level + 1});
    }
  }
  return UnaryResponse({{"entries", entries}});
}

// MakeDir, Remove, Move: the change, then (MakeDir, Move) the entry it made.
Reply Change(ServerContext& ctx, sched::Session& s, FsOp kind, const std::string& path, const std::string& to) {
  protocol::FileOp op;
  op.op = kind == FsOp::kMakeDir ? protocol::FileOpKind::kMkdir
        : kind == FsOp::kMove    ? protocol::FileOpKind::kRename
                                 : protocol::FileOpKind::kRemove;
  op.path = path;
  op.to = to;
  op.parents = true;    // envd makes the parents on the way
  op.recursive = true;  // and removes a directory with what is in it
  if (kind == FsOp::kMakeDir) {
    RpcError err;
    if (StatEntry(ctx, s, path, &err).ok()) return UnaryError({RpcCode::kAlreadyExists, path + " already exists"});
  }
  auto r = OnFiles(ctx, s, op);
  if (!r.ok()) return UnaryError(FromApiError(r.error()));
  if (r->reply.status != protocol::FileStatus::kOk) return UnaryError(FsError(r->reply, path));
  if (kind == FsOp::kRemove) return UnaryResponse(json::object());
  RpcError err;
  auto entry = StatEntry(ctx, s, kind == FsOp::kMove ? to : path, &err);
  if (!entry.ok()) return UnaryError(err);
  return UnaryResponse({{"entry", *entry}});
}

// A string field of the request, made an absolute checked path (readable or writable).
ApiOr<std::string> PathField(const json& body, const char* field, const Policy& policy, bool changes) {
  if (!body.contains(field) || !body[field].is_string()) return BadRequest(std::string(field) + ": the path to act on");
  std::string raw = body[field];
  return changes ? WritablePath(policy, raw) : ReadablePath(policy, raw);
}

Reply FsCall(ServerContext& ctx, SandboxTable& table, HttpRequest& req, FsOp op) {
  auto target = DataTarget(table, req);
  if (!target) return UnaryError({RpcCode::kNotFound, "the sandbox is gone"});
  auto body = ParseRequest(req, false);
  if (!body.ok()) return UnaryError(FromApiError(body.error()));
  sched::Session& s = *target->session;
  const bool changes = op != FsOp::kList && op != FsOp::kStat;
  auto path = PathField(*body, op == FsOp::kMove ? "source" : "path", s.policy(), changes);
  if (!path.ok()) return UnaryError(FromApiError(path.error()));
  if (op == FsOp::kList) {
    unsigned depth = 1;
    if (body->contains("depth") && (*body)["depth"].is_number_unsigned())
      depth = std::max(1u, std::min(16u, (*body)["depth"].get<unsigned>()));
    return ListDir(ctx, s, *path, depth);
  }
  if (op == FsOp::kStat) {
    RpcError err;
    auto entry = StatEntry(ctx, s, *path, &err);
    if (!entry.ok()) return UnaryError(err);
    return UnaryResponse({{"entry", *entry}});
  }
  std::string to;
  if (op == FsOp::kMove) {
    auto dest = PathField(*body, "destination", s.policy(), true);
    if (!dest.ok()) return UnaryError(FromApiError(dest.error()));
    to = *dest;
  }
  return Change(ctx, s, op, *path, to);
}

ApiOr<FileCall> PutOne(ServerContext& ctx, sched::Session& s, const std::string& path, const std::string& data) {
  return session_ops::OnSession<FileCall>(ctx, s, [&]() -> ApiOr<FileCall> {
    auto x = s.PutFile(path, data);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
}

Reply Upload(ServerContext& ctx, SandboxTable& table, HttpRequest& req) {
  auto target = DataTarget(table, req);
  if (!target) return RestError(404, "the sandbox is gone");
  sched::Session& s = *target->session;
  std::vector<UploadPart> parts;
  std::string type = req.Header("content-type");
  if (type.rfind("multipart/", 0) == 0) {
    auto p = ParseMultipart(type, req.body);
    if (!p.ok()) return RestError(400, p.error().message);
    parts = std::move(*p);
  } else if (type.rfind("application/octet-stream", 0) == 0) {
    if (!req.Header("content-encoding").empty())
      return RestError(400, "Content-Encoding " + req.Header("content-encoding") + ": uploads are taken uncompressed here");
    parts.push_back({"", std::move(req.body)});
  } else {
    return RestError(415, "upload with Content-Type multipart/form-data or application/octet-stream, not '" + type + "'");
  }
  if (parts.empty()) return RestError(400, "the upload has no file");
  std::string query_path = req.Query("path");
  if (parts.size() > 1 && !query_path.empty())
    return RestError(400, "path: one ?path= names one file; the upload has " + std::to_string(parts.size()));
  // Every path and size checked before anything is written.
  std::vector<std::string> paths;
  for (const auto& part : parts) {
    std::string raw = query_path.empty() ? part.filename : query_path;
    if (raw.empty()) return RestError(400, "path: give ?path= or a filename for every part");
    auto path = WritablePath(s.policy(), raw);
    if (!path.ok()) return RestError(path.error());
    if (part.data.size() > ctx.limits.max_file_bytes)
      return RestError(413, *path + " is " + std::to_string(part.data.size()) + " bytes; the limit is " +
                                std::to_string(ctx.limits.max_file_bytes) + " (serve --max-file-bytes)");
    paths.push_back(*path);
  }
  json written = json::array();
  for (size_t i = 0; i < parts.size(); ++i) {
    // The worker makes missing directories on the way, as envd does (inside the writable dir).
    auto r = PutOne(ctx, s, paths[i], parts[i].data);
    if (!r.ok()) return RestError(r.error());
    if (r->reply.status == protocol::FileStatus::kTooLarge) return RestError(413, paths[i] + ": " + r->reply.message);
    if (r->reply.status != protocol::FileStatus::kOk) return RestError(400, paths[i] + ": " + r->reply.message);
    written.push_back({{"name", paths[i].substr(paths[i].rfind('/') + 1)}, {"type", "file"}, {"path", paths[i]}});
  }
  return JsonResponse(200, written);
}

Reply Download(ServerContext& ctx, SandboxTable& table, HttpRequest& req) {
  auto target = DataTarget(table, req);
  if (!target) return RestError(404, "the sandbox is gone");
  sched::Session& s = *target->session;
  std::string raw = req.Query("path");
  if (raw.empty()) return RestError(400, "path: give the file as ?path=/tmp/name");
  auto path = WritablePath(s.policy(), raw);
  if (!path.ok()) return RestError(path.error());
  uint64_t max = ctx.limits.max_file_bytes;
  auto r = session_ops::OnSession<FileCall>(ctx, s, [&]() -> ApiOr<FileCall> {
    auto x = s.GetFile(*path, max);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (!r.ok()) return RestError(r.error());
  if (r->reply.status == protocol::FileStatus::kNotFound) return RestError(404, "no file " + *path + " in the sandbox");
  if (r->reply.status == protocol::FileStatus::kTooLarge)
    return RestError(413, *path + " is larger than the limit of " + std::to_string(max) + " bytes");
  if (r->reply.status != protocol::FileStatus::kOk) return RestError(400, *path + ": " + r->reply.message);
  HttpResponse res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.body = std::move(r->data);
  return res;
}

}  // namespace

void AddEnvdFileRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  const std::pair<const char*, FsOp> calls[] = {{"ListDir", FsOp::kList},
                                                {"Stat", FsOp::kStat},
                                                {"MakeDir", FsOp::kMakeDir},
                                                {"Remove", FsOp::kRemove},
                                                {"Move", FsOp::kMove}};
  for (const auto& [name, op] : calls) {
    FsOp o = op;
    r.Add("POST", std::string("/filesystem.Filesystem/") + name,
          [&ctx, &table, o](HttpRequest& req, ResponseStream&) { return FsCall(ctx, table, req, o); }, BodyKind::kRaw);
  }
  r.Add("POST", "/files", [&ctx, &table](HttpRequest& req, ResponseStream&) { return Upload(ctx, table, req); },
        BodyKind::kRaw);
  r.Add("GET", "/files", [&ctx, &table](HttpRequest& req, ResponseStream&) { return Download(ctx, table, req); });
}

}  // namespace lsb::server::e2b
