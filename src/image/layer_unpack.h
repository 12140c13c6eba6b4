// Unpacks one layer (a tar, plain, gzip or zstd) into an empty directory, safely, and measures
// its diff_id (the SHA-256 of the uncompressed tar) on the way. The rules (docs/images.md "What
// unpacking refuses"):
//  - absolute names, "..", and entries below a symlink are refused; nothing is opened through a
//    path string (one component at a time, O_NOFOLLOW, relative to the layer's directory fd);
//  - symlinks are created as they are, pointing anywhere: they are only ever resolved inside a
//    box's root (or by image_fs's in-image lookup), never by the host;
//  - hardlinks must name a regular file this layer already extracted;
//  - device nodes and FIFOs are skipped (counted); a box gets its /dev from the runtime;
//  - setuid, setgid and sticky bits and group/other write are stripped; directories keep owner
//    rwx so the store can add to and remove them; ownership and xattrs in the archive are dropped;
//  - OCI whiteouts become overlayfs's: ".wh.NAME" a 0:0 character device NAME, ".wh..wh..opq" the
//    xattr user.overlay.opaque=y on its directory (what overlayfs mounted with `userxattr` in a user
//    namespace reads; trusted.overlay.opaque is set too when running as root);
//  - every bound in UnpackLimits is enforced, and the tar must end with its end-of-archive marker.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "image/decompress.h"
#include "image/limits.h"

namespace lsb::image {

struct LayerStats {
  std::string diff_id;            // "sha256:<hex>" of the uncompressed tar stream
  Compression compression = Compression::kNone;
  uint64_t compressed_bytes = 0;  // bytes read from the blob
  uint64_t tar_bytes = 0;         // uncompressed stream bytes
  uint64_t content_bytes = 0;     // bytes of regular files written
  uint64_t entries = 0;
  uint64_t whiteouts = 0;
  uint64_t skipped_special = 0;   // device nodes and FIFOs not created
};

// Unpacks the blob read from `blob_fd` (from offset 0) into `dest_dir_fd`, which must be empty.
// On error the directory holds a partial layer: the caller discards it.
Result<LayerStats> UnpackLayer(int blob_fd, int dest_dir_fd, const UnpackLimits& limits);

}  // namespace lsb::image
