#include "image/store_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "base/random_id.h"
#include "image/safe_fs.h"

namespace lsb::image {
namespace {

constexpr std::string_view kLockSuffix = ".lock";

// Opens and locks `path`; with `wait` false returns an invalid fd when another process holds it.
// Checks the locked file is still the one at `path` (a cleaner may have removed it meanwhile).
Result<UniqueFd> LockFile(const std::string& path, bool create, bool wait) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0644));
    if (!fd && errno == ENOENT && !create) return UniqueFd();  // gone already: nothing to lock
    if (!fd) return Error::FromErrno("open lock " + path);
    if (::flock(fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
      if (errno == EWOULDBLOCK) return UniqueFd();
      if (errno == EINTR) continue;
      return Error::FromErrno("lock " + path);
    }
    struct stat held {}, now {};
    if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev)
      return fd;
    if (!create) return UniqueFd();  // removed under us: nothing left to clean
  }
  return Error{"lock " + path + ": the lock file keeps being replaced"};
}

}  // namespace

Result<FileLock> FileLock::Exclusive(const std::string& path) {
  LSB_ASSIGN_OR_RETURN(UniqueFd fd, LockFile(path, true, true));
  return FileLock(std::move(fd));
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Release();
    path_ = std::move(other.path_);
    lock_path_ = std::move(other.lock_path_);
    dir_ = std::move(other.dir_);
    lock_ = std::move(other.lock_);
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() { Release(); }

void TempDir::Keep() {
  dir_.reset();
  lock_.reset();  // the lock file stays: CleanStaleTemp pairs it with the directory
  path_.clear();
}

void TempDir::Release() {
  if (path_.empty()) return;
  dir_.reset();
  size_t slash = path_.find_last_of('/');
  if (auto parent = OpenDir(path_.substr(0, slash)); parent.ok()) (void)RemoveTree(parent->get(), path_.substr(slash + 1));
  // The lock goes last: while it exists and is held, no cleaner touches the directory.
  ::unlink(lock_path_.c_str());
  lock_.reset();
  path_.clear();
}

Result<TempDir> TempDir::Create(const std::string& tmp_root, std::string_view purpose) {
  TempDir t;
  std::string name = std::string(purpose) + "-" + RandomHex("", 8);
  t.lock_path_ = tmp_root + "/" + name + std::string(kLockSuffix);
  LSB_ASSIGN_OR_RETURN(t.lock_, LockFile(t.lock_path_, true, true));
  t.path_ = tmp_root + "/" + name;
  if (::mkdir(t.path_.c_str(), 0755) != 0) {
    Error e = Error::FromErrno("mkdir " + t.path_);
    t.path_.clear();
    ::unlink(t.lock_path_.c_str());
    return e;
  }
  LSB_ASSIGN_OR_RETURN(t.dir_, OpenDir(t.path_));
  return t;
}

Result<TempDir> TempDir::Named(const std::string& tmp_root, const std::string& name) {
  TempDir t;
  t.lock_path_ = tmp_root + "/" + name + std::string(kLockSuffix);
  LSB_ASSIGN_OR_RETURN(t.lock_, LockFile(t.lock_path_, true, true));
  t.path_ = tmp_root + "/" + name;
  if (::mkdir(t.path_.c_str(), 0755) != 0 && errno != EEXIST) {
    Error e = Error::FromErrno("mkdir " + t.path_);
    t.path_.clear();
    return e;
  }
  auto dir = OpenDir(t.path_);
  if (!dir.ok()) {
    t.path_.clear();
    return dir.error();
  }
  t.dir_ = std::move(dir).value();
  return t;
}

Result<int> CleanStaleTemp(const std::string& tmp_root, bool keep_resumable) {
  LSB_ASSIGN_OR_RETURN(UniqueFd dir, OpenDir(tmp_root));
  std::vector<std::string> names;
  {
    UniqueFd dup(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
    DIR* d = ::fdopendir(dup.release());
    if (!d) return Error::FromErrno("opendir " + tmp_root);
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  auto is_lock = [](const std::string& n) {
    return n.size() > kLockSuffix.size() && n.compare(n.size() - kLockSuffix.size(), kLockSuffix.size(), kLockSuffix) == 0;
  };
  int removed = 0;
  for (const auto& n : names) {
    if (is_lock(n)) continue;
    if (keep_resumable && n.rfind(kResumablePullPrefix, 0) == 0) continue;
    std::string lock_path = tmp_root + "/" + n + std::string(kLockSuffix);
    UniqueFd lock;
    if (::access(lock_path.c_str(), F_OK) == 0) {
      LSB_ASSIGN_OR_RETURN(lock, LockFile(lock_path, false, false));
      if (!lock) continue;  // a live job
    }
    // Nobody holds it (or it never had a lock: made by a job killed before it could be used).
    // A killed build leaves its step's filesystem mounted there (build.disk,
    // runtime/native/build_disk.h): detached first, or the tree cannot be removed.
    if (n.rfind("build", 0) == 0) (void)::umount2((tmp_root + "/" + n + "/disk").c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    LSB_TRY(RemoveTree(dir.get(), n));
    ::unlink(lock_path.c_str());
    ++removed;
  }
  // Locks whose directory is gone (a job killed between the two steps of Create or Release).
  for (const auto& n : names) {
    if (!is_lock(n)) continue;
    std::string base = n.substr(0, n.size() - kLockSuffix.size());
    if (keep_resumable && base.rfind(kResumablePullPrefix, 0) == 0) continue;
    struct stat st {};
    if (::fstatat(dir.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
    LSB_ASSIGN_OR_RETURN(UniqueFd lock, LockFile(tmp_root + "/" + n, false, false));
    if (lock) ::unlinkat(dir.get(), n.c_str(), 0);
  }
  return removed;
}

}  // namespace lsb::image
