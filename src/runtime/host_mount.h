// container.mounts' host side, shared by both backends: each checked source (mount_roots.h)
// becomes a detached mount the host makes. The native backend hands it to init by fd
// (native/launcher.h keep_fds), init only attaching it (init/mounts.cc), never opening a host
// path; the Docker backend attaches it where the engine binds it from (docker/host_mount_views.h).
// The mount is
//   - a clone of the source directory alone (not its submounts), opened without following any
//     symlink (openat2 RESOLVE_NO_SYMLINKS on the checked real path: a component swapped for a
//     symlink after the check fails the box instead of leading elsewhere);
//   - read-only, nosuid, nodev, noexec;
//   - id-mapped: the source's owner shows as the program's uid/gid, so an overlay lets the
//     program change the project's files (in the box's copy only). Other owners show as the
//     overflow id (nobody). Needs CAP_SYS_ADMIN on the host: the daemon runs as root.
// mode ro is this mount as it is; overlay stacks it as overlayfs's lower layer under an upper in
// a tmpfs of the box (init/mounts.cc), so writes never reach the host.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb {

// The detached, id-mapped, read-only mount of `real_source`, whose owner appears as the host ids
// `host_uid`/`host_gid` (the program's ids in the box, mapped to the host).
Result<UniqueFd> OpenHostMount(const std::string& real_source, uid_t host_uid, gid_t host_gid);

}  // namespace lsb
