// How many sessions the daemon holds at once when --max-sessions is not given (issue 35): sized by
// the host's memory, not a constant, so a large host serves a burst of creates and a small one is
// not promised what it cannot hold.
//
//   max_sessions = clamp(memory_total / kSessionBudget, kMinSessions, kMaxSessions)
//
// kSessionBudget is what an idle session costs on average (a box: init, the interpreter, its
// page tables and tmpfs), measured at 15-25 MiB for a python session, rounded up. Memory is the
// host's MemTotal, or the daemon's cgroup memory.max when lower (worker_sizing.h ReadHostCapacity).
// A session that runs uses more (up to its policy's memory limit); executions at once are bounded
// separately by the workers. docs/api.md "Session queue".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/worker_sizing.h"

namespace lsb::server {

inline constexpr uint64_t kSessionBudget = 32ull << 20;
inline constexpr size_t kMinSessions = 16;
inline constexpr size_t kMaxSessions = 4096;

struct SessionSizing {
  size_t max_sessions = kMinSessions;
  std::string why;  // one line for the startup log
};

SessionSizing SizeMaxSessions(const HostCapacity& host);

}  // namespace lsb::server
