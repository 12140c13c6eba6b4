// What every route on one session shares (sessions_resource.cc, session_state_resource.cc): the
// owner's lookup (another token's session is 404, never the object) and running one operation on
// the executor while holding the session's Use (409 conflict when another one runs).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/time_format.h"
#include "scheduler/executor.h"
#include "scheduler/session/session.h"
#include "server/api_error.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace lsb::server::session_ops {

inline ApiError Conflict(const std::string& id) {
  return {ApiCode::kConflict, "session " + id + " is running another operation; wait for it to finish"};
}

// Why a session is not here. An id naming another node (ses-<hex>-<node>) was sent to the wrong
// daemon: say which node holds it, so a client or front can route it there.
inline std::string MissingSession(const ServerContext& ctx, const std::string& id) {
  const size_t tag = std::string("ses-").size() + 16;
  if (id.rfind("ses-", 0) == 0 && id.size() > tag + 1 && id[tag] == '-' && id.substr(tag + 1) != ctx.node)
    return "no session " + id + " on node " + ctx.node + ": it lives on node " + id.substr(tag + 1) +
           "; send its requests there (the cluster front routes by the id, docs/scale-out.md)";
  // A restarted or updated daemon knows nothing of its predecessor's sessions: say when it began.
  return "no session " + id + " (it may have expired or been deleted, or lived in an earlier daemon on node " +
         ctx.node + ": this one started at " + Rfc3339(ctx.started_at) + ")";
}

inline ApiOr<std::shared_ptr<sched::Session>> Find(ServerContext& ctx, const HttpRequest& req) {
  auto s = ctx.sessions.Get(req.params.at("id"), req.owner);
  if (!s) return NotFound(MissingSession(ctx, req.params.at("id")));
  return s;
}

// A file op's failed reply (runtime/box_files.h) as the HTTP answer: 404 for a missing path, 413
// past `max`, 403 for what the box's rules refuse, 409 for an existing or non-empty target, else
// 400, each with the worker's words (they name the path).
inline ApiError FileReplyError(const protocol::FileReply& r, const std::string& path, uint64_t max) {
  using protocol::FileStatus;
  switch (r.status) {
    case FileStatus::kNotFound:
    case FileStatus::kNotADirectory: return NotFound("no " + path + " in the session's box (" + r.message + ")");
    case FileStatus::kTooLarge:
      return {ApiCode::kPayloadTooLarge, path + " is larger than the limit of " + std::to_string(max) + " bytes (" +
                                             r.message + ")"};
    case FileStatus::kDenied: return {ApiCode::kForbidden, path + ": refused in the box (" + r.message + ")"};
    case FileStatus::kExists:
    case FileStatus::kNotEmpty: return {ApiCode::kConflict, r.message};
    default: return BadRequest(path + ": " + r.message);
  }
}

template <typename T>
ApiOr<T> OnSession(ServerContext& ctx, sched::Session& s, std::function<ApiOr<T>()> op) {
  sched::Admission admission;
  std::function<ApiOr<T>()> task = [&s, &op]() -> ApiOr<T> {
    sched::Session::Use use(s);
    if (!use.owned()) return Conflict(s.id());
    return op();
  };
  auto r = sched::RunOn<ApiOr<T>>(ctx.executor, task, &admission);
  if (!r) return FromAdmission(admission);
  return std::move(*r);
}

}  // namespace lsb::server::session_ops
