// An image made from a root filesystem, with no registry and no Docker or skopeo (issue 37,
// `llm-sandbox image create`): a directory (a debootstrap rootfs, a chroot built by hand) or a
// rootfs tarball (plain, gzip or zstd; what `tar -C rootfs -c .` or `docker export` make).
// A tarball is first unpacked by the store's own unpacker (layer_unpack.h: the hostile-archive
// boundary, no second one), so "..", absolute names, device nodes and the bounds are refused or
// dropped exactly as for a pulled layer. The tree is then written as one layer tar
// (layer_writer.h: O_NOFOLLOW, owners 0:0, no setuid bits, no devices) with an OCI config and
// manifest into an OCI layout in the store's tmp/, which Store::ImportOciLayout imports (and
// unpacks again, through the same unpacker): the store holds only what every import holds.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "image/reference.h"
#include "image/store.h"

namespace lsb::image {

struct RootfsImageOptions {
  std::vector<std::string> env;  // config.Env ("KEY=VALUE"); PATH is added when not given
  std::string workdir;           // config.WorkingDir ("" = none)
  std::vector<std::string> cmd;  // config.Cmd
};

// Makes the image `name` in `store` from `source` (a directory, or a regular file: a tarball).
Result<ImageRoot> CreateImageFromRootfs(Store& store, const std::string& source, const ImageReference& name,
                                        const RootfsImageOptions& options);

}  // namespace lsb::image
