// `llm-sandbox serve`: wires the parts (backend, policies, executor, sessions, HTTP) and runs
// until SIGTERM/SIGINT. SIGHUP reloads the policies (a bad file keeps the old set).
// Shutdown order: stop accepting -> refuse new work (503) -> let running executions finish within
// the grace -> kill the boxes still running -> close every session (its box) -> end connections.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "egress/egress_options.h"
#include "base/result.h"
#include "image/registry_client.h"
#include "image/store_puller.h"
#include "runtime/backend.h"
#include "scheduler/one_shot_pool.h"
#include "scheduler/session/session_pool.h"
#include "server/connection_table.h"
#include "server/e2b/front_door.h"
#include "server/http_server.h"
#include "server/router.h"
#include "server/server_context.h"

namespace lsb::server {

struct DaemonConfig {
  egress::EgressOptions egress;    // --egress-*: the native backend's egress proxy (docs/network.md)
  // Where it listens (--listen), the body limit (serve derives it from the file limit,
  // body_limits.h) and the slow-client limits (docs/api.md "Connection limits").
  HttpServerOptions http;
  std::string policies_dir;        // "" = DefaultPolicyDir()
  std::string images_file;
  std::vector<std::string> mount_roots;  // --mount-root: where container.mounts' sources may be
  // Native boxes of python runs and sessions from a warm interpreter (runtime/native/fork_server.h):
  // on by default; --fork-server asks for it (an error where it cannot be had), --no-fork-server
  // turns it off; unset: $LLM_SANDBOX_FORK_SERVER (on|off), else on where the native backend has it.
  std::optional<bool> fork_server;
  // The image store (--store; "" = DefaultStoreDir()) and how pulls into it on first use reach
  // registries (--insecure-registry, --ca-file, --certs-dir, --registry-mirror).
  std::string image_store;
  image::PullOptions pull;
  std::string backend = "auto";
  // The node this daemon runs on (--node-name, $LLM_SANDBOX_NODE, else the hostname): named in
  // /readyz, /metrics, every result and every session id (docs/scale-out.md).
  std::string node_name;
  // Given (not the hostname default): every /metrics series carries node="<name>" too, so one
  // Prometheus tells a cluster's daemons apart; a lone daemon's series stay as they were.
  bool node_label = false;
  std::string init_path;
  // Warm boxes kept per policy, whatever the backend (--pool-size, alias --native-pool; 0 = none):
  // kept by the backend when it pools itself (Docker's containers), else by the one-shot pool.
  size_t pool_size = 2;
  // Warm python session boxes kept at most per (policy, setup, owner) key (--session-pool; 0 = none):
  // scheduler/session/session_pool.h.
  std::optional<size_t> session_pool;  // unset: sched::DefaultSessionPoolDepth of the host's memory
  bool prebuild = false;           // --prebuild: every policy's container.build before listening
  size_t max_concurrency = 0;      // 0 = sized by box cost (worker_sizing.h)
  size_t queue = 0;                // 0 = 4 x max_concurrency
  size_t max_sessions = 0;               // 0 = sized by host memory (session_sizing.h)
  size_t session_queue = 256;            // creates waiting at the cap (--session-queue; 0 = none)
  uint64_t session_queue_wait_ms = 30000;  // how long each waits (--session-queue-wait; 0 = 429 at once)
  int shutdown_grace_ms = 10000;
  std::set<std::string> tokens;
  std::set<std::string> allowed_origins;  // --allow-origin, normalized (web_guard.h)
  ServerLimits limits;
  ExecutionStoreLimits async_results;   // kept asynchronous results (--async-keep, --async-keep-bytes)
  // Paused sessions (docs/api.md "Pause and resume"): "" = <state dir>/paused-sessions; "none" = off (501).
  std::string paused_dir;
  size_t max_paused = 64;               // --max-paused
  size_t max_paused_per_owner = 0;      // --max-paused-per-owner; 0 = max_paused / 4, at least 1
  uint64_t paused_ttl_s = 24 * 3600;    // --paused-ttl
  uint64_t max_paused_bytes = 128ull << 20;       // --max-paused-bytes (one record)
  uint64_t max_paused_total_bytes = 2ull << 30;   // --max-paused-total-bytes
  // --fanout-budget, --fanout-wait: the daemon-wide memory of fork, batch, pause and resume
  // (server/byte_budget.h); 0 = none.
  uint64_t fanout_budget = 256ull << 20;
  int64_t fanout_wait_ms = 30000;
  bool monitoring = true;               // --monitoring off: no metrics, events, audit, webhooks
  lsb::monitor::MonitorOptions monitor;  // audit log, webhooks (docs/monitoring.md)
};

// The daemon's parts wired around one backend and its loaded policies, before anything listens:
// what RunDaemon serves, and what a test builds around a backend of its own. Any Backend that
// implements the interface's pure functions is accepted; what it does not say keeps the
// interface's defaults (no leftovers, no pool of its own: the one-shot pool keeps its boxes).
class DaemonCore {
 public:
  static Result<std::unique_ptr<DaemonCore>> Create(const DaemonConfig& config, std::unique_ptr<Backend> backend,
                                                    std::unique_ptr<sched::PolicyStore> policies);
  ~DaemonCore();
  DaemonCore(const DaemonCore&) = delete;
  DaemonCore& operator=(const DaemonCore&) = delete;

