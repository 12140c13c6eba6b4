// Writing a layer tar from a directory tree (container.build, src/runtime/native/env_builder.h):
// a build step's overlayfs upper directory, or a policy's `files` sources. Streamed into a file and
// hashed on the way (the hash is the layer's diff_id). Every entry is opened relative to its
// parent's fd with O_NOFOLLOW: a symlink is stored as a symlink, never followed, so a tree the box
// wrote cannot make the host read outside it. Owners are 0:0, modes keep 0755 at most (the store
// strips the rest anyway); devices, FIFOs and sockets are skipped, except overlayfs's whiteouts.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/sha256.h"
#include "base/unique_fd.h"

namespace lsb::image {

struct LayerWriteLimits {
  uint64_t max_entries = 1000000;
  uint64_t max_bytes = 16ull << 30;  // the tar stream
};

class LayerTarWriter {
 public:
  LayerTarWriter(int out_fd, LayerWriteLimits limits) : out_(out_fd), limits_(limits) {}

  // The tree below `dir_fd` as entries under `prefix` ("" or "opt/x", no slashes at the ends).
  // `overlay_upper`: a 0:0 character device is a whiteout (written as .wh.NAME) and a directory
  // with user.overlay.opaque=y gets a .wh..wh..opq entry. `refuse_symlinks`: a symlink is an error
  // naming it (a policy's files must not point anywhere).
  Status AddTree(int dir_fd, const std::string& prefix, bool overlay_upper, bool refuse_symlinks);
  Status AddDir(const std::string& name, uint32_t mode, int64_t mtime);
  // A regular file's content from `fd` (its size as fstat says; a file that changes while read fails).
  Status AddFile(const std::string& name, int fd, uint32_t mode, int64_t mtime, uint64_t size);
  // The end-of-archive blocks; returns the diff_id "sha256:<hex>".
  Result<std::string> Finish();
  uint64_t bytes() const { return written_; }

 private:
  Status Header(const std::string& name, char type, uint64_t size, uint32_t mode, int64_t mtime,
                const std::string& link = "");
  Status Write(const void* data, size_t n);
  Status Entry();

  int out_;
  LayerWriteLimits limits_;
  Sha256Hasher hash_;
  uint64_t written_ = 0, entries_ = 0;
  int depth_ = 0;
};

}  // namespace lsb::image
