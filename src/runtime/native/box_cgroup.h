// One box's cgroups: created under this process's own group as <own>/<parent>/<box-id> in each
// controller's tree (v1 or v2, per controller, from CgroupLayout), limits written, verdict read,
// and everything removed on destruction. Owning object: the destructor kills every process left in
// the groups and removes the directories, so no path leaves a cgroup behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/native/cgroup_layout.h"

namespace lsb::native {

struct CgroupLimits {
  uint64_t memory_bytes = 0;  // 0 = not limited (still accounted: OOM count, peak)
  double cpu = 0;             // cores; 0 = not limited
  uint64_t pids = 0;          // 0 = not limited
};
// A box's shape (NativeBackend::BoxShape) holds its limits: a field added here goes in with it.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CgroupLimits, memory_bytes, cpu, pids)

// Counters are cumulative over the groups' life; callers compare before/after a run.
struct CgroupStats {
  uint64_t oom_kills = 0;
  uint64_t pids_max_events = 0;
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<uint64_t> cpu_ns;
  std::optional<uint64_t> memory_current_bytes;  // in use now (monitoring samples)
};

// How (or why not) one limit can be enforced here; `control` is the policy key.
struct CgroupControl {
  std::string control;  // "resources.memory" | "resources.cpu" | "resources.pids"
  bool enforced = false;
  std::string how;      // "cgroup v1 memory.limit_in_bytes at /sys/fs/cgroup/memory/..." or why not
};

// Probes, without creating a box group, whether each limit in `limits` can be enforced: the
// controller exists and <own>/<parent_name> can be created and written (v2: the controller can be
// delegated to it). Creates <own>/<parent_name> when missing (it is shared and kept).
std::vector<CgroupControl> ProbeCgroups(const CgroupLayout& layout, const std::string& parent_name,
                                        const CgroupLimits& limits);

// Removes box groups left behind under <own>/<parent_name> by a process that was killed before it
// could (a daemon's SIGKILL): each "native-*" group with no process in it whose directory is older
// than `min_age` (a live box's group holds its init within milliseconds of its creation). Best
// effort: returns how many were removed.
size_t RemoveStaleBoxGroups(const CgroupLayout& layout, const std::string& parent_name,
                            std::chrono::seconds min_age);

class BoxCgroups {
 public:
  // Creates the groups and writes the limits; any failure to enforce a requested limit is an
  // error (fail closed) and whatever was created is removed again.
  static Result<std::unique_ptr<BoxCgroups>> Create(const CgroupLayout& layout,
                                                    const std::string& parent_name,
                                                    const std::string& box_id,
                                                    const CgroupLimits& limits);
  ~BoxCgroups();
  BoxCgroups(const BoxCgroups&) = delete;
  BoxCgroups& operator=(const BoxCgroups&) = delete;

  // Moves `pid` into every group (before it runs anything). With `skip_v1`, only the v2 group:
  // the process joins its v1 groups itself through SelfAttachFiles().
  Status AddProcess(pid_t pid, bool skip_v1 = false);
  // For each v1 group, its `tasks` file opened for writing (O_CLOEXEC) by this process. A new,
  // single-threaded child that writes "0" to each joins the groups itself, and the kernel checks
  // the permission against the opener's credentials. Why not cgroup.procs from the host: moving
  // another process takes the global threadgroup lock for writing, whose first writer waits for
  // an RCU grace period (the largest single cost of a box start); a thread moving itself skips
  // that lock (both measured: BENCHMARKS.md, "Figures behind decisions in the code").
  Result<std::vector<UniqueFd>> SelfAttachFiles() const;
  // Every group's membership file (v1 tasks, v2 cgroup.procs), opened by us: a fork server's box
  // (fork_server.h) writes "0" to each, as its process is not ours to move by pid.
  Result<std::vector<UniqueFd>> JoinFiles() const;
  CgroupStats Read() const;
  // Restarts the memory peak where the kernel allows it (v1 memory.max_usage_in_bytes; v2's
  // memory.peak is only resettable per open file, so it stays the box's peak).
  void ResetPeak();
  // Kills every process left in the groups and removes them (retrying while tasks exit).
  // Idempotent; the destructor calls it.
  Status Destroy();
  // This object no longer removes the groups: another process (NativeBox::DetachTeardown's
  // helper) has taken that job over.
  void Release() { destroyed_ = true; }
  // The group directories, for tests and diagnostics.
  std::vector<std::string> dirs() const;

 private:
  struct Group {
    CgroupVersion version;
    std::string dir;
    std::set<std::string> controllers;  // served by this directory
  };
  BoxCgroups() = default;
  const Group* Find(const std::string& controller) const;
  std::vector<Group> groups_;
  bool destroyed_ = false;
};

}  // namespace lsb::native
