// What every route on one session shares (sessions_resource.cc, session_state_resource.cc): the
// owner's lookup (another token's session is 404, never the object) and running one operation on
// the executor while holding the session's Use (409 conflict when another one runs).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "scheduler/executor.h"
#include "scheduler/session.h"
#include "server/api_error.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace lsb::server::session_ops {

inline ApiError Conflict(const std::string& id) {
  return {ApiCode::kConflict, "session " + id + " is running another operation; wait for it to finish"};
}

inline ApiOr<std::shared_ptr<sched::Session>> Find(ServerContext& ctx, const HttpRequest& req) {
  auto s = ctx.sessions.Get(req.params.at("id"), req.owner);
  if (!s) return NotFound("no session " + req.params.at("id") + " (it may have expired or been deleted)");
  return s;
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
