#include "init/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/fd_passing.h"
#include "init/landlock.h"

namespace lsb::init {
namespace {

struct ChildMsg {
  char tag;         // 'E' setup error, 'X' exec error
  int err;
  char what[120];
};

[[noreturn]] void ChildFail(int sock, char tag, const char* what, int err) {
  ChildMsg m{};
  m.tag = tag;
  m.err = err;
  std::snprintf(m.what, sizeof m.what, "%s", what);
  ssize_t ignored = ::send(sock, &m, sizeof m, MSG_NOSIGNAL);
  (void)ignored;
  ::_exit(127);
}

// fd < 0: the 'L' message without a descriptor (no watch in the accepted weaker mode).
bool SendFd(int sock, int fd) {
  char tag = 'L';
  return SendWithFds(sock, &tag, 1, &fd, fd >= 0 ? 1 : 0) == 1;
}

// close_range, or (gVisor answers EINVAL) close() of each number up to 1 << 16: init never holds
// more descriptors than that.
int CloseRange(unsigned lo, unsigned hi) {
  if (::syscall(SYS_close_range, lo, hi, 0) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  for (unsigned fd = lo; fd <= hi && fd < (1u << 16); ++fd) ::close(static_cast<int>(fd));
  return 0;
}

// Everything below runs in the forked child of a single-threaded init; it only uses memory
// prepared before fork and system calls.
[[noreturn]] void Child(const SpawnParams& p, char* const argv[], char* const envp[], int sock,
                        int stdin_r, int stdout_w, int stderr_w) {
  const int handoff = static_cast<int>(p.nofile);
  // init is non-dumpable; the child must not be, or its own /proc/self files (oom_score_adj
  // below) belong to root. execve resets it anyway; init only reads the program's memory after.
  if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) ChildFail(sock, 'E', "PR_SET_DUMPABLE", errno);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);  // ignored dispositions survive execve

  if (::setsid() < 0) ChildFail(sock, 'E', "setsid", errno);
  if (stdin_r < 0) stdin_r = ::open("/dev/null", O_RDONLY);
  if (stdin_r < 0) ChildFail(sock, 'E', "open /dev/null for stdin", errno);
  if (::dup2(stdin_r, 0) < 0 || ::dup2(stdout_w, 1) < 0 || ::dup2(stderr_w, 2) < 0)
    ChildFail(sock, 'E', "dup2 stdio", errno);
  if (::dup2(sock, handoff) < 0) ChildFail(sock, 'E', "dup2 hand-off socket", errno);
  sock = handoff;
  if (::chdir(p.workdir.c_str()) != 0) ChildFail(sock, 'E', "chdir to the workdir", errno);

  // init stays the last choice of the OOM killer: the program goes first.
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom < 0 || ::write(oom, "1000", 4) != 4) ChildFail(sock, 'E', "raise oom_score_adj", errno);
  ::close(oom);

  rlimit nofile{p.nofile, p.nofile}, fsize{p.file_size, p.file_size}, core{0, 0};
  if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) ChildFail(sock, 'E', "setrlimit NOFILE", errno);
  if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0) ChildFail(sock, 'E', "setrlimit FSIZE", errno);
  if (::setrlimit(RLIMIT_CORE, &core) != 0) ChildFail(sock, 'E', "setrlimit CORE", errno);

  if (::getuid() != p.uid || ::getgid() != p.gid) {
    if (::setgroups(0, nullptr) != 0) ChildFail(sock, 'E', "setgroups", errno);
    if (::setresgid(p.gid, p.gid, p.gid) != 0) ChildFail(sock, 'E', "setresgid", errno);
    if (::setresuid(p.uid, p.uid, p.uid) != 0) ChildFail(sock, 'E', "setresuid", errno);
  }
  if (::getuid() == 0 || ::geteuid() == 0) ChildFail(sock, 'E', "refusing to run the program as uid 0", EPERM);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail(sock, 'E', "PR_SET_NO_NEW_PRIVS", errno);
  // ruleset_fd < 0 only in the accepted weaker mode (no Landlock in the kernel).
  if (p.ruleset_fd >= 0 && RestrictSelf(p.ruleset_fd) != 0) ChildFail(sock, 'E', "landlock_restrict_self", errno);

  // /proc/self/fd shows only 0-2 after execve (the hand-off socket is close-on-exec).
  if (CloseRange(3, handoff - 1) != 0 || CloseRange(handoff + 1, ~0U) != 0)
    ChildFail(sock, 'E', "close_range", errno);
  if (::fcntl(sock, F_SETFD, FD_CLOEXEC) != 0) ChildFail(sock, 'E', "fcntl hand-off", errno);

  // The watch first: the escape filter refuses any later NEW_LISTENER, ours included.
  int listener = -1;
  if (p.watch) {
    listener = LoadSeccompProgram(p.seccomp->watch, true);
    if (listener < 0) ChildFail(sock, 'E', "seccomp: load the watch filter (user notification)", errno);
  }
  if (p.escape && LoadSeccompProgram(p.seccomp->escape, false) < 0)
    ChildFail(sock, 'E', "seccomp: load the escape filter", errno);
  if (!SendFd(sock, listener)) ChildFail(sock, 'E', "hand the listener to init", errno);
  if (listener >= 0) ::close(listener);

  ::execve(p.path.c_str(), argv, envp);
  ChildFail(sock, 'X', "execve", errno);
}

