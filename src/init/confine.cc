#include "init/confine.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd_passing.h"
#include "base/reset_signals.h"

namespace lsb::init {
namespace {

// close_range, or (gVisor answers EINVAL) close() of each number up to 1 << 16: init never holds
// more descriptors than that.
int CloseRange(unsigned lo, unsigned hi) {
  if (::syscall(SYS_close_range, lo, hi, 0) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  for (unsigned fd = lo; fd <= hi && fd < (1u << 16); ++fd) ::close(static_cast<int>(fd));
  return 0;
}

int LoadFilter(const sock_filter* prog, unsigned short len, bool new_listener) {
  sock_fprog fprog{len, const_cast<sock_filter*>(prog)};
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    new_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &fprog));
}

}  // namespace

const char* TakeProgramIds(uint32_t uid, uint32_t gid) {
  if (::getuid() != uid || ::getgid() != gid) {
    if (::setgroups(0, nullptr) != 0) return "setgroups";
    if (::setresgid(gid, gid, gid) != 0) return "setresgid";
    if (::setresuid(uid, uid, uid) != 0) return "setresuid";
  }
  if (::getuid() == 0 || ::geteuid() == 0) {
    errno = EPERM;
    return "refusing to run the program as uid 0";
  }
  return nullptr;
}

const char* ConfineSelf(const ConfineParams& p) {
  const int handoff = static_cast<int>(p.nofile);
  ResetSignals();  // ignored dispositions survive execve

  if (::setsid() < 0) return "setsid";
  int in = p.stdin_fd >= 0 ? p.stdin_fd : ::open("/dev/null", O_RDONLY);
  if (in < 0) return "open /dev/null for stdin";
  if (::dup2(in, 0) < 0 || ::dup2(p.stdout_fd, 1) < 0 || ::dup2(p.stderr_fd, 2) < 0) return "dup2 stdio";
  if (::dup2(p.sock, handoff) < 0) return "dup2 hand-off socket";
  if (::chdir(p.workdir) != 0) return "chdir to the workdir";

  // init stays the last choice of the OOM killer: the program goes first.
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom < 0 || ::write(oom, "1000", 4) != 4) return "raise oom_score_adj";
  ::close(oom);

  rlimit nofile{p.nofile, p.nofile}, fsize{p.file_size, p.file_size}, core{0, 0};
  if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) return "setrlimit NOFILE";
  if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0) return "setrlimit FSIZE";
  if (::setrlimit(RLIMIT_CORE, &core) != 0) return "setrlimit CORE";

  if (const char* step = TakeProgramIds(p.uid, p.gid)) return step;
  if (p.dumpable && ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return "PR_SET_DUMPABLE";
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "PR_SET_NO_NEW_PRIVS";
  if (p.ruleset_fd >= 0 && ::syscall(SYS_landlock_restrict_self, p.ruleset_fd, 0) != 0) return "landlock_restrict_self";

  // /proc/self/fd shows only 0-2 after execve (the hand-off socket is close-on-exec).
  if (CloseRange(3, handoff - 1) != 0 || CloseRange(handoff + 1, ~0U) != 0) return "close_range";
  if (::fcntl(handoff, F_SETFD, FD_CLOEXEC) != 0) return "fcntl hand-off";

  // The watch first: the escape filter refuses any later NEW_LISTENER, ours included.
  int listener = -1;
  if (p.watch) {
    listener = LoadFilter(p.watch, p.watch_len, true);
    if (listener < 0) return "seccomp: load the watch filter (user notification)";
  }
  if (p.escape && LoadFilter(p.escape, p.escape_len, false) < 0) return "seccomp: load the escape filter";
  char tag = 'L';
  if (SendWithFds(handoff, &tag, 1, &listener, listener >= 0 ? 1 : 0) != 1) return "hand the listener to init";
  if (listener >= 0) ::close(listener);
  return nullptr;
}

}  // namespace lsb::init