  ServerContext& context() { return *ctx_; }
  const Router& router() const { return router_; }
  // The E2B front door's data plane (requests with E2b-Sandbox-Id; server/e2b/front_door.h).
  const e2b::FrontDoor& e2b() const { return *e2b_; }
  Backend& backend() { return *backend_; }
  sched::Executor& executor() { return *executor_; }
  size_t boxes() const { return boxes_.size(); }

  // SIGHUP: reloads the policies (a bad file keeps the previous set); warm boxes of the previous
  // ones go. The log line says which.
  void ReloadPolicies();
  // Shutdown, in the order of this file's head: new work is refused (503), live event streams end.
  void BeginShutdown();
  // Then, once nothing new arrives: running executions get `grace_ms` to finish, what still runs is
  // killed, the pool and every session (its box) are closed.
  void FinishWork(int grace_ms);
  // Last: queued webhooks are dropped (counted).
  void StopMonitor();
  // The image store GET /v1/images lists, and its puller, whose pulls become image_pull events.
  void AttachImages(image::StoreAndPuller images);

 private:
  DaemonCore(std::unique_ptr<Backend> backend, std::unique_ptr<sched::PolicyStore> policies, const DaemonConfig& c);
  void StartPool(size_t per_policy, const std::string& default_policy);

  std::unique_ptr<sched::PolicyStore> policies_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ExecutionStore> executions_;  // outlives the executor, whose tasks finish into it
  std::unique_ptr<sched::Executor> executor_;
  sched::BoxRegistry boxes_;
  std::unique_ptr<sched::SessionManager> sessions_;
  std::unique_ptr<OpenTurns> session_opens_;  // session opens in flight (open_turns.h)
  std::unique_ptr<sched::OneShotPool> pool_;  // null: the backend pools itself, or no pooling
  std::unique_ptr<sched::SessionPool> session_pool_;  // null: --session-pool 0
  std::unique_ptr<ServerContext> ctx_;
  std::unique_ptr<monitor::Monitor> monitor_;
  image::StoreAndPuller images_;  // empty: no image store here
  Router router_;
  std::unique_ptr<e2b::FrontDoor> e2b_;
  std::unique_ptr<sched::PausedSessions> paused_;
  std::unique_ptr<ByteBudget> fanout_;  // outlives every request that holds a reservation
  // Async batches (they use everything above): joined by FinishWork, else first thing destroyed.
  std::unique_ptr<BackgroundJobs> jobs_;
};

// True when `host` is a loopback address (or "localhost").
bool IsLoopback(const std::string& host);

// The route label of the HTTP metrics: the pattern the router (or the E2B data plane's) matched,
// "other" for none, so the label set stays the route table's and holds no raw id or path.
std::string RouteLabel(const Router& router, const e2b::FrontDoor& e2b, const HttpRequest& req);

// Runs the daemon; returns the process exit code (0 after a clean SIGTERM).
int RunDaemon(DaemonConfig config);

}  // namespace lsb::server
