#include "init/mounts.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/io.h"
#include "base/mountinfo.h"
#include "base/unique_fd.h"
#include "init/exec_policy.h"
#include "init/host_etc.h"

namespace lsb::init {
namespace {

using protocol::BoxSetup;

constexpr const char* kNewRoot = "/tmp";  // mounted over in our private mount namespace

// mount_setattr(2) only adds restrictions and preserves the flags a user namespace has locked
// (atime, nosuid...), which a classic MS_REMOUNT|MS_BIND must repeat exactly.
Status Restrict(const std::string& path, uint64_t attrs, bool recursive) {
  mount_attr attr{};
  attr.attr_set = attrs;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), recursive ? AT_RECURSIVE : 0, &attr,
                sizeof attr) != 0)
    return Error::FromErrno("make " + path + " read-only/nosuid/nodev (mount_setattr)");
  return OkStatus();
}

Status Mount(const std::string& src, const std::string& dst, const char* type, unsigned long flags,
             const std::string& data = "") {
  if (::mount(src.c_str(), dst.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) != 0)
    return Error::FromErrno("mount " + (type ? std::string(type) : src) + " on " + dst);
  return OkStatus();
}

Status BindReadOnly(const std::string& src, const std::string& dst) {
  LSB_TRY(Mount(src, dst, nullptr, MS_BIND | MS_REC));
  return Restrict(dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true);
}

bool Exists(const std::string& p, struct stat* st = nullptr) {
  struct stat s;
  if (::lstat(p.c_str(), &s) != 0) return false;
  if (st) *st = s;
  return true;
}

}  // namespace

// mkdir -p below the new root; fails on a read-only component (an image dir without the mount
// point), which is reported with the path so the policy or the image can be fixed.
Status MakeDirs(const std::string& path, mode_t mode) {
  std::string cur;
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    cur = path.substr(0, j);
    if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST)
      return Error::FromErrno("create mount point " + cur);
    i = j + 1;
  }
  return OkStatus();
}

namespace {
Status MakeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd && errno != EEXIST) return Error::FromErrno("create mount point " + path);
  return OkStatus();
}

}  // namespace

Status PlaceReadOnly(const std::string& src, const std::string& dst) {
  struct stat st;
  if (!Exists(src, &st)) return OkStatus();
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = ::readlink(src.c_str(), target, sizeof target - 1);
    if (n < 0) return Error::FromErrno("readlink " + src);
    target[n] = '\0';
    if (::symlink(target, dst.c_str()) != 0) return Error::FromErrno("symlink " + dst);
    return OkStatus();
  }
  if (S_ISDIR(st.st_mode)) {
    if (::mkdir(dst.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + dst);
  } else if (S_ISREG(st.st_mode)) {
    LSB_TRY(MakeFile(dst));
  } else {
    return OkStatus();  // sockets, fifos, devices at the top of a rootfs: never exposed
  }
  return BindReadOnly(src, dst);
}

