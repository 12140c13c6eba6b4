// build.disk (docs/policy.md "container.build"): the room a build step's upper layer has, bounded
// by the kernel while the step writes. The upper and work directories live on a filesystem of
// exactly that size: a sparse file in the step's scratch directory, formatted ext4 (mke2fs, no
// journal, no reserved blocks, lazily initialised inode tables that are never zeroed: the file is
// fresh, its holes read as zeros), attached to a loop device (autoclear) and mounted nosuid, nodev,
// noexec. Past it a write gets ENOSPC, and the store's filesystem grew by at most the bound (the
// file's blocks). Measured: mke2fs of a 2 GiB file 18 ms, 1.2 MiB written.
//
// Why not tmpfs: its pages are memory (charged to the step's cgroup, so build.memory and build.disk
// would be one bound) and a package's files are not. Why not a poll of the upper's size: a step
// writes faster than any poll. Fail closed: without root (loop devices) or mke2fs there is no
// bound, and the step does not run.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"

namespace lsb::native {

inline constexpr uint64_t kMinBuildDiskBytes = 64ull << 20;

class BuildDisk {
 public:
  // A filesystem of `bytes` mounted on `dir`/disk (made), its root owned by uid:gid. The image
  // file is `dir`/disk.img.
  static Result<std::unique_ptr<BuildDisk>> Create(const std::string& dir, uint64_t bytes, uid_t uid, gid_t gid);
  ~BuildDisk();  // unmounted (lazily), the image removed
  BuildDisk(const BuildDisk&) = delete;
  BuildDisk& operator=(const BuildDisk&) = delete;

  const std::string& root() const { return mount_; }
  uint64_t bytes() const { return bytes_; }
  // Whether the filesystem is (nearly) out of blocks or inodes: what a step that failed ran into.
  bool Full() const;

 private:
  BuildDisk(std::string image, std::string mount, uint64_t bytes)
      : image_(std::move(image)), mount_(std::move(mount)), bytes_(bytes) {}
  std::string image_, mount_;
  uint64_t bytes_;
  bool mounted_ = false;
};

}  // namespace lsb::native
