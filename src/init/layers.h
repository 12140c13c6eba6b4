// An image root from its layers (BoxSetup.rootfs "image"): init, uid 0 of the box's fresh user
// namespace and owner of its mount namespace, stacks the image's unpacked layers as one read-only
// overlayfs (no upper layer: nothing the program does reaches a layer). BuildRoot (mounts.h) then
// treats the result like a rootfs directory: each top-level entry bound read-only into the new
// root, the policy's tmpfs, /proc, /dev and the job dir on top, Landlock and seccomp as anywhere.
//
// Layers are in overlayfs's own format, as the image store writes them: a deleted file is a 0/0
// character device (whiteout), an opaque directory carries the xattr user.overlay.opaque="y"
// (the mount uses `userxattr`: trusted.* xattrs are out of reach inside a user namespace).
//
// The mount(2) option string is limited to a page (4096 bytes) and the store's layer paths are
// long (~100 bytes each), so each layer is opened first (O_PATH) and named by its short
// /proc/self/fd/N link: 128 layers (protocol::kMaxImageLayers) take ~2.5 KB whatever their paths.
// A single layer needs no overlay: it is the rootfs directory itself.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::init {

// The layer directories, lowest first, opened O_PATH|O_DIRECTORY; refuses an empty list, more
// than kMaxImageLayers, a relative path or one that is not a directory (naming it).
Result<std::vector<UniqueFd>> OpenLayers(const std::vector<std::string>& layers);

// The overlayfs mount options for layers open as `fds` (lowest first): "lowerdir=top:...:bottom"
// by /proc/self/fd names, plus userxattr. Errors when the string would not fit the kernel's page.
Result<std::string> OverlayOptions(const std::vector<int>& fds);

// Mounts the overlay of `fds` (at least two, lowest first) read-only, nosuid, nodev at `target`.
Status MountOverlay(const std::vector<int>& fds, const std::string& target);

}  // namespace lsb::init
