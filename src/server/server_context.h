// What every route shares: the backend, the policies, the executor, the live boxes and sessions,
// and the daemon's limits. Owned by the Daemon (daemon.h), which outlives every request.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include "image/store_puller.h"
#include "monitor/monitor.h"
#include "runtime/backend.h"
#include "runtime/exec_result.h"
#include "server/open_turns.h"
#include "scheduler/archive/archive_in.h"
#include "scheduler/box_registry.h"
#include "scheduler/session/paused_sessions.h"
#include "scheduler/workspace_io.h"
#include "scheduler/executor.h"
#include "scheduler/policy_store.h"
#include "scheduler/session/session_manager.h"
#include "server/background_jobs.h"
#include "server/byte_budget.h"
#include "server/execution_store.h"
#include "scheduler/driver/rich_outputs.h"
#include "server/policy_runnable.h"

namespace lsb::server {

struct ServerLimits {
  std::string default_policy = "code-sandbox";
  uint64_t max_file_bytes = 16u << 20;   // one uploaded / downloaded / inline file
  size_t max_batch_tasks = 256;
  // A /v1/batch answer in all, as sent (JSON-encoded); each task gets an equal share, and a result
  // over its share is cut and flagged (server/json_budget.h).
  uint64_t max_batch_response_bytes = 16u << 20;
  uint64_t default_idle_timeout_ms = 300000;
  uint64_t default_max_lifetime_ms = 3600000;
  uint64_t max_session_lifetime_ms = 24ull * 3600 * 1000;
  // Archives in, collect and directories out (docs/api.md "Archives", "Files out"); an archive's
  // own bytes are bounded by max_file_bytes like a file's.
  sched::ArchiveLimits archive;
  sched::CollectLimits collect;
  sched::TreeLimits tree;
  sched::OutputsLimits outputs;  // rich outputs (docs/api.md "Rich outputs")
};

struct ServerContext {
  Backend& backend;
  sched::PolicyStore& policies;
  sched::Executor& executor;
  sched::BoxRegistry& boxes;
  sched::SessionManager& sessions;
  ServerLimits limits;
  std::set<std::string> tokens;           // empty: no auth (loopback only)
  std::string node;                       // this daemon's node (--node-name): /readyz, /metrics, results
  // When this daemon started (/readyz, /v1/overview): tells a restarted or updated daemon on the
  // same node from the one before it (a rolling update's check, docs/scale-out.md).
  std::chrono::system_clock::time_point started_at = std::chrono::system_clock::now();
  std::atomic<bool> shutting_down{false};
  lsb::monitor::Monitor* monitor = nullptr;    // null when monitoring is off (--monitoring off)
  ExecutionStore* executions = nullptr;        // async results (execution_store.h); null: no async form
  sched::PausedSessions* paused = nullptr;     // paused sessions on disk; null: pause/resume answer 501
  OpenTurns* session_opens = nullptr;          // session opens in flight (open_turns.h); null: no gate
  ByteBudget* fanout = nullptr;                // fan-out memory budget (byte_budget.h); null: none
  BackgroundJobs* jobs = nullptr;              // async batches' threads (background_jobs.h); with `executions`
  const image::SharedStore* images = nullptr;  // the image store (GET /v1/images); null: none here
  PolicyRunnability runnability{backend};      // which policies `backend` can run (policy_runnable.h)

  // An execution id naming this node, ex-<16 hex>-<node>, as a session id does: a front routes
  // GET /v1/executions/{id} (an async result, the monitoring view) to the daemon that has it.
  std::string NewExecutionId() const { return lsb::NewExecutionId() + "-" + node; }
};

// Why an execution is not here: an id naming another node was sent to the wrong daemon.
inline std::string MissingExecutionHere(const ServerContext& ctx, const std::string& id) {
  const size_t tag = std::string("ex-").size() + 16;
  if (id.rfind("ex-", 0) == 0 && id.size() > tag + 1 && id[tag] == '-' && id.substr(tag + 1) != ctx.node)
    return "no execution " + id + " on node " + ctx.node + ": it ran on node " + id.substr(tag + 1) +
           "; ask that node (the cluster front routes by the id, docs/scale-out.md)";
  return "";
}

}  // namespace lsb::server
