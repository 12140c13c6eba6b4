// The box's filesystem view (DESIGN §3, "mounts").
//
// build_root: init is uid 0 of a fresh user namespace and owns a fresh mount namespace. It
// assembles a new root on a tmpfs (read-only binds of the system dirs or of an image directory),
// a fresh /proc with runc-style masks, a minimal /dev, the policy's tmpfs mounts and the job dir,
// pivots into it, detaches the old root and makes the new root read-only.
// in_place: the outer box made the mounts; init checks what it relies on and prepares the job dir.
#pragma once

#include <sys/types.h>

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb::init {

Status BuildRoot(const protocol::BoxSetup& setup);
// A fork server's derived box (BoxSetup.fork "derived"): init runs in fresh namespaces made
// inside the zygote box, whose read-only root it keeps; it mounts over it what is the box's own:
// a fresh, masked /proc, the policy's tmpfs mounts and the job dir, and sets the hostname.
Status DeriveRoot(const protocol::BoxSetup& setup);
Status CheckInPlace(const protocol::BoxSetup& setup);

// For host_etc.cc. mkdir -p.
Status MakeDirs(const std::string& path, mode_t mode = 0755);
// Recreates `src` at `dst`: a symlink copied, a directory or regular file bound read-only
// (nosuid, nodev), anything else (sockets, fifos, devices) skipped; a missing `src` is no error.
Status PlaceReadOnly(const std::string& src, const std::string& dst);

// For image_etc.cc: binds the file or directory `src` over the existing `dst`, read-only, nosuid,
// nodev.
Status BindReadOnlyOver(const std::string& src, const std::string& dst);

// in_place (Docker): container.mounts' target `m.target` really is the daemon's view of the host
// directory (runtime/docker/host_mount_views.h): a mount of its own; nosuid, nodev, noexec;
// read-only for ro; a writable overlayfs for overlay. An error naming the target otherwise.
Status CheckHostView(const protocol::MountSpec& m);

// Validates a mount-point path from the setup: absolute, normalized, not "/".
Status ValidateMountPath(const std::string& what, const std::string& path);

}  // namespace lsb::init