Result<std::pair<UniqueFd, UniqueFd>> Pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno("pipe");
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

}  // namespace

int ReadExecOutcome(int control_fd) {
  ChildMsg m{};
  ssize_t n;
  do {
    n = ::recv(control_fd, &m, sizeof m, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n > 0 && m.tag == 'X') return m.err ? m.err : ENOEXEC;
  return 0;
}

Result<uint64_t> CheckNofile(uint64_t nofile) {
  rlimit cur;
  if (::getrlimit(RLIMIT_NOFILE, &cur) != 0) return Error::FromErrno("getrlimit NOFILE");
  if (nofile < 16) return Error{"limits.nofile must be at least 16"};
  if (cur.rlim_max != RLIM_INFINITY && nofile >= cur.rlim_max)
    return Error{"limits.nofile " + std::to_string(nofile) + " must be below init's own hard limit " +
                 std::to_string(cur.rlim_max)};
  if (cur.rlim_cur <= nofile) {
    cur.rlim_cur = nofile + 1;
    if (::setrlimit(RLIMIT_NOFILE, &cur) != 0) return Error::FromErrno("raise init's NOFILE");
  }
  return nofile;
}

Result<Spawned> Spawn(const SpawnParams& p) {
  std::vector<char*> argv, envp;
  for (const auto& a : p.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : p.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) return Error::FromErrno("socketpair");
  UniqueFd control(sp[0]), child_sock(sp[1]);
  LSB_ASSIGN_OR_RETURN(auto out, Pipe());
  LSB_ASSIGN_OR_RETURN(auto err, Pipe());
  std::pair<UniqueFd, UniqueFd> in;
  if (p.stdin_pipe) {
    LSB_ASSIGN_OR_RETURN(in, Pipe());
  }

  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno("fork");
  if (pid == 0)
    Child(p, argv.data(), envp.data(), child_sock.get(), p.stdin_pipe ? in.first.get() : -1,
          out.second.get(), err.second.get());

  child_sock.reset();
  out.second.reset();
  err.second.reset();
  in.first.reset();
  Spawned s;
  s.pid = pid;
  s.control = std::move(control);
  s.stdout_r = std::move(out.first);
  s.stderr_r = std::move(err.first);
  s.stdin_w = std::move(in.second);

  // The child answers with the listener or with why it could not confine itself.
  ChildMsg m{};
  int fds[kMaxPassedFds];
  size_t nfds = 0;
  ssize_t n = RecvWithFds(s.control.get(), &m, sizeof m, fds, &nfds);
  std::vector<UniqueFd> got;  // owned at once; only the first (the listener) is kept
  for (size_t i = 0; i < nfds; ++i) got.emplace_back(fds[i]);
  if (n > 0 && m.tag == 'L' && !got.empty()) {
    s.listener = std::move(got[0]);
    return s;
  }
  if (n > 0 && m.tag == 'L' && !p.watch) return s;  // weaker mode: no listener expected
  int status;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n > 0 && m.tag == 'E') {
    m.what[sizeof m.what - 1] = '\0';
    return Error{std::string("confine the program: ") + m.what + ": " + std::strerror(m.err), m.err};
  }
  return Error{"confine the program: the child ended before handing over the seccomp listener"};
}

}  // namespace lsb::init
