// The user namespace's uid/gid maps. As root, ids 0..count-1 inside map to an unprivileged host
// range starting at `base` (default 100000), so the program's uid 1000 inside is a real, unused,
// unprivileged host id. Unprivileged, the kernel allows only one id: our own, as 0 inside.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/result.h"

namespace lsb::native {

inline constexpr uint32_t kDefaultIdBase = 100000;
inline constexpr uint32_t kDefaultIdCount = 65536;

struct IdMapPlan {
  std::string uid_map;         // text for /proc/<pid>/uid_map
  std::string gid_map;
  bool deny_setgroups = false; // unprivileged: "deny" must be written to setgroups first
  bool full_range = false;     // ids 0..count-1 are mapped (else only 0)
  std::string describe;        // "uids 0-65535 -> host 100000-165535" or "uid 0 -> host 1000 only"
  // Whether `id` inside the box is mapped.
  bool Maps(uint32_t id) const { return full_range ? id < count : id == 0; }
  uint32_t count = 1;
};

// `privileged`: the caller may map a range (CAP_SETUID/CAP_SETGID in its user namespace).
IdMapPlan PlanIdMap(bool privileged, uid_t host_uid, gid_t host_gid, uint32_t base = kDefaultIdBase,
                    uint32_t count = kDefaultIdCount);

// Writes setgroups (when needed), uid_map and gid_map of process `pid`.
Status WriteIdMaps(pid_t pid, const IdMapPlan& plan);

}  // namespace lsb::native
