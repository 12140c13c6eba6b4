#include "runtime/native/build_disk.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "base/unique_fd.h"

extern char** environ;

namespace lsb::native {
namespace {

const char* FindMke2fs() {
  for (const char* p : {"/usr/sbin/mke2fs", "/sbin/mke2fs", "/usr/bin/mke2fs", "/bin/mke2fs"})
    if (::access(p, X_OK) == 0) return p;
  return nullptr;
}

// mke2fs on the sparse file: ext4 without a journal (the filesystem lives as long as one step),
// no blocks reserved for root (the step is root: the bound is the bound), the root directory
// owned by the box's root.
Status Format(const std::string& image, uid_t uid, gid_t gid) {
  const char* mke2fs = FindMke2fs();
  if (!mke2fs)
    return Error{"build.disk cannot be enforced: mke2fs (e2fsprogs) is not installed on this host; install "
                 "e2fsprogs (apt-get install e2fsprogs)"};
  const std::string ext = "lazy_itable_init=1,nodiscard,root_owner=" + std::to_string(uid) + ":" + std::to_string(gid);
  std::vector<std::string> args = {mke2fs, "-q", "-F", "-t", "ext4", "-m", "0", "-O", "^has_journal", "-E", ext, image};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error::FromErrno("pipe for mke2fs");
  UniqueFd r(p[0]), w(p[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, w.get(), 2);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, mke2fs, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  w.reset();
  if (rc != 0) return Error::FromErrno(std::string("run ") + mke2fs, rc);
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = ::read(r.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (said.size() < 4096) said.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{"build.disk cannot be enforced: mke2fs failed on " + image + ": " + said};
  return OkStatus();
}

struct Loop {
  std::string dev;
  UniqueFd fd;  // held until the mount: autoclear detaches at the last close
};

// A free loop device bound to `image` (autoclear: it lets go when its last user, the mount, does).
Result<Loop> AttachLoop(int image_fd) {
  UniqueFd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!ctl)
    return Error::FromErrno("build.disk cannot be enforced: open /dev/loop-control (a loop device needs root and "
                            "the loop module)");
  for (int attempt = 0; attempt < 16; ++attempt) {  // another process may take the free one first
    int n = ::ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Error::FromErrno("build.disk cannot be enforced: get a free loop device");
    std::string dev = "/dev/loop" + std::to_string(n);
    UniqueFd loop(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return Error::FromErrno("build.disk cannot be enforced: open " + dev);
    loop_config cfg{};
    cfg.fd = static_cast<uint32_t>(image_fd);
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &cfg) == 0) return Loop{dev, std::move(loop)};
    if (errno != EBUSY) return Error::FromErrno("build.disk cannot be enforced: configure " + dev);
  }
  return Error{"build.disk cannot be enforced: every free loop device was taken meanwhile"};
}

}  // namespace

Result<std::unique_ptr<BuildDisk>> BuildDisk::Create(const std::string& dir, uint64_t bytes, uid_t uid, gid_t gid) {
  if (bytes < kMinBuildDiskBytes) return Error{"build.disk is below 64 MiB"};
  std::unique_ptr<BuildDisk> disk(new BuildDisk(dir + "/disk.img", dir + "/disk", bytes));
  {
    UniqueFd img(::open(disk->image_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!img) return Error::FromErrno("create " + disk->image_);
    if (::ftruncate(img.get(), static_cast<off_t>(bytes)) != 0) return Error::FromErrno("size " + disk->image_);
  }
  LSB_TRY(Format(disk->image_, uid, gid));
  UniqueFd img(::open(disk->image_.c_str(), O_RDWR | O_CLOEXEC));
  if (!img) return Error::FromErrno("open " + disk->image_);
  LSB_ASSIGN_OR_RETURN(Loop loop, AttachLoop(img.get()));
  const std::string& dev = loop.dev;
  if (::mkdir(disk->mount_.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + disk->mount_);
  // noinit_itable: the kernel never zeroes the inode tables (their holes are zeros already), so
  // the file holds only what the step writes and ext4's few metadata blocks.
  if (::mount(dev.c_str(), disk->mount_.c_str(), "ext4", MS_NOSUID | MS_NODEV | MS_NOEXEC, "noinit_itable") != 0)
    return Error::FromErrno("build.disk cannot be enforced: mount " + dev + " on " + disk->mount_);
  disk->mounted_ = true;
  return disk;
}

BuildDisk::~BuildDisk() {
  if (mounted_) (void)::umount2(mount_.c_str(), MNT_DETACH);
  (void)::rmdir(mount_.c_str());
  (void)::unlink(image_.c_str());
}

bool BuildDisk::Full() const {
  struct statvfs s {};
  if (::statvfs(mount_.c_str(), &s) != 0) return false;
  const uint64_t left = static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
  // A write that ran out leaves less than a block group's slack; 1% (at least 1 MiB) is "out".
  return left < std::max<uint64_t>(1ull << 20, bytes_ / 100) || s.f_favail == 0;
}

}  // namespace lsb::native
