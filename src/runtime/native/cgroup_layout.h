// Where this process's cgroups live, per controller, detected at run time (never assumed): a host
// may mount memory/cpu/pids as cgroup v1 hierarchies, as one cgroup v2 tree, or mix the two (v2
// mounted at /sys/fs/cgroup/unified with only some controllers). Parsing is pure so it is tested
// with fixture texts of each layout; DetectCgroupLayout() feeds it the live files.
#pragma once

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

// The live layout of the calling process.
CgroupLayout DetectCgroupLayout();

// Decodes mountinfo's octal escapes ("\040" is a space).
std::string UnescapeMountinfo(std::string_view s);

}  // namespace lsb::native
