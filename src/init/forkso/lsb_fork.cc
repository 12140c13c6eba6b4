// liblsb-fork.so: the steps a fork server's python takes through ctypes (the zygote's source is
// runtime/native/fork_server_source.cc; the design is docs/architecture.md, "Fork server"). Each
// is what the launcher's child (runtime/native/launcher.cc) or init's spawn child (confine.h) does
// for a normal box, in a process that must stay a copy of the warm interpreter. Only system calls
// and static memory: no libstdc++, so it loads into any glibc python of the image.
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/prctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd_passing.h"
#include "base/reset_signals.h"
#include "base/loopback_up.h"
#include "init/adopt_wire.h"
#include "init/confine.h"

namespace {

// "sysctl <path> <value>" and "rlimit <resource> <value>" lines (box_user_limits.h), written by
// the daemon: the box's own share of the per-user limits, set where it is uid 0.
bool ApplyLimits(const char* text) {
  static char buf[8192];
  size_t n = strlen(text);
  if (n >= sizeof buf) return false;
  memcpy(buf, text, n + 1);
  char* save = nullptr;
  for (char* line = strtok_r(buf, "\n", &save); line; line = strtok_r(nullptr, "\n", &save)) {
    char* f = nullptr;
    char* kind = strtok_r(line, " ", &f);
    char* what = strtok_r(nullptr, " ", &f);
    char* value = strtok_r(nullptr, " ", &f);
    if (!kind || !what || !value) return false;
    if (strcmp(kind, "sysctl") == 0) {
      int fd = ::open(what, O_WRONLY | O_CLOEXEC);
      if (fd < 0) return false;
      size_t len = strlen(value);
      bool ok = ::write(fd, value, len) == static_cast<ssize_t>(len);
      ::close(fd);
      if (!ok) return false;
    } else if (strcmp(kind, "rlimit") == 0) {
      struct rlimit v {strtoull(value, nullptr, 10), strtoull(value, nullptr, 10)};
      if (::syscall(SYS_prlimit64, 0, atoi(what), &v, nullptr) != 0) return false;
    } else {
      errno = EINVAL;
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" {

// Steps of lsb_fork_enter, returned negated on failure (errno kept).
enum { kJoin = 1, kUnshare, kMaps, kIds, kCgroupNs, kLimits, kLoopback };

// In the zygote's child that becomes a box: joins the box's cgroups ("0" to each of `join_fds`,
// opened by the daemon), makes the box's user, mount, ipc, uts, net and pid namespaces, writes
// 'u' on `sync` and waits for one byte back (the zygote, in the parent user namespace, has
// written the id maps meanwhile), becomes uid/gid 0 there, makes the cgroup namespace, applies
// the box's own per-user limits and brings lo up if asked. Returns 0 or -step.
__attribute__((visibility("default"))) int lsb_fork_enter(const int* join_fds, int n_join, int sync,
                                                          const char* limits, int loopback_up) {
  for (int i = 0; i < n_join; ++i)
    if (::write(join_fds[i], "0", 1) != 1) return -kJoin;
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWPID) != 0)
    return -kUnshare;
  char b = 'u';
  if (::write(sync, &b, 1) != 1 || ::read(sync, &b, 1) != 1 || b != 'm') return -kMaps;
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setgroups, 0, nullptr) != 0 ||
      ::syscall(SYS_setresuid, 0, 0, 0) != 0)
    return -kIds;
  if (::unshare(CLONE_NEWCGROUP) != 0) return -kCgroupNs;
  if (!ApplyLimits(limits)) return -kLimits;
  if (loopback_up && !lsb::BringLoopbackUp()) return -kLoopback;
  return 0;
}

