// How many sessions the daemon holds at once when --max-sessions is not given (issue 35): sized by
// the host's memory, not a constant, so a large host serves a burst of creates and a small one is
// not promised what it cannot hold.
//
//   max_sessions = clamp(memory_total / kSessionBudget, kMinSessions, kMaxSessions)
//
// kSessionBudget is an idle session's cost with room to spare: the processes of 20 idle python
// sessions on the native backend measured 8.9 MiB PSS each (init, the interpreter, its driver);
// the rest covers what PSS does not show (page tables, the box's tmpfs files, kernel objects) and
// a little use. Memory is the host's MemTotal, or the daemon's cgroup memory.max when lower
// (worker_sizing.h ReadHostCapacity).
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
