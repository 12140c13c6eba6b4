// Locks and scratch space of the image store. The store lock (flock on <store>/lock) serialises
// everything that writes the store (imports, rm, prune): a second import of one image waits, then
// finds its blobs and layers present and does nothing again. Readers (Resolve, ls, inspect) take
// no lock: index.json is only ever replaced by rename, and it names only content already complete.
// A TempDir under <store>/tmp holds one in-progress job; its lock file tells a live job from the
// leftovers of a killed one, which the next writer removes.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::image {

class FileLock {
 public:
  FileLock() = default;
  // Blocks until `path` (created if missing, mode 0644) is locked exclusively.
  static Result<FileLock> Exclusive(const std::string& path);
  bool held() const { return fd_.valid(); }

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // the lock is the open file description: closing it unlocks
};

class TempDir {
 public:
  TempDir() = default;
  TempDir(TempDir&& other) noexcept { *this = std::move(other); }
  TempDir& operator=(TempDir&&) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  // A new directory <tmp_root>/<purpose>-<random>, locked by this process until destroyed.
  static Result<TempDir> Create(const std::string& tmp_root, std::string_view purpose);
  // The directory <tmp_root>/<name>, made if missing and kept as it is if not: the lock is waited
  // for, so one process at a time works in it (a resumable pull: kResumablePullPrefix).
  static Result<TempDir> Named(const std::string& tmp_root, const std::string& name);
  // Unlocks and leaves the directory in place (for the next job of that name to resume).
  void Keep();
  const std::string& path() const { return path_; }
  int fd() const { return dir_.get(); }

 private:
  void Release();
  std::string path_, lock_path_;
  UniqueFd dir_, lock_;
};

// Temp dirs of pulls into the store (Store::PullDirFor): a killed or failed pull leaves its
// verified blobs and partial downloads there, and the next pull of that image resumes them.
inline constexpr std::string_view kResumablePullPrefix = "resume-";

// Removes what killed jobs left in `tmp_root`: every entry whose lock no live process holds,
// except, with `keep_resumable`, a resumable pull's directory (`image prune` removes those too).
// Returns how many were removed.
Result<int> CleanStaleTemp(const std::string& tmp_root, bool keep_resumable = false);

}  // namespace lsb::image
