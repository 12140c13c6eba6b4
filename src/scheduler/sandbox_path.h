// Where a client may put or fetch a file in a box: an absolute, normalized path strictly inside
// one of the policy's tmpfs mounts (its writable dirs). Checked on the host before anything runs;
// the in-box helper refuses symbolic links on top (python_driver.h).
#pragma once

#include <string>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb::sched {

// The path itself when acceptable, else an error saying what is wrong and what is allowed.
Result<std::string> CheckSandboxPath(const Policy& policy, const std::string& path);

// A directory an archive is unpacked into or read from: as CheckSandboxPath, or a tmpfs mount
// point itself (/tmp).
Result<std::string> CheckSandboxDir(const Policy& policy, const std::string& path);

// Whether `path` is absolute and normalized (no empty, "." or ".." component, no trailing '/'),
// with no NUL or newline: what the host accepts as a path the box's file helper names.
bool IsNormalizedAbsolute(const std::string& path);

}  // namespace lsb::sched
