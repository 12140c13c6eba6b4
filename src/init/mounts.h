// The box's filesystem view (DESIGN §3, "mounts").
//
// build_root: init is uid 0 of a fresh user namespace and owns a fresh mount namespace. It
// assembles a new root on a tmpfs (read-only binds of the system dirs or of an image directory),
// a fresh /proc with runc-style masks, a minimal /dev, the policy's tmpfs mounts and the job dir,
// pivots into it, detaches the old root and makes the new root read-only.
// in_place: the outer box made the mounts; init checks what it relies on and prepares the job dir.
#pragma once

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb::init {

Status BuildRoot(const protocol::BoxSetup& setup);
Status CheckInPlace(const protocol::BoxSetup& setup);

// Validates a mount-point path from the setup: absolute, normalized, not "/".
Status ValidateMountPath(const std::string& what, const std::string& path);

}  // namespace lsb::init
