// How many executions the daemon runs at once when --max-concurrency is not given: sized by what
// a box costs (its policy's memory limit and pids), not by cores. Agent work mostly waits (on a
// model, the network, a sleep), and a box's CPU is already capped by its policy, so cores are the
// wrong unit: ten sub-agents that sleep would run at a fifth of the speed on two cores.
//
//   workers = clamp(min(3/4 of available memory / largest box memory,
//                       3/4 of the pid budget   / largest box pids), kMinWorkers, kMaxWorkers)
//
// The largest loaded policy sets the cost (a policy with no memory limit counts kUnlimitedBoxMemory),
// so every box the daemon may start at once fits. docs/api.md "Concurrency and queue".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace lsb::server {

inline constexpr size_t kMinWorkers = 4;
inline constexpr size_t kMaxWorkers = 64;
inline constexpr uint64_t kUnlimitedBoxMemory = 1ull << 30;  // the cost of a box with no memory limit

// What the host offers (0 = unknown: that bound does not apply).
struct HostCapacity {
  uint64_t memory_available_bytes = 0;  // MemAvailable, or the daemon's cgroup memory.max if lower
  uint64_t pid_budget = 0;              // kernel pid_max / threads-max, or the cgroup's pids.max
  uint64_t memory_total_bytes = 0;      // MemTotal, or the cgroup's memory.max if lower (session_sizing.h)
};

// What the most expensive box of the loaded policies costs.
struct BoxCost {
  std::string policy;  // which policy set it
  uint64_t memory_bytes = kUnlimitedBoxMemory;
  uint64_t pids = 128;
};

struct WorkerSizing {
  size_t workers = kMinWorkers;
  std::string why;  // one line for the startup log: which bound set the count
};

BoxCost LargestBoxCost(const std::vector<Policy>& policies);
WorkerSizing SizeWorkers(const HostCapacity& host, const BoxCost& box);
// Reads /proc/meminfo, /proc/sys/kernel/{pid_max,threads-max} and the daemon's own cgroup v2
// memory.max / pids.max (a daemon in a container gets the container's share, not the machine's).
HostCapacity ReadHostCapacity();

}  // namespace lsb::server
