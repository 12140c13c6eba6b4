// Running on an E2B sandbox's session exactly as POST /v1/sessions/{id}/execute does: on the
// executor, one operation at a time (409 otherwise), observed by the monitor (metrics, events,
// the audit log) as kind "session". `shown` is what the audit log and live views record as the
// code (the client's code or command, not the front door's wrapping of it).
#pragma once

#include <string>

#include "runtime/runner.h"
#include "scheduler/session/session.h"
#include "server/api_error.h"
#include "server/server_context.h"

namespace lsb::server::e2b {

ApiOr<ExecResult> RunMonitored(ServerContext& ctx, sched::Session& s, ExecRequest er, const std::string& shown,
                               const RunCallbacks& cb = {});
// The front door's own helper code (a directory listing, a stat): on the session like a file
// operation of v1, so not an execution the audit log records.
ApiOr<ExecResult> RunHelper(ServerContext& ctx, sched::Session& s, const std::string& python);

}  // namespace lsb::server::e2b
