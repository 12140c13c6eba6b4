#include "server/worker_sizing.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace lsb::server {
namespace {

// One number from a file ("max" or unreadable = 0, unknown).
uint64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return 0;
  try {
    return std::stoull(s);
  } catch (...) {
    return 0;
  }
}

// One /proc/meminfo line's bytes ("MemAvailable:", "MemTotal:"), 0 when absent.
uint64_t MemInfo(const std::string& want) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == want) return kib * 1024;
  }
  return 0;
}

// The daemon's cgroup v2 directory ("0::/path" in /proc/self/cgroup), "" when there is none.
std::string OwnCgroupDir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "";
}

// The smaller known bound (0 = unknown).
uint64_t Tighter(uint64_t a, uint64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

BoxCost LargestBoxCost(const std::vector<Policy>& policies) {
  BoxCost cost;
  bool first = true;
  for (const auto& p : policies) {
    uint64_t mem = p.memory_bytes ? p.memory_bytes : kUnlimitedBoxMemory;
    if (first || mem > cost.memory_bytes) {
      cost.memory_bytes = mem;
      cost.policy = p.name;
    }
    cost.pids = first ? p.pids : std::max<uint64_t>(cost.pids, p.pids);
    first = false;
  }
  return cost;
}

WorkerSizing SizeWorkers(const HostCapacity& host, const BoxCost& box) {
  // A quarter of each resource stays for the daemon, the host and whatever else runs there.
  // A bound is known when both of its sides are (it may still come out 0: the floor applies).
  const bool memory_known = host.memory_available_bytes && box.memory_bytes;
  const bool pids_known = host.pid_budget && box.pids;
  uint64_t by_memory = memory_known ? host.memory_available_bytes / 4 * 3 / box.memory_bytes : 0;
  uint64_t by_pids = pids_known ? host.pid_budget / 4 * 3 / box.pids : 0;
  std::ostringstream why;
  uint64_t n = 0;
  if (memory_known && (!pids_known || by_memory <= by_pids)) {
    n = by_memory;
    why << "memory: 3/4 of " << Mib(host.memory_available_bytes) << " available / " << Mib(box.memory_bytes)
        << " per box" << (box.policy.empty() ? "" : " (" + box.policy + ")");
  } else if (pids_known) {
    n = by_pids;
    why << "pids: 3/4 of " << host.pid_budget << " / " << box.pids << " per box";
  } else {
    why << "host capacity unknown";
  }
  WorkerSizing s;
  s.workers = static_cast<size_t>(std::clamp<uint64_t>(n, kMinWorkers, kMaxWorkers));
  if (n < kMinWorkers) why << "; raised to the floor " << kMinWorkers;
  if (n > kMaxWorkers) why << " = " << n << "; capped at " << kMaxWorkers;
  s.why = why.str();
  return s;
}

HostCapacity ReadHostCapacity() {
  HostCapacity h;
  std::string cg = OwnCgroupDir();
  h.memory_available_bytes = MemInfo("MemAvailable:");
  h.memory_total_bytes = MemInfo("MemTotal:");
  h.pid_budget = Tighter(ReadNumber("/proc/sys/kernel/pid_max"), ReadNumber("/proc/sys/kernel/threads-max"));
  if (!cg.empty()) {
    uint64_t max = ReadNumber(cg + "/memory.max");
    uint64_t used = ReadNumber(cg + "/memory.current");
    if (max) h.memory_available_bytes = Tighter(h.memory_available_bytes, max > used ? max - used : 1);
    h.memory_total_bytes = Tighter(h.memory_total_bytes, max);
    uint64_t pids_max = ReadNumber(cg + "/pids.max");
    uint64_t pids_now = ReadNumber(cg + "/pids.current");
    if (pids_max) h.pid_budget = Tighter(h.pid_budget, pids_max > pids_now ? pids_max - pids_now : 1);
  }
  return h;
}

}  // namespace lsb::server
