// The daemon's own CPU and memory and the host's, for the dashboard's totals (GET /v1/overview):
// read from /proc (Linux) at the moment of the call. CPU percentages are over the interval since
// the previous sample, so the first one (and one taken within min_interval of the last) reuses the
// last value it had.
//
// Concurrency: UsageSampler locks for itself; any request thread may call Sample().
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

namespace lsb::monitor {

struct ProcessUsage {
  uint64_t cpu_ns = 0;     // user + system, since the process started
  uint64_t rss_bytes = 0;  // resident now
  uint64_t threads = 0;
};

struct HostUsage {
  unsigned cpus = 0;          // online
  uint64_t busy_ticks = 0;    // /proc/stat "cpu": everything but idle and iowait
  uint64_t total_ticks = 0;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_available_bytes = 0;
  double load1 = 0;
};

std::optional<ProcessUsage> ReadProcessUsage();  // of this process
std::optional<HostUsage> ReadHostUsage();

class UsageSampler {
 public:
  explicit UsageSampler(std::chrono::milliseconds min_interval = std::chrono::milliseconds(250))
      : min_interval_(min_interval) {}
  // {"daemon": {"pid", "cpu_seconds", "cpu_percent" (of one core), "rss_bytes", "threads"},
  //  "host": {"cpus", "cpu_percent" (of all cores), "load1", "memory_total_bytes",
  //  "memory_available_bytes"}}; a value that could not be read is null.
  nlohmann::json Sample();

 private:
  std::mutex mu_;
  std::chrono::milliseconds min_interval_;
  std::optional<std::chrono::steady_clock::time_point> last_at_;
  std::optional<ProcessUsage> last_proc_;
  std::optional<HostUsage> last_host_;
  std::optional<double> daemon_pct_, host_pct_;
};

}  // namespace lsb::monitor
