// Where this process's cgroups live, per controller, detected at run time (never assumed): a host
// may mount memory/cpu/pids as cgroup v1 hierarchies, as one cgroup v2 tree, or mix the two (v2
// mounted at /sys/fs/cgroup/unified with only some controllers). Parsing is pure so it is tested
// with fixture texts of each layout; DetectCgroupLayout() feeds it the live files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::native {

enum class CgroupVersion { kNone, kV1, kV2 };
const char* CgroupVersionName(CgroupVersion v);

// One controller's place: the directory of this process's own group in that controller's tree.
struct ControllerPlace {
  CgroupVersion version = CgroupVersion::kNone;
  std::string mount_point;  // "/sys/fs/cgroup/memory" (v1) or "/sys/fs/cgroup" (v2)
  std::string own_path;     // our group relative to the mount's root: "/" or "/a/b"
  std::string reason;       // when kNone: why the controller is unusable
  std::string dir() const;  // mount_point + own_path, without a trailing slash
};

// The controllers the native backend uses: "memory", "cpu", "cpuacct" (usage; on v2 it is the
// core file cpu.stat), "pids".
struct CgroupLayout {
  std::map<std::string, ControllerPlace> controllers;
  // Never null for the four known names (an unknown name gets a kNone place).
  const ControllerPlace& Get(const std::string& controller) const;
};

// Reads a small file; std::nullopt when it cannot be read. A seam for tests.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// Pure: mountinfo = text of /proc/self/mountinfo, proc_cgroup = text of /proc/self/cgroup; `read`
// is asked only for "<v2 group dir>/cgroup.controllers".
CgroupLayout ParseCgroupLayout(std::string_view mountinfo, std::string_view proc_cgroup,
                               const FileReader& read);

// What a path is, for the standard-layout check: the kind of cgroup file system it is on (kNone:
// not a cgroup file system), that file system's device and the path's inode.
struct ProbedPath {
  CgroupVersion version = CgroupVersion::kNone;
  uint64_t device = 0;
  uint64_t inode = 0;
};
// nullopt when the path does not exist. A seam for tests; the live one is statfs(2) + stat(2).
using MountProbe = std::function<std::optional<ProbedPath>(const std::string& path)>;
// kernfs numbers the root directory of every cgroup hierarchy 1: a mount showing inode 1 shows
// the whole hierarchy, so our group's path in /proc/self/cgroup is our path below it.
inline constexpr uint64_t kHierarchyRootInode = 1;

// The standard layout (systemd, Docker, Debian: each v1 hierarchy at /sys/fs/cgroup/<its
// controllers>, v2 at /sys/fs/cgroup/unified or /sys/fs/cgroup), confirmed hierarchy by
// hierarchy without /proc/self/mountinfo: reading mountinfo takes the kernel's mount lock that
// every box start and teardown also takes (its cost: BENCHMARKS.md, "Figures behind decisions in
// the code"). A hierarchy is accepted only on a cgroup file system of its kind, at its root
// (kHierarchyRootInode), each v1 one on its own device and holding its controller's root file;
// nullopt at the first doubt, and ParseCgroupLayout with mountinfo decides. The same resolution
// follows, so both give the same layout wherever the standard one holds (tested).
std::optional<CgroupLayout> StandardCgroupLayout(std::string_view proc_cgroup, const MountProbe& probe,
                                                 const FileReader& read);

// The live seams: ReadFile, and statfs(2) + stat(2).
FileReader LiveFileReader();
MountProbe LiveMountProbe();

// The live layout of the calling process: the standard one when it holds, else from mountinfo.
CgroupLayout DetectCgroupLayout();

}  // namespace lsb::native
