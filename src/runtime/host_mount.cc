#include "runtime/host_mount.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/io.h"

namespace lsb {
namespace {

// A user namespace whose only mapping is `from` -> `to` (uid and gid): the id map of an idmapped
// mount. Made by a child that waits in it until the maps are written and its ns fd is open.
Result<UniqueFd> MappingNamespace(uid_t from_uid, uid_t to_uid, gid_t from_gid, gid_t to_gid) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error::FromErrno("pipe2");
  UniqueFd r(p[0]), w(p[1]);
  struct clone_args args {};
  args.flags = CLONE_NEWUSER;
  args.exit_signal = SIGCHLD;
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return Error::FromErrno("container.mounts: clone3(CLONE_NEWUSER) for the mount's id map");
  if (pid == 0) {
    char c;
    ::close(p[1]);
    while (::read(p[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  r.reset();
  const std::string proc = "/proc/" + std::to_string(pid);
  Status st = WriteFile(proc + "/uid_map", std::to_string(from_uid) + " " + std::to_string(to_uid) + " 1\n");
  if (st.ok()) st = WriteFile(proc + "/gid_map", std::to_string(from_gid) + " " + std::to_string(to_gid) + " 1\n");
  UniqueFd ns;
  if (st.ok()) {
    ns.reset(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns) st = Error::FromErrno("open " + proc + "/ns/user");
  }
  w.reset();  // the child exits; the namespace lives on through `ns`
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  if (!st.ok()) return st.error().Wrap("container.mounts: the mount's id map");
  return ns;
}

}  // namespace

Result<UniqueFd> OpenHostMount(const std::string& real_source, uid_t host_uid, gid_t host_gid) {
  struct open_how how {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd dir(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, real_source.c_str(), &how, sizeof how)));
  if (!dir)
    return Error::FromErrno("container.mounts: open source '" + real_source +
                            "' (a symbolic link on its path, made after it was checked, is refused)");
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return Error::FromErrno("container.mounts: stat " + real_source);
  UniqueFd tree(static_cast<int>(
      ::syscall(SYS_open_tree, dir.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)));
  if (!tree) {
    int err = errno;
    std::string why = err == EPERM ? "; host directories need the daemon to run as root (CAP_SYS_ADMIN)" : "";
    return Error{Error::FromErrno("container.mounts: clone the mount of '" + real_source + "' (open_tree)", err).message + why, err};
  }
  LSB_ASSIGN_OR_RETURN(UniqueFd ns, MappingNamespace(st.st_uid, host_uid, st.st_gid, host_gid));
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  attr.userns_fd = static_cast<uint64_t>(ns.get());
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
    return Error::FromErrno("container.mounts: make the mount of '" + real_source +
                            "' read-only and id-mapped (mount_setattr; its filesystem may not support idmapped mounts)");
  return tree;
}

}  // namespace lsb
