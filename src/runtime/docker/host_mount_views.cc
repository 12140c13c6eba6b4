#include "runtime/docker/host_mount_views.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "base/io.h"
#include "base/mountinfo.h"
#include "runtime/host_mount.h"
#include "runtime/docker/ownership.h"

namespace lsb::docker {
namespace {

std::atomic<uint64_t> next_box{0};

// kLabelOwner "host/pid/start" as one path component: "pid_start". The host is this one (the
// views live in its /run), and its name stays out of the paths a box sees in its mountinfo.
std::string OwnerDirName(const std::string& owner) {
  std::string s = owner.substr(owner.find('/') + 1);
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}
std::string OwnerFromDirName(const std::string& name) {
  size_t sep = name.find('_');
  if (sep == std::string::npos || sep == 0 || sep + 1 == name.size() ||
      name.find_first_not_of("0123456789_") != std::string::npos || name.find('_', sep + 1) != std::string::npos)
    return "";
  const std::string self = OwnerLabel();
  return self.substr(0, self.find('/')) + "/" + name.substr(0, sep) + "/" + name.substr(sep + 1);
}

Status MakeDir(const std::string& path, mode_t mode, std::vector<std::string>* made) {
  if (::mkdir(path.c_str(), mode) != 0) {
    if (errno != EEXIST || made) return Error::FromErrno("container.mounts: mkdir " + path);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
      return Error{"container.mounts: " + path + " is not a directory of root's; remove it"};
    ::chmod(path.c_str(), mode);
    return OkStatus();
  }
  if (made) made->push_back(path);
  return OkStatus();
}

// Mount points strictly under `dir` (from /proc/self/mountinfo), deepest first.
std::vector<std::string> MountsUnder(const std::string& dir) {
  std::vector<std::string> out;
  auto info = ReadFile("/proc/self/mountinfo");
  if (!info.ok()) return out;
  for (const MountinfoEntry& m : ParseMountinfo(*info)) {
    const std::string& point = m.mount_point;
    if (point.size() > dir.size() + 1 && point.compare(0, dir.size(), dir) == 0 && point[dir.size()] == '/')
      out.push_back(point);
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

// Removes the directories of `dir` bottom-up with rmdir only: never a file (nothing of ours is a
// file there; a mount that could not be detached keeps its directory).
bool RemoveDirs(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string p = dir + "/" + n;
      struct stat st;
      if (::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) RemoveDirs(p);
    }
    ::closedir(d);
  }
  return ::rmdir(dir.c_str()) == 0;
}

Status Attach(int tree, const std::string& at) {
  if (::syscall(SYS_move_mount, tree, "", AT_FDCWD, at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return Error::FromErrno("container.mounts: attach the host directory's mount at " + at + " (move_mount)");
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<HostMountViews>> HostMountViews::Make(const std::string& owner,
                                                             const std::vector<protocol::MountSpec>& checked,
                                                             uid_t uid, gid_t gid) {
  if (::geteuid() != 0)
    return Error{"container.mounts on Docker needs the daemon to run as root (it makes the id-mapped mounts the engine "
                 "binds)"};
  for (const char* d : {"/run/llm-sandbox", kDockerMountsRoot}) LSB_TRY(MakeDir(d, 0700, nullptr));
  const std::string owner_dir = std::string(kDockerMountsRoot) + "/" + OwnerDirName(owner);
  LSB_TRY(MakeDir(owner_dir, 0700, nullptr));
  std::unique_ptr<HostMountViews> v(new HostMountViews(owner_dir + "/" + std::to_string(next_box++)));
  LSB_TRY(MakeDir(v->dir_, 0700, &v->made_));
  for (size_t i = 0; i < checked.size(); ++i) {
    auto st = v->Add(checked[i], i, uid, gid);
    if (!st.ok()) return st.error().Wrap("container.mounts " + checked[i].source + " -> " + checked[i].target);
  }
  return v;
}

Status HostMountViews::Add(const protocol::MountSpec& m, size_t index, uid_t uid, gid_t gid) {
  if (m.mode != "ro" && m.mode != "overlay") return Error{"unknown mode \"" + m.mode + "\""};
  const std::string base = dir_ + "/m" + std::to_string(index);
  const std::string view = base + "/view";
  LSB_TRY(MakeDir(base, 0700, &made_));
  LSB_TRY(MakeDir(view, 0755, &made_));
  LSB_ASSIGN_OR_RETURN(UniqueFd tree, OpenHostMount(m.source, uid, gid));
  if (m.mode == "ro") {
    LSB_TRY(Attach(tree.get(), view));
    mounted_.push_back(view);
    binds_.emplace_back(view, m.target);
    return OkStatus();
  }
  const std::string lower = base + "/lower", scratch = base + "/scratch";
  LSB_TRY(MakeDir(lower, 0755, &made_));
  LSB_TRY(MakeDir(scratch, 0700, &made_));
  LSB_TRY(Attach(tree.get(), lower));
  mounted_.push_back(lower);
  std::string opts = "mode=0755";
  if (m.size_bytes > 0) opts += ",size=" + std::to_string(m.size_bytes);
  if (::mount("tmpfs", scratch.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.c_str()) != 0)
    return Error::FromErrno("mount the overlay's tmpfs at " + scratch);
  mounted_.push_back(scratch);
  // The overlay's root takes the upper's owner and mode: the program's, as the id map shows the source.
  struct stat lower_st;
  if (::stat(lower.c_str(), &lower_st) != 0) return Error::FromErrno("stat " + lower);
  const std::string upper = scratch + "/upper", work = scratch + "/work";
  if (::mkdir(upper.c_str(), 0700) != 0 || ::mkdir(work.c_str(), 0700) != 0)
    return Error::FromErrno("make the overlay's upper and work dirs in " + scratch);
  if (::chown(upper.c_str(), lower_st.st_uid, lower_st.st_gid) != 0 ||
      ::chmod(upper.c_str(), lower_st.st_mode & 07777) != 0)
    return Error::FromErrno("set the owner of the overlay's upper dir " + upper);
  const std::string ovl = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work;
  if (ovl.find_first_of(":\\", 0) != std::string::npos || std::count(ovl.begin(), ovl.end(), ',') != 2)
    return Error{"the overlay's paths under " + dir_ + " hold a ',', ':' or '\\' (the hostname?)"};
  if (::mount("overlay", view.c_str(), "overlay", MS_NOSUID | MS_NODEV | MS_NOEXEC, ovl.c_str()) != 0)
    return Error::FromErrno("mount the overlay (lower: the host directory, upper: the box's tmpfs) at " + view);
  mounted_.push_back(view);
  binds_.emplace_back(view, m.target);
  return OkStatus();
}

nlohmann::json HostMountViews::SpecMounts() const {
  nlohmann::json out = nlohmann::json::array();
  // ReadOnly false on purpose: the view is read-only itself (ro mode), and runc's read-only
  // remount of a bind would drop its nosuid/nodev/noexec. Init checks the flags in the box.
  for (const auto& [view, target] : binds_)
    out.push_back({{"Type", "bind"}, {"Source", view}, {"Target", target}, {"ReadOnly", false},
                   {"BindOptions", {{"Propagation", "rprivate"}}}});
  return out;
}

void HostMountViews::Release() {
  // Detached, not unmounted: the container may still hold its clone (the engine removes it in the
  // background); the kernel frees each mount when its last user goes.
  for (auto it = mounted_.rbegin(); it != mounted_.rend(); ++it)
    if (::umount2(it->c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
      std::fprintf(stderr, "llm-sandbox: container.mounts: detach %s: %s\n", it->c_str(), std::strerror(errno));
  mounted_.clear();
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());
  made_.clear();
}

HostMountViews::~HostMountViews() { Release(); }

void RemoveOwnMountDir(const std::string& owner) {
  ::rmdir((std::string(kDockerMountsRoot) + "/" + OwnerDirName(owner)).c_str());
}

size_t RemoveStaleMountViews() {
  size_t removed = 0;
  DIR* d = ::opendir(kDockerMountsRoot);
  if (!d) return 0;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string owner = OwnerFromDirName(n);
    if (owner.empty() || !OwnerAlive(owner)) stale.push_back(std::string(kDockerMountsRoot) + "/" + n);
  }
  ::closedir(d);
  for (const auto& dir : stale) {
    for (const auto& point : MountsUnder(dir)) ::umount2(point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    if (RemoveDirs(dir)) ++removed;
    else std::fprintf(stderr, "llm-sandbox: container.mounts: could not remove the stale %s\n", dir.c_str());
  }
  return removed;
}

}  // namespace lsb::docker