namespace {

// One entry of the source root, recreated in the new root: symlinks copied, dirs and files bound
// read-only.
Status PlaceEntry(const std::string& src_root, const std::string& name) {
  return PlaceReadOnly(src_root + "/" + name, std::string(kNewRoot) + "/" + name);
}

Status MountProc(const std::string& root) {
  std::string proc = root + "/proc";
  LSB_TRY(MakeDirs(proc, 0555));
  LSB_TRY(Mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC));
  // Masked like runc: files read as empty (/dev/null), directories as an empty read-only tmpfs.
  // cmdline and bootconfig: the host's boot parameters (some hosts pass tokens there); boot_id:
  // an identifier of the host (before sys is made read-only, which carries the bind along).
  static const char* kMaskFiles[] = {"kcore",       "keys",      "timer_list", "timer_stats",
                                     "sched_debug", "latency_stats", "kallsyms", "kmsg",
                                     "config.gz",   "cmdline",   "bootconfig", "sys/kernel/random/boot_id"};
  static const char* kMaskDirs[] = {"acpi", "scsi", "asound", "driver"};
  static const char* kReadOnly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
  for (const char* f : kMaskFiles) {
    std::string p = proc + "/" + f;
    if (Exists(p)) LSB_TRY(Mount("/dev/null", p, nullptr, MS_BIND));
  }
  for (const char* d : kMaskDirs) {
    std::string p = proc + "/" + d;
    if (Exists(p))
      LSB_TRY(Mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555"));
  }
  for (const char* r : kReadOnly) {
    std::string p = proc + "/" + r;
    if (!Exists(p)) continue;
    LSB_TRY(Mount(p, p, nullptr, MS_BIND | MS_REC));
    LSB_TRY(Restrict(p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true));
  }
  return OkStatus();
}

Status MountDev(const std::string& root) {
  std::string dev = root + "/dev";
  LSB_TRY(MakeDirs(dev));
  LSB_TRY(Mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755"));
  for (const char* node : {"null", "zero", "full", "random", "urandom"}) {
    std::string dst = dev + "/" + node;
    LSB_TRY(MakeFile(dst));
    LSB_TRY(Mount(std::string("/dev/") + node, dst, nullptr, MS_BIND));
  }
  struct Link {
    const char* name;
    const char* target;
  };
  for (Link l : {Link{"fd", "/proc/self/fd"}, Link{"stdin", "/proc/self/fd/0"},
                 Link{"stdout", "/proc/self/fd/1"}, Link{"stderr", "/proc/self/fd/2"}}) {
    if (::symlink(l.target, (dev + "/" + l.name).c_str()) != 0)
      return Error::FromErrno("symlink /dev/" + std::string(l.name));
  }
  LSB_TRY(MakeDirs(dev + "/shm"));
  LSB_TRY(Mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64m,mode=1777"));
  // The device binds (and shm, which has them already) nosuid+noexec in one recursive call, not
  // one per node; then /dev itself read-only.
  LSB_TRY(Restrict(dev, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, true));
  return Restrict(dev, MOUNT_ATTR_RDONLY, false);
}

Status MountTmpfs(const std::string& root, const protocol::TmpfsSpec& t, uint32_t uid, uint32_t gid) {
  LSB_TRY(ValidateMountPath("tmpfs", t.path));
  std::string dst = root + t.path;
  LSB_TRY(MakeDirs(dst));
  unsigned long flags = 0;
  if (t.nosuid) flags |= MS_NOSUID;
  if (t.nodev) flags |= MS_NODEV;
  if (t.noexec) flags |= MS_NOEXEC;
  char data[128];
  std::snprintf(data, sizeof data, "mode=%04o,uid=%u,gid=%u", t.mode & 07777, uid, gid);
  std::string opts = data;
  if (t.size_bytes > 0) opts += ",size=" + std::to_string(t.size_bytes);
  return Mount("tmpfs", dst, "tmpfs", flags, opts);
}

Status MountJobDir(const std::string& root, const std::string& job_dir) {
  LSB_TRY(ValidateMountPath("job_dir", job_dir));
  std::string dst = root + job_dir;
  LSB_TRY(MakeDirs(dst));
  // Owned by init (uid 0 of the box), 0755: the program can read its file, never change it.
  return Mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4m,mode=0755");
}

// A deny-listed file that stays readable (outside the bin dirs) is covered with /dev/null, so
// neither execve nor the ld.so trick can run it.
Status HideDenied(const BoxSetup& setup) {
  for (const auto& d : setup.deny) {
    char real[4096];
    if (::realpath(JoinPath("/", d).c_str(), real) == nullptr) continue;
    struct stat st;
    if (::stat(real, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    LSB_TRY(Mount("/dev/null", real, nullptr, MS_BIND));
  }
  return OkStatus();
}

}  // namespace

Status ValidateMountPath(const std::string& what, const std::string& path) {
  if (path.empty() || path[0] != '/' || JoinPath("/", path) != path || path == "/")
    return Error{what + ": mount point must be an absolute, normalized path other than /: \"" + path + "\""};
  for (const char* reserved : {"/proc", "/dev", "/sys"})
    if (path == reserved) return Error{what + ": " + path + " is reserved for init"};
  return OkStatus();
}

Status BuildRoot(const BoxSetup& setup) {
  if (!setup.read_only)
    return Error{"filesystem.read_only=false is not supported by build_root: the root is always read-only"};
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return Error::FromErrno("make / rprivate (is init in its own mount namespace?)");

  // The source root stays reachable through an fd even when it is under /tmp, which we cover.
  UniqueFd src_fd;
  std::string src_root = "";
  std::vector<std::string> entries;
  if (setup.rootfs == "host") {
    entries = {"usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "opt"};  // etc: host_etc.h
  } else {
    if (setup.rootfs.empty() || setup.rootfs[0] != '/')
      return Error{"rootfs must be \"host\" or an absolute directory: \"" + setup.rootfs + "\""};
    src_fd.reset(::open(setup.rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!src_fd) return Error::FromErrno("open rootfs " + setup.rootfs);
    src_root = "/proc/self/fd/" + std::to_string(src_fd.get());
    DIR* dir = ::opendir(setup.rootfs.c_str());
    if (!dir) return Error::FromErrno("list rootfs " + setup.rootfs);
    while (dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n == "." || n == ".." || n == "proc" || n == "dev" || n == "sys") continue;
      entries.push_back(n);
    }
    ::closedir(dir);
  }

  LSB_TRY(Mount("tmpfs", kNewRoot, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"));
  const std::string root = kNewRoot;
  for (const auto& e : entries) {
    auto st = PlaceEntry(src_root, e);
    if (!st.ok()) return st.error().Wrap("rootfs /" + e);
  }
  src_fd.reset();
  if (setup.rootfs == "host") {
    auto st = BuildHostEtc(root, setup);
    if (!st.ok()) return st.error().Wrap("rootfs /etc (synthetic, host_etc.h)");
  }
  LSB_TRY(MountProc(root));
  LSB_TRY(MountDev(root));
  std::vector<protocol::TmpfsSpec> tmpfs = setup.tmpfs;
  std::sort(tmpfs.begin(), tmpfs.end(),
            [](const auto& a, const auto& b) { return a.path.size() < b.path.size(); });
  for (const auto& t : tmpfs) {
    auto st = MountTmpfs(root, t, setup.uid, setup.gid);
    if (!st.ok()) return st.error().Wrap("filesystem.tmpfs " + t.path);
  }
  LSB_TRY(MountJobDir(root, setup.job_dir));
  if (::sethostname(setup.hostname.data(), setup.hostname.size()) != 0)
    return Error::FromErrno("set hostname (is init in its own UTS namespace?)");

  // pivot_root(".", ".") stacks the old root under the new one; detaching it leaves no way back.
  if (::chdir(root.c_str()) != 0) return Error::FromErrno("chdir new root");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return Error::FromErrno("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) return Error::FromErrno("detach the old root");
  if (::chdir("/") != 0) return Error::FromErrno("chdir /");
  LSB_TRY(HideDenied(setup));
  return Restrict("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
}

// gVisor reports mount flags in /proc/self/mountinfo but not in statvfs's f_flag (measured: its
// read-only root has f_flag 32). The per-mount options of the last mount at exactly `path`.
bool MountinfoHasOption(const std::string& path, const std::string& option) {
  auto info = ReadFile("/proc/self/mountinfo");
  return info.ok() && MountHasOption(ParseMountinfo(*info), path, option);
}

Status CheckInPlace(const BoxSetup& setup) {
  struct statvfs vfs;
  // Only in the accepted gVisor mode is mountinfo consulted when statvfs says nothing.
  const bool gv = setup.gvisor_accept_weaker;
  if (setup.read_only && (::statvfs("/", &vfs) != 0 || !(vfs.f_flag & ST_RDONLY)) &&
      !(gv && MountinfoHasOption("/", "ro")))
    return Error{"filesystem.read_only: the outer box left / writable (in_place mode relies on it)"};
  // The watch reads /proc/<pid>/mem of the box's pids: /proc must belong to our pid namespace.
  char self[32] = {};
  if (::readlink("/proc/self", self, sizeof self - 1) <= 0 || std::to_string(::getpid()) != self)
    return Error{"/proc is not the box's own (mounted for another pid namespace): the exec and network watch cannot read the program's arguments"};
  for (const auto& t : setup.tmpfs) {
    LSB_TRY(ValidateMountPath("tmpfs", t.path));
    struct statfs fs;
    if (::statfs(t.path.c_str(), &fs) != 0 || fs.f_type != TMPFS_MAGIC)
      return Error{"filesystem.tmpfs: " + t.path + " is not a tmpfs in the outer box"};
    if (t.noexec && (::statvfs(t.path.c_str(), &vfs) != 0 || !(vfs.f_flag & ST_NOEXEC)) &&
        !(gv && MountinfoHasOption(t.path, "noexec")))
      return Error{"filesystem.tmpfs: " + t.path + " is not mounted noexec by the outer box"};
  }
  LSB_TRY(ValidateMountPath("job_dir", setup.job_dir));
  auto st = MakeDirs(setup.job_dir, 0755);
  if (!st.ok() || ::access(setup.job_dir.c_str(), W_OK) != 0)
    return Error{"job_dir " + setup.job_dir + " cannot be created or written by init; the outer box must provide it (a small noexec tmpfs)"};
  return OkStatus();
}

}  // namespace lsb::init