// In the box's pid 1 (the first fork after lsb_fork_enter): sends its own pidfd to the daemon on
// `report` (the daemon's handle to kill and wait for the box), puts the stream on fds 0 and 1,
// the diagnostics pipe on 2 and the adopted program's socket on 3, closes every other fd at exec
// and executes init (an O_PATH fd). Returns only on failure: -1 with errno.
__attribute__((visibility("default"))) int lsb_become_init(int stream, int diag, int adopt, int report, int init_fd) {
  int self = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (self < 0) return -1;
  char tag = 'P';
  if (lsb::SendWithFds(report, &tag, 1, &self, 1) != 1) return -1;
  ::close(self);
  if (::setsid() < 0) return -1;
  lsb::ResetSignals();
  // Out of the way of 0..3 first, so no dup2 below clobbers a source.
  int fds[5] = {stream, diag, adopt, init_fd, -1};
  for (int i = 0; i < 4; ++i) {
    fds[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
    if (fds[i] < 0) return -1;
  }
  if (::dup2(fds[0], 0) < 0 || ::dup2(fds[0], 1) < 0 || ::dup2(fds[1], 2) < 0 || ::dup2(fds[2], 3) < 0) return -1;
  if (::syscall(SYS_close_range, 4u, ~0u, CLOSE_RANGE_CLOEXEC) != 0) return -1;
  char arg0[] = "llm-sandbox-init";
  char* argv[] = {arg0, nullptr};
  char env0[] = "PATH=/usr/local/bin:/usr/bin:/bin";
  char env1[] = "LLM_SANDBOX_BACKEND=native";
  char* envp[] = {env0, env1, nullptr};
  ::syscall(SYS_execveat, fds[3], "", argv, envp, AT_EMPTY_PATH);
  return -1;
}

// In the program, before it is confined: its /proc/self/cmdline becomes `block` (the run's argv,
// NUL-separated), copied to memory of its own, as a process that executed it would show
// (PR_SET_MM_MAP, the checkpoint/restore call, which needs no capability when /proc/self/exe stays).
// Returns 0, or -1 with errno.
__attribute__((visibility("default"))) int lsb_set_cmdline(const char* block, unsigned long len) {
  if (len == 0) return -1;
  void* mem = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return -1;
  memcpy(mem, block, len);
  static char stat[4096];
  int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = ::read(fd, stat, sizeof stat - 1);
  ::close(fd);
  if (n <= 0) return -1;
  stat[n] = '\0';
  // Fields after the command's closing parenthesis, from field 3 (state) on.
  char* p = strrchr(stat, ')');
  if (!p) return -1;
  unsigned long long f[64] = {};
  int i = 3;
  for (char* save = nullptr, *w = strtok_r(p + 2, " ", &save); w && i < 64; w = strtok_r(nullptr, " ", &save), ++i)
    f[i] = strtoull(w, nullptr, 10);
  if (i <= 51) {
    errno = EPROTO;
    return -1;
  }
  struct prctl_mm_map m {};
  m.start_code = f[26];
  m.end_code = f[27];
  m.start_stack = f[28];
  m.start_data = f[45];
  m.end_data = f[46];
  m.start_brk = f[47];
  m.brk = static_cast<__u64>(::syscall(SYS_brk, 0));
  m.arg_start = reinterpret_cast<__u64>(mem);
  m.arg_end = m.arg_start + len;
  m.env_start = f[50];
  m.env_end = f[51];
  m.auxv = nullptr;
  m.auxv_size = 0;
  m.exe_fd = static_cast<__u32>(-1);
  return ::prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof m, 0) == 0 ? 0 : -1;
}

// In the program (pid 2, init's child): receives its confinement from init on `sock`
// (adopt_wire.h) and applies it (confine.h), the listener going back to init; then closes the
// hand-off socket, which tells init the program runs. Returns 0, or -1 after telling init why
// (the caller exits at once).
__attribute__((visibility("default"))) int lsb_adopt(int sock) {
  using namespace lsb::init;
  static char msg[kAdoptMaxMessage];
  int fds[lsb::kMaxPassedFds];
  size_t nfds = 0;
  auto fail = [](int to, const char* what, int err) {
    ChildReport r{};
    r.tag = 'E';
    r.err = err;
    snprintf(r.what, sizeof r.what, "%s", what);
    (void)!::send(to, &r, sizeof r, MSG_NOSIGNAL);
    return -1;
  };
  ssize_t n = lsb::RecvWithFds(sock, msg, sizeof msg, fds, &nfds);
  if (n < static_cast<ssize_t>(sizeof(AdoptWire))) return fail(sock, "receive the confinement from init", n < 0 ? errno : EPROTO);
  AdoptWire w;
  memcpy(&w, msg, sizeof w);
  const size_t need = 2 + w.has_stdin + w.has_ruleset;
  if (w.magic != kAdoptMagic || w.watch_len > kAdoptMaxFilter || w.escape_len > kAdoptMaxFilter ||
      static_cast<size_t>(n) != sizeof w + (w.watch_len + w.escape_len) * sizeof(sock_filter) || nfds != need ||
      w.workdir[sizeof w.workdir - 1] != '\0')
    return fail(sock, "a malformed confinement message from init", EPROTO);
  const sock_filter* filters = reinterpret_cast<const sock_filter*>(msg + sizeof w);
  ConfineParams c;
  size_t i = 0;
  c.stdin_fd = w.has_stdin ? fds[i++] : -1;
  c.stdout_fd = fds[i++];
  c.stderr_fd = fds[i++];
  c.ruleset_fd = w.has_ruleset ? fds[i++] : -1;
  c.sock = sock;
  c.workdir = w.workdir;
  c.nofile = w.nofile;
  c.file_size = w.file_size;
  c.uid = w.uid;
  c.gid = w.gid;
  c.dumpable = true;
  if (w.watch_len) {
    c.watch = filters;
    c.watch_len = static_cast<unsigned short>(w.watch_len);
  }
  if (w.escape_len) {
    c.escape = filters + w.watch_len;
    c.escape_len = static_cast<unsigned short>(w.escape_len);
  }
  if (const char* failed = ConfineSelf(c)) {
    int err = errno;
    const int handoff = static_cast<int>(w.nofile);
    // Once moved, the socket is only at the hand-off number (close_range took the old one).
    return fail(::fcntl(handoff, F_GETFD) >= 0 ? handoff : sock, failed, err);
  }
  ::close(static_cast<int>(w.nofile));
  return 0;
}

}  // extern "C"
