// Where a client may put or fetch a file in a box: an absolute, normalized path strictly inside
// one of the policy's tmpfs mounts or overlay workspaces (its writable dirs). Checked on the host before anything runs;
// the in-box helper refuses symbolic links on top (python_driver.h).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb::sched {

// The path itself when acceptable, else an error saying what is wrong and what is allowed.
Result<std::string> CheckSandboxPath(const Policy& policy, const std::string& path);

// A directory an archive is unpacked into or read from: as CheckSandboxPath, or a tmpfs mount
// point itself (/tmp).
Result<std::string> CheckSandboxDir(const Policy& policy, const std::string& path);

// The policy's writable dirs: its tmpfs mounts, then its overlay mounts' targets (container.mounts
// mode overlay: writable in the box, the writes never reaching the host).
std::vector<std::string> WritableDirs(const Policy& policy);

// Whether `path` is absolute and normalized (no empty, "." or ".." component, no trailing '/'),
// with no NUL or newline: what the host accepts as a path the box's file helper names.
bool IsNormalizedAbsolute(const std::string& path);

}  // namespace lsb::sched
