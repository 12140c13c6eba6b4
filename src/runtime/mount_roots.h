// container.mounts against the operator's allowlist (serve/run --mount-root DIR): a source is
// bound only when its real path (every symlink and ".." resolved) is one of the roots or below
// one. Backend-neutral; the native backend then opens the checked path without following any
// symlink (host_mount.h), so a swap after the check fails instead of escaping.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb {

// `mounts` with each source replaced by its real path; an error naming the source and the flag
// when one is missing, not a directory, or outside every root (also when there are no roots).
Result<std::vector<protocol::MountSpec>> ResolveHostMounts(const std::vector<protocol::MountSpec>& mounts,
                                                           const std::vector<std::string>& roots);

// The real path of `path` when it is an existing directory.
Result<std::string> RealDirectory(const std::string& path, const std::string& what);

}  // namespace lsb
