// /proc/<pid>/mountinfo, parsed once for the host (cgroup_layout.h: where the cgroup hierarchies
// are) and for llm-sandbox-init (mounts.cc: a mount's options where statvfs says nothing, gVisor).
// Pure; no iostreams (init is static and kept small).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lsb {

struct MountinfoEntry {
  long id = 0;              // the mount's id, and its parent's (a mount on top of another at
  long parent = 0;          // the same mount point has that one as parent: it covers it)
  std::string root;         // the path inside the mounted file system shown here (unescaped)
  std::string mount_point;  // unescaped: "\040" is a space
  std::vector<std::string> mount_options;  // per mount ("ro", "noexec", ...)
  std::string fstype;
  std::vector<std::string> super_options;  // the file system's (v1 cgroup controllers live here)
};

// One entry per well-formed line:
//   id parent maj:min root mount_point mount_opts [optional...] - fstype source super_opts
// Lines without the "-" separator or an fstype are skipped.
std::vector<MountinfoEntry> ParseMountinfo(std::string_view text);

// Decodes mountinfo's octal escapes ("\040" is a space, "\134" a backslash).
std::string UnescapeMountinfo(std::string_view s);

// Whether the last mount at exactly `path` (the one visible there) has per-mount `option`; false
// when nothing is mounted at `path`.
bool MountHasOption(const std::vector<MountinfoEntry>& mounts, std::string_view path, std::string_view option);

}  // namespace lsb
