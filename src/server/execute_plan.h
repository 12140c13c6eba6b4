// From an execute body to what runs: the named policy, tightened by the request's limits (a
// request may only lower them: loosening is 403 naming the field), the ExecRequest, and the input
// files with their paths checked. Shared by /v1/execute and /v1/batch.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"
#include "runtime/runner.h"
#include "scheduler/one_shot.h"
#include "server/api_error.h"
#include "server/json_codec.h"
#include "server/server_context.h"

namespace lsb::server {

struct ExecutionPlan {
  Policy policy;  // tightened copy
  ExecRequest request;
  std::vector<sched::InputFile> files;
  std::string owner;  // of the request (HttpRequest::owner): its execution's views and events are its own
  std::string execution_id;  // named when planned: known before the result (X-Execution-Id, async)
  // A batch task's share of the answer (0: none): its rich outputs and collected files are read at
  // most this much, as more would be left out of its result anyway, so what a running task may hold
  // (and reserves from the fan-out budget) follows the share, not the per-execution limits.
  uint64_t answer_share = 0;
};

// The limits of rich outputs and collected files for `plan` (the daemon's, within its answer_share).
sched::OutputsLimits OutputsLimitsOf(const ServerContext& ctx, const ExecutionPlan& plan);
sched::CollectLimits CollectLimitsOf(const ServerContext& ctx, const ExecutionPlan& plan);

// The policy named `name` ("" = the daemon's default); `field` names the body field in errors.
ApiOr<std::shared_ptr<const Policy>> ResolvePolicy(ServerContext& ctx, const std::string& name,
                                                   const std::string& field);
// An archive body (PUT .../archive, files[].archive_base64) read and checked on the host for
// `target`: 413 past a bound or max_file_bytes, 400 for a hostile or broken archive; `field`
// prefixes the message.
ApiOr<std::shared_ptr<const sched::UnpackedArchive>> PlanArchive(ServerContext& ctx, const Policy& policy,
                                                                 const std::string& target, std::string_view bytes,
                                                                 const std::string& field);
// The BuildRunSpec refusal of a request as the API's error: 403 for the commands allowlist, else 400.
ApiError FromRunSpec(const Error& e, const std::string& where);
// A command as the audit log and the live events show it (its arguments joined by spaces).
std::string CommandText(const std::vector<std::string>& command);
// `collect` checked against the policy (its writable dirs; the in-box helper it needs).
ApiOr<std::vector<std::string>> PlanCollect(ServerContext& ctx, const Policy& policy, std::vector<std::string> collect,
                                            const std::string& where);

ApiOr<ExecutionPlan> PlanExecution(ServerContext& ctx, const std::string& owner, ExecuteBody body,
                                   const std::string& where = "");
// Runs a plan on the executor in a fresh box (blocking the caller until it is done).
// With monitoring on, the execution is observed (metrics, events, audit log) under `kind`.
ApiOr<ExecResult> RunPlan(ServerContext& ctx, const ExecutionPlan& plan, const RunCallbacks& cb = {},
                          bool wait_for_room = false, const char* kind = "execute");
// Queues a plan on the executor without waiting (the asynchronous form); `done` gets the result
// (or the error) on a worker once it ran, or a 503 when a shutdown dropped it first. `started`
// runs when a worker takes it. kQueueFull / kShuttingDown: nothing was queued, `done` never runs.
sched::Admission SubmitPlan(ServerContext& ctx, std::shared_ptr<const ExecutionPlan> plan,
                            std::function<void()> started, std::function<void(ApiOr<ExecResult>)> done);

}  // namespace lsb::server
