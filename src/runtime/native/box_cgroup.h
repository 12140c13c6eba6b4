// One box's cgroups: created under this process's own group as <own>/<parent>/<box-id> in each
// controller's tree (v1 or v2, per controller, from CgroupLayout), limits written, verdict read,
// and everything removed on destruction. Owning object: the destructor kills every process left in
// the groups and removes the directories, so no path leaves a cgroup behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/native/cgroup_layout.h"

namespace lsb::native {

struct CgroupLimits {
  uint64_t memory_bytes = 0;  // 0 = not limited (still accounted: OOM count, peak)
  double cpu = 0;             // cores; 0 = not limited
  uint64_t pids = 0;          // 0 = not limited
};

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

  // Moves `pid` into every group (before it runs anything).
  Status AddProcess(pid_t pid);
  CgroupStats Read() const;
  // Restarts the memory peak where the kernel allows it (v1 memory.max_usage_in_bytes; v2's
  // memory.peak is only resettable per open file, so it stays the box's peak).
  void ResetPeak();
  // Kills every process left in the groups and removes them (retrying while tasks exit).
  // Idempotent; the destructor calls it.
  Status Destroy();
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
