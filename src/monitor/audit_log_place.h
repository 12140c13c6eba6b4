// Where each daemon's audit log lives by default, and how `llm-sandbox logs` finds it (issue 37:
// every daemon of a state directory wrote, and `logs` read, one audit.jsonl). A daemon started
// without --audit-log and without $LLM_SANDBOX_AUDIT_LOG writes
//   <state dir>/daemons/<HOST>_<PORT>/audit.jsonl
// keyed by its --listen address (HOST's characters other than letters, digits, '.' and '-' become
// '_'). An explicit --audit-log FILE or $LLM_SANDBOX_AUDIT_LOG is used as it is, as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lsb::monitor {

// "127.0.0.1", 8080 -> "127.0.0.1_8080"; "::1", 8080 -> "__1_8080".
std::string DaemonKey(const std::string& host, uint16_t port);

// $LLM_SANDBOX_AUDIT_LOG when set, else the per-daemon file above; "" when there is no state dir.
std::string DaemonAuditLogPath(const std::string& host, uint16_t port);

struct FoundAuditLog {
  std::string key;   // "127.0.0.1_8080"
  std::string path;  // its audit.jsonl
  int64_t mtime_ns = 0;
};
// The per-daemon logs under the default state dir, the most recently written first.
std::vector<FoundAuditLog> FindDaemonAuditLogs();

// "HOST:PORT" (or just "PORT": 127.0.0.1) -> the key of that daemon; "" when it is not an address.
std::string KeyOfListenAddress(const std::string& address);

}  // namespace lsb::monitor
