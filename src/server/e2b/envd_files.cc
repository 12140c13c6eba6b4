// envd's filesystem (docs/e2b.md "Files"): filesystem.Filesystem/ListDir|Stat|MakeDir|Remove
// (Connect unary, run inside the box: fs_ops.h) and the plain POST /files (multipart or octet
// stream) and GET /files?path=, which are v1's session file upload and download: the same host
// checks (an absolute normalized path strictly inside one of the policy's writable dirs, the
// daemon's --max-file-bytes per file) and the same in-box helper that follows no link. A relative
// path is taken from the policy's workdir, as envd takes it from the user's home.
#include "base/random_id.h"
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
  auto ok = sched::CheckDriverSupported(p);
  if (!ok.ok()) return BadRequest(ok.error().message);
  return *path;
}

Reply FsCall(ServerContext& ctx, SandboxTable& table, HttpRequest& req, FsOp op) {
  auto target = DataTarget(table, req);
  if (!target) return UnaryError({RpcCode::kNotFound, "the sandbox is gone"});
  auto body = ParseRequest(req, false);
  if (!body.ok()) return UnaryError(FromApiError(body.error()));
  if (!body->contains("path") || !(*body)["path"].is_string())
    return UnaryError({RpcCode::kInvalidArgument, "path: the path to act on"});
  const Policy& policy = target->session->policy();
  std::string raw = (*body)["path"];
  auto path = (op == FsOp::kList || op == FsOp::kStat) ? ReadablePath(policy, raw) : WritablePath(policy, raw);
  if (!path.ok()) return UnaryError(FromApiError(path.error()));
  unsigned depth = 1;
  if (body->contains("depth") && (*body)["depth"].is_number_unsigned())
    depth = std::max(1u, std::min(16u, (*body)["depth"].get<unsigned>()));
  std::string marker = RandomHex("\x1elsb-e2b-", 8) + ":";
  auto r = RunHelper(ctx, *target->session, FsOpCode(op, *path, depth, marker));
  if (!r.ok()) return UnaryError(FromApiError(r.error()));
  FsAnswer a = ParseFsAnswer(r->stdout_data, marker);
  if (!a.ok) return UnaryError(a.error);
  return UnaryResponse(a.message);
}

ApiOr<sched::FileOpResult> PutOne(ServerContext& ctx, sched::Session& s, const std::string& path, const std::string& data) {
  return session_ops::OnSession<sched::FileOpResult>(ctx, s, [&]() -> ApiOr<sched::FileOpResult> {
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
    auto r = PutOne(ctx, s, paths[i], parts[i].data);
    if (r.ok() && r->status == sched::FileOpStatus::kNotFound) {
      // envd creates the missing directories on the way (they are inside the writable dir).
      std::string parent = paths[i].substr(0, paths[i].rfind('/'));
      std::string marker = RandomHex("\x1elsb-e2b-", 8) + ":";
      auto made = RunHelper(ctx, s, FsOpCode(FsOp::kMakeDir, parent, 1, marker));
      if (!made.ok()) return RestError(made.error());
      r = PutOne(ctx, s, paths[i], parts[i].data);
    }
    if (!r.ok()) return RestError(r.error());
    if (r->status == sched::FileOpStatus::kTooLarge) return RestError(413, paths[i] + ": " + r->message);
    if (r->status != sched::FileOpStatus::kOk) return RestError(400, paths[i] + ": " + r->message);
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
  auto r = session_ops::OnSession<sched::FileOpResult>(ctx, s, [&]() -> ApiOr<sched::FileOpResult> {
    auto x = s.GetFile(*path, max);
    if (!x.ok()) return SandboxError(x.error().message);
    return std::move(*x);
  });
  if (!r.ok()) return RestError(r.error());
  if (r->status == sched::FileOpStatus::kNotFound) return RestError(404, "no file " + *path + " in the sandbox");
  if (r->status == sched::FileOpStatus::kTooLarge)
    return RestError(413, *path + " is larger than the limit of " + std::to_string(max) + " bytes");
  if (r->status != sched::FileOpStatus::kOk) return RestError(400, *path + ": " + r->message);
  HttpResponse res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.body = std::move(r->data);
  return res;
}

}  // namespace

void AddEnvdFileRoutes(Router& r, ServerContext& ctx, SandboxTable& table) {
  const std::pair<const char*, FsOp> calls[] = {
      {"ListDir", FsOp::kList}, {"Stat", FsOp::kStat}, {"MakeDir", FsOp::kMakeDir}, {"Remove", FsOp::kRemove}};
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
