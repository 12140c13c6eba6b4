// The API's resources, one file each (docs/api.md). Each registers its routes on the router.
#pragma once

#include <optional>

#include "server/router.h"
#include "server/server_context.h"

namespace lsb::server {

void AddExecuteRoutes(Router& r, ServerContext& ctx);   // execute_resource.cc
void AddSessionRoutes(Router& r, ServerContext& ctx);   // sessions_resource.cc
void AddSessionStateRoutes(Router& r, ServerContext& ctx);  // session_state_resource.cc: reset, snapshot
void AddSessionForkRoutes(Router& r, ServerContext& ctx);   // session_fork_resource.cc: fork
void AddSessionPauseRoutes(Router& r, ServerContext& ctx);  // session_pause_resource.cc: pause, resume
void AddSessionFsRoutes(Router& r, ServerContext& ctx);     // session_fs_resource.cc: list, stat, mkdir, rename, remove
// DELETE /v1/sessions/{id} of a paused session, by its owner (204); none: no such record of theirs.
std::optional<Reply> DeletePaused(ServerContext& ctx, const HttpRequest& req);
void AddBatchRoutes(Router& r, ServerContext& ctx);     // batch_resource.cc
void AddPolicyRoutes(Router& r, ServerContext& ctx);    // policies_resource.cc
void AddHealthRoutes(Router& r, ServerContext& ctx);    // health_resource.cc
void AddMonitoringRoutes(Router& r, ServerContext& ctx);  // monitoring_resource.cc: /metrics, /v1/events, /v1/executions, /
void AddMcpRoutes(Router& r, ServerContext& ctx);       // mcp_resource.cc: /mcp (MCP, Streamable HTTP)
void AddImageRoutes(Router& r, ServerContext& ctx);     // images_resource.cc: /v1/images

}  // namespace lsb::server
