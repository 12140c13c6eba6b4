// `llm-sandbox serve`: wires the parts (backend, policies, executor, sessions, HTTP) and runs
// until SIGTERM/SIGINT. SIGHUP reloads the policies (a bad file keeps the old set).
// Shutdown order: stop accepting -> refuse new work (503) -> let running executions finish within
// the grace -> kill the boxes still running -> close every session (its box) -> end connections.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "server/connection_table.h"
#include "server/server_context.h"

namespace lsb::server {

struct DaemonConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string policies_dir;        // "" = DefaultPolicyDir()
  std::string images_file;
  std::string backend = "auto";
  std::string init_path;
  size_t pool_size = 2;            // docker: warm containers kept per policy (--pool-size; 0 = none)
  size_t native_pool = 2;          // native: warm boxes kept per policy for one-shots (--native-pool; 0 = none)
  size_t max_concurrency = 0;      // 0 = sized by box cost (worker_sizing.h)
  size_t queue = 0;                // 0 = 4 x max_concurrency
  uint64_t max_body = 10u << 20;  // serve derives it from the file limit (body_limits.h)
  size_t max_sessions = 64;
  int shutdown_grace_ms = 10000;
  std::set<std::string> tokens;
  std::set<std::string> allowed_origins;  // --allow-origin, normalized (web_guard.h)
  // Slow clients (docs/api.md "Connection limits"): see HttpServerOptions for the meaning.
  ConnLimits connections;
  int header_timeout_ms = 10000;
  int body_timeout_ms = 10000;
  int write_timeout_ms = 10000;
  int keepalive_timeout_ms = 30000;
  uint64_t min_transfer_rate = 64u << 10;
  ServerLimits limits;
  ExecutionStoreLimits async_results;   // kept asynchronous results (--async-keep, --async-keep-bytes)
  bool monitoring = true;               // --monitoring off: no metrics, events, audit, webhooks
  lsb::monitor::MonitorOptions monitor;  // audit log, webhooks (docs/monitoring.md)
};

// True when `host` is a loopback address (or "localhost").
bool IsLoopback(const std::string& host);

// Runs the daemon; returns the process exit code (0 after a clean SIGTERM).
int RunDaemon(DaemonConfig config);

}  // namespace lsb::server
