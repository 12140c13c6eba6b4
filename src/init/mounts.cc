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
#include <cstring>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/io.h"
#include "base/mountinfo.h"
#include "base/unique_fd.h"
#include "init/exec_policy.h"
#include "init/font_cache.h"
#include "init/host_etc.h"
#include "init/image_etc.h"
#include "init/layers.h"

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

Status BindReadOnlyOver(const std::string& src, const std::string& dst) { return BindReadOnly(src, dst); }

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

// The root the box's view is made from ("host", a rootfs directory or an image's layers) and the
// directories of it bound read-only into the new root, so a mount point the source lacks can be
// made (SplitFor) instead of failing on a read-only bind.
struct SourceRoot {
  UniqueFd fd;                 // keeps a directory or an overlay reachable under a covered /tmp
  std::string path;            // "" for the host, else /proc/self/fd/N
  std::vector<std::string> entries;
  std::map<std::string, std::string> bound_dirs;  // new-root path -> source path

  // One entry of the source root, recreated in the new root: symlinks copied, dirs and files
  // bound read-only.
  Status Place(const std::string& src, const std::string& dst) {
    LSB_TRY(PlaceReadOnly(src, dst));
    struct stat st;
    if (::lstat(src.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) bound_dirs[dst] = src;
    return OkStatus();
  }

  // `dst` (in the new root) cannot be created because its parent is a read-only bind of a source
  // directory (an image's /run for the job dir /run/job): that bind is replaced by a directory of
  // the new root's tmpfs holding a read-only bind of each of its entries, one level down, so the
  // mount point can be made beside them. False when no bind covers `dst`.
  Result<bool> SplitFor(const std::string& dst) {
    std::string cover;
    for (const auto& [dir, src] : bound_dirs)
      if (dst.compare(0, dir.size() + 1, dir + "/") == 0 && dir.size() > cover.size()) cover = dir;
    if (cover.empty()) return false;
    const std::string src = bound_dirs[cover];
    bound_dirs.erase(cover);
    if (::umount2(cover.c_str(), MNT_DETACH) != 0) return Error::FromErrno("unbind " + cover);
    DIR* dir = ::opendir(src.c_str());
    if (!dir) return Error::FromErrno("list " + cover);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(dir);
    for (const auto& n : names) LSB_TRY(Place(src + "/" + n, cover + "/" + n));
    return true;
  }
};

// mkdir -p of a mount point in the new root, splitting read-only binds that are in the way (a
// path is at most a few levels deep, each split moves one level down).
Status MakeMountPoint(SourceRoot& source, const std::string& dst, mode_t mode = 0755) {
  // A symlink on the way (an image's /run -> /somewhere) would resolve against init's current
  // root, the host's, while the new root is assembled: refused, never followed.
  for (size_t at = std::string(kNewRoot).size() + 1; at <= dst.size(); ++at) {
    if (at != dst.size() && dst[at] != '/') continue;
    struct stat st;
    if (::lstat(dst.substr(0, at).c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return Error{"mount point " + dst.substr(std::string(kNewRoot).size()) + ": " +
                   dst.substr(std::string(kNewRoot).size(), at - std::string(kNewRoot).size()) +
                   " is a symbolic link in the root filesystem; mount on its target instead"};
  }
  for (int depth = 0;; ++depth) {
    auto st = MakeDirs(dst, mode);
    if (st.ok() || st.error().sys_errno != EROFS || depth > 32) return st;
    LSB_ASSIGN_OR_RETURN(bool split, source.SplitFor(dst));
    if (!split) return st;
  }
}

Result<std::vector<std::string>> ListRoot(const std::string& dir_path, const std::string& what) {
  DIR* dir = ::opendir(dir_path.c_str());
  if (!dir) return Error::FromErrno("list " + what);
  std::vector<std::string> entries;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n == "." || n == ".." || n == "proc" || n == "dev" || n == "sys") continue;
    entries.push_back(n);
  }
  ::closedir(dir);
  return entries;
}

// Where the box's files come from: the host's system dirs, a rootfs directory, or an image's
// layers (one: its directory; more: their read-only overlay, mounted on kNewRoot, which the new
// root's tmpfs then covers: the fd keeps it reachable).
Result<SourceRoot> OpenSourceRoot(const BoxSetup& setup) {
  SourceRoot source;
  if (setup.rootfs == "host") {
    if (!setup.layers.empty()) return Error{"rootfs \"host\" takes no layers"};
    source.entries = {"usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "opt"};  // etc: host_etc.h
    return source;
  }
  std::string dir = setup.rootfs;
  std::string what = "rootfs " + setup.rootfs;
  std::vector<UniqueFd> layers;
  if (setup.rootfs == "image") {
    LSB_ASSIGN_OR_RETURN(layers, OpenLayers(setup.layers));
    what = "the image's layers";
    if (layers.size() == 1) {
      dir = setup.layers[0];
    } else {
      std::vector<int> fds;
      for (const auto& fd : layers) fds.push_back(fd.get());
      LSB_TRY(MountOverlay(fds, kNewRoot));
      dir = kNewRoot;
    }
  } else if (setup.rootfs.empty() || setup.rootfs[0] != '/' || !setup.layers.empty()) {
    return Error{"rootfs must be \"host\", \"image\" (with layers) or an absolute directory: \"" + setup.rootfs + "\""};
  }
  source.fd.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!source.fd) return Error::FromErrno("open " + what);
  source.path = "/proc/self/fd/" + std::to_string(source.fd.get());
  LSB_ASSIGN_OR_RETURN(source.entries, ListRoot(source.path, what));
  return source;
}

// `masked` false only for a fork server's zygote box: the kernel lets a box made inside it mount a
// /proc of its own only while a proc mount with nothing mounted over any of it is in its view;
// that box masks its own, and nothing runs in the zygote box but the trusted interpreter.
Status MountProc(const std::string& root, bool masked = true) {
  std::string proc = root + "/proc";
  LSB_TRY(MakeDirs(proc, 0555));
  LSB_TRY(Mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC));
  if (!masked) return OkStatus();
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

Status MountTmpfs(SourceRoot& source, const std::string& root, const protocol::TmpfsSpec& t, uint32_t uid,
                  uint32_t gid) {
  LSB_TRY(ValidateMountPath("tmpfs", t.path));
  std::string dst = root + t.path;
  LSB_TRY(MakeMountPoint(source, dst));
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

Status MountJobDir(SourceRoot& source, const std::string& root, const std::string& job_dir) {
  LSB_TRY(ValidateMountPath("job_dir", job_dir));
  std::string dst = root + job_dir;
  LSB_TRY(MakeMountPoint(source, dst));
  // Owned by init (uid 0 of the box), 0755: the program can read its file, never change it.
  return Mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4m,mode=0755");
}

// A container.mounts target (both backends): a mount path, not under what init builds itself.
Status ValidateHostMountTarget(const std::string& target) {
  LSB_TRY(ValidateMountPath("mounts", target));
  for (const char* reserved : {"/proc", "/dev", "/sys", protocol::kJobDir})
    if (target.compare(0, std::strlen(reserved), reserved) == 0 &&
        (target.size() == std::strlen(reserved) || target[std::strlen(reserved)] == '/'))
      return Error{"container.mounts: " + target + " is under " + reserved + ", which init builds itself"};
  return OkStatus();
}

// container.mounts: the host's detached, id-mapped, read-only mount (fd `m.fd`, runtime/native/
// runtime/host_mount.h) attached at the target; for overlay, stacked as the lower layer of an overlayfs
// whose upper and work dirs are on a tmpfs of m.size_bytes, so writes stay in the box.
Status MountHostDir(SourceRoot& source, const std::string& root, const protocol::MountSpec& m, uint32_t uid,
                    uint32_t gid) {
  LSB_TRY(ValidateHostMountTarget(m.target));
  if (m.fd < 3) return Error{"mounts " + m.target + ": the host handed no mount for " + m.source};
  UniqueFd tree(m.fd);
  std::string dst = root + m.target;
  LSB_TRY(MakeMountPoint(source, dst));
  if (::syscall(SYS_move_mount, tree.get(), "", AT_FDCWD, dst.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return Error::FromErrno("attach the host directory " + m.source + " at " + m.target + " (move_mount)");
  tree.reset();
  LSB_TRY(Restrict(dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, false));
  if (m.mode == "ro") return OkStatus();
  if (m.mode != "overlay") return Error{"mounts " + m.target + ": unknown mode \"" + m.mode + "\""};
  struct stat lower_st;
  UniqueFd lower(::open(dst.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!lower || ::fstat(lower.get(), &lower_st) != 0) return Error::FromErrno("open the host directory at " + m.target);
  std::string opts = "mode=0755";
  if (m.size_bytes > 0) opts += ",size=" + std::to_string(m.size_bytes);
  LSB_TRY(Mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts));
  UniqueFd scratch(::open(dst.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!scratch) return Error::FromErrno("open the overlay's tmpfs at " + m.target);
  const std::string upper = dst + "/upper", work = dst + "/work";
  if (::mkdir(upper.c_str(), lower_st.st_mode & 07777) != 0 || ::mkdir(work.c_str(), 0700) != 0)
    return Error::FromErrno("make the overlay's upper and work dirs at " + m.target);
  // The overlay's root takes the upper's owner and mode: the program's, as the id map shows the source.
  if (::chown(upper.c_str(), lower_st.st_uid, lower_st.st_gid) != 0 || ::chmod(upper.c_str(), lower_st.st_mode & 07777) != 0)
    return Error::FromErrno("set the owner of the overlay's upper dir at " + m.target);
  (void)uid;
  (void)gid;
  const std::string fs = "/proc/self/fd/" + std::to_string(scratch.get());
  const std::string ovl = "lowerdir=/proc/self/fd/" + std::to_string(lower.get()) + ",upperdir=" + fs + "/upper,workdir=" + fs +
                          "/work,userxattr";
  return Mount("overlay", dst, "overlay", MS_NOSUID | MS_NODEV | MS_NOEXEC, ovl);
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

// container.mounts in in_place mode (Docker): the daemon's view of the host directory
// (runtime/docker/host_mount_views.h), bound by the engine. Fail closed unless the target really
// is that mount: a mount of its own, nosuid/nodev/noexec, read-only for ro, an overlayfs for overlay.
Status CheckHostView(const protocol::MountSpec& m) {
  LSB_TRY(ValidateHostMountTarget(m.target));
  const std::string what = "container.mounts: " + m.target + " (" + m.source + ", " + m.mode + ")";
  struct stat st, parent;
  const std::string up = m.target.substr(0, std::max<size_t>(1, m.target.rfind('/')));
  if (::lstat(m.target.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::stat(up.c_str(), &parent) != 0 ||
      st.st_dev == parent.st_dev)
    return Error{what + " is not a mount of its own in the box (the engine did not bind the daemon's view)"};
  struct statvfs vfs;
  if (::statvfs(m.target.c_str(), &vfs) != 0) return Error::FromErrno(what + ": statvfs");
  const unsigned long need = ST_NOSUID | ST_NODEV | ST_NOEXEC | (m.mode == "ro" ? ST_RDONLY : 0);
  if ((vfs.f_flag & need) != need)
    return Error{what + " is not mounted " + (m.mode == "ro" ? "read-only, " : "") +
                 "nosuid, nodev and noexec in the box"};
  if (m.mode == "overlay") {
    struct statfs fs;
    if ((vfs.f_flag & ST_RDONLY) || ::statfs(m.target.c_str(), &fs) != 0 || fs.f_type != OVERLAYFS_SUPER_MAGIC)
      return Error{what + " is not a writable overlay in the box"};
  } else if (m.mode != "ro") {
    return Error{what + ": unknown mode"};
  }
  return OkStatus();
}

Status BuildRoot(const BoxSetup& setup) {
  if (!setup.read_only)
    return Error{"filesystem.read_only=false is not supported by build_root: the root is always read-only"};
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return Error::FromErrno("make / rprivate (is init in its own mount namespace?)");

  // The source root stays reachable through an fd even when it is under /tmp, which we cover.
  LSB_ASSIGN_OR_RETURN(SourceRoot source, OpenSourceRoot(setup));

  LSB_TRY(Mount("tmpfs", kNewRoot, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"));
  const std::string root = kNewRoot;
  for (const auto& e : source.entries) {
    auto st = source.Place(source.path + "/" + e, root + "/" + e);
    if (!st.ok()) return st.error().Wrap("rootfs /" + e);
  }
  if (setup.rootfs == "host") {
    auto st = BuildHostEtc(root, setup);
    if (!st.ok()) return st.error().Wrap("rootfs /etc (synthetic, host_etc.h)");
  } else if (setup.rootfs == "image") {
    LSB_TRY(OverlayImageEtc(root, setup));  // the image's own /etc, the runtime's files over it
  }
  LSB_TRY(MountProc(root, setup.fork != "zygote"));
  LSB_TRY(MountDev(root));
  // The tmpfs and host mounts, shortest path first: each may be inside one made before it.
  struct Step {
    const protocol::TmpfsSpec* tmpfs;
    const protocol::MountSpec* host;
    size_t length;
  };
  std::vector<Step> steps;
  for (const auto& t : setup.tmpfs) steps.push_back({&t, nullptr, t.path.size()});
  for (const auto& m : setup.mounts) steps.push_back({nullptr, &m, m.target.size()});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.length < b.length; });
  for (const auto& s : steps) {
    if (s.tmpfs) {
      auto st = MountTmpfs(source, root, *s.tmpfs, setup.uid, setup.gid);
      if (!st.ok()) return st.error().Wrap("filesystem.tmpfs " + s.tmpfs->path);
    } else {
      auto st = MountHostDir(source, root, *s.host, setup.uid, setup.gid);
      if (!st.ok()) return st.error().Wrap("container.mounts " + s.host->source + " -> " + s.host->target);
    }
  }
  LSB_TRY(MountJobDir(source, root, setup.job_dir));
  LSB_TRY(PlaceFontCache(setup, root + setup.job_dir));
  source.fd.reset();
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
  for (const auto& m : setup.mounts) LSB_TRY(CheckHostView(m));
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

// Fail closed: every writable mount the program can reach is one this box made (or a device
// node, shared by every box anyway); a writable mount of the zygote's would be shared by all the
// boxes it makes.
Status CheckNothingShared(const BoxSetup& setup) {
  auto text = ReadFile("/proc/self/mountinfo");
  if (!text.ok()) return text.error();
  auto mounts = ParseMountinfo(*text);
  std::vector<std::string> fresh = {"/dev/shm", setup.job_dir};
  for (const auto& t : setup.tmpfs) fresh.push_back(t.path);
  auto covered = [&](const MountinfoEntry& m) {
    for (const auto& n : mounts)
      if (n.parent == m.id && n.mount_point == m.mount_point) return true;
    return false;
  };
  auto fresh_here = [&](const MountinfoEntry& m) {
    if (m.mount_point == "/proc" || m.mount_point.rfind("/proc/", 0) == 0) return true;  // ours, made above
    // A device node bound over a path (/dev's own, HideDenied's /dev/null) holds no data.
    if (m.fstype == "devtmpfs")
      for (const char* dev : {"/null", "/zero", "/full", "/random", "/urandom"})
        if (m.root == dev) return true;
    return std::find(fresh.begin(), fresh.end(), m.mount_point) != fresh.end();
  };
  for (const auto& m : mounts) {
    bool ro = std::find(m.mount_options.begin(), m.mount_options.end(), "ro") != m.mount_options.end();
    if (ro || covered(m) || fresh_here(m)) continue;
    return Error{"a writable mount of the zygote box would be shared by its boxes: " + m.mount_point + " (" + m.fstype + ")"};
  }
  return OkStatus();
}

Status DeriveRoot(const BoxSetup& setup) {
  if (setup.fork != "derived") return Error{"DeriveRoot is only for a fork server's derived box"};
  // What the zygote's view had writable is replaced; a host mount's overlay would be shared.
  if (!setup.mounts.empty())
    return Error{"container.mounts is not supported in a fork server's box (its overlay would be shared)"};
  // Fail closed on a box that is not inside a zygote's: the root must be the zygote's read-only
  // tmpfs root (BuildRoot), never a host's.
  struct statfs rootfs;
  struct statvfs rootvfs;
  if (::statfs("/", &rootfs) != 0 || ::statvfs("/", &rootvfs) != 0) return Error::FromErrno("statfs /");
  if (rootfs.f_type != TMPFS_MAGIC || !(rootvfs.f_flag & ST_RDONLY))
    return Error{"a fork server's box must start in its zygote's read-only root, and / is not one"};
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return Error::FromErrno("make / rprivate (is init in its own mount namespace?)");
  // The zygote's unmasked /proc (of its pid namespace) is covered by this box's own, masked.
  LSB_TRY(MountProc(""));
  std::vector<const protocol::TmpfsSpec*> tmpfs;
  for (const auto& t : setup.tmpfs) tmpfs.push_back(&t);
  std::stable_sort(tmpfs.begin(), tmpfs.end(), [](auto* a, auto* b) { return a->path.size() < b->path.size(); });
  for (const auto* t : tmpfs) {
    LSB_TRY(ValidateMountPath("tmpfs", t->path));
    unsigned long flags = (t->nosuid ? MS_NOSUID : 0) | (t->nodev ? MS_NODEV : 0) | (t->noexec ? MS_NOEXEC : 0);
    char data[128];
    std::snprintf(data, sizeof data, "mode=%04o,uid=%u,gid=%u", t->mode & 07777, setup.uid, setup.gid);
    std::string opts = data;
    if (t->size_bytes > 0) opts += ",size=" + std::to_string(t->size_bytes);
    auto st = Mount("tmpfs", t->path, "tmpfs", flags, opts);
    if (!st.ok()) return st.error().Wrap("filesystem.tmpfs " + t->path);
  }
  LSB_TRY(ValidateMountPath("job_dir", setup.job_dir));
  LSB_TRY(Mount("tmpfs", setup.job_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4m,mode=0755"));
  LSB_TRY(PlaceFontCache(setup, setup.job_dir));
  LSB_TRY(Mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64m,mode=1777"));
  if (::sethostname(setup.hostname.data(), setup.hostname.size()) != 0)
    return Error::FromErrno("set hostname (is init in its own UTS namespace?)");
  return CheckNothingShared(setup);
}

}  // namespace lsb::init
