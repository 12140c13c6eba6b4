#include "server/session_sizing.h"

#include <algorithm>

namespace lsb::server {

SessionSizing SizeMaxSessions(const HostCapacity& host) {
  SessionSizing s;
  if (!host.memory_total_bytes) {
    s.why = "host memory unknown; the floor " + std::to_string(kMinSessions);
    return s;
  }
  uint64_t n = host.memory_total_bytes / kSessionBudget;
  s.max_sessions = static_cast<size_t>(std::clamp<uint64_t>(n, kMinSessions, kMaxSessions));
  s.why = "memory: " + std::to_string(host.memory_total_bytes >> 20) + " MiB / " +
          std::to_string(kSessionBudget >> 20) + " MiB per session";
  if (n < kMinSessions) s.why += "; raised to the floor " + std::to_string(kMinSessions);
  if (n > kMaxSessions) s.why += " = " + std::to_string(n) + "; capped at " + std::to_string(kMaxSessions);
  return s;
}

}  // namespace lsb::server
