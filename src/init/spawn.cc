#include "init/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
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
#include "base/reset_signals.h"
#include "init/adopt_wire.h"
#include "init/confine.h"

namespace lsb::init {
namespace {

using ChildMsg = ChildReport;

[[noreturn]] void ChildFail(int sock, char tag, const char* what, int err) {
  ChildMsg m{};
  m.tag = tag;
  m.err = err;
  std::snprintf(m.what, sizeof m.what, "%s", what);
  ssize_t ignored = ::send(sock, &m, sizeof m, MSG_NOSIGNAL);
  (void)ignored;
  ::_exit(127);
}

// Everything below runs in the forked child of a single-threaded init; it only uses memory
// prepared before fork and system calls.
[[noreturn]] void Child(const SpawnParams& p, char* const argv[], char* const envp[], int sock,
                        int stdin_r, int stdout_w, int stderr_w) {
  const int handoff = static_cast<int>(p.nofile);
  // init is non-dumpable; the child must not be, or its own /proc/self files (oom_score_adj
  // below) belong to root. execve resets it anyway; init only reads the program's memory after.
  if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) ChildFail(sock, 'E', "PR_SET_DUMPABLE", errno);
  ConfineParams c;
  c.stdin_fd = stdin_r;
  c.stdout_fd = stdout_w;
  c.stderr_fd = stderr_w;
  c.sock = sock;
  c.workdir = p.workdir.c_str();
  c.nofile = p.nofile;
  c.file_size = p.file_size;
  c.uid = p.uid;
  c.gid = p.gid;
  c.ruleset_fd = p.ruleset_fd;
  if (p.watch) {
    c.watch = p.seccomp->watch.data();
    c.watch_len = static_cast<unsigned short>(p.seccomp->watch.size());
  }
  if (p.escape) {
    c.escape = p.seccomp->escape.data();
    c.escape_len = static_cast<unsigned short>(p.seccomp->escape.size());
  }
  if (const char* failed = ConfineSelf(c)) {
    int err = errno;
    // Once moved, the socket is only at the hand-off number (close_range took the old one).
    ChildFail(::fcntl(handoff, F_GETFD) >= 0 ? handoff : sock, 'E', failed, err);
  }
  ::execve(p.path.c_str(), argv, envp);
  ChildFail(handoff, 'X', "execve", errno);
}

// A fork server's zygote (BoxSetup.fork "zygote"): uid 0 of the box with its capabilities, no
// Landlock, seccomp or no_new_privs (it makes the boxes of the runs, each of which takes the whole
// confinement before any program code runs), and fds 3-5 kept (the daemon's socket, liblsb-fork.so
// and init's own binary). Runs only the daemon's interpreter source, never a request's code.
[[noreturn]] void ZygoteChild(const SpawnParams& p, char* const argv[], char* const envp[], int sock,
                              int stdout_w, int stderr_w) {
  ResetSignals();
  if (::setsid() < 0) ChildFail(sock, 'E', "setsid", errno);
  int in = ::open("/dev/null", O_RDONLY);
  if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(stdout_w, 1) < 0 || ::dup2(stderr_w, 2) < 0)
    ChildFail(sock, 'E', "dup2 stdio", errno);
  // Out of the way first (above any source), then at 3, 4, 5; the report socket at 6.
  constexpr int kReport = 6;
  if (p.zygote_fds.size() != 3) ChildFail(sock, 'E', "the zygote needs exactly three fds (BoxSetup.fork_fds)", EINVAL);
  int high[3];
  for (int i = 0; i < 3; ++i)
    if ((high[i] = ::fcntl(p.zygote_fds[i], F_DUPFD_CLOEXEC, 100)) < 0) ChildFail(sock, 'E', "keep the fork server's fds", errno);
  int rep = ::fcntl(sock, F_DUPFD_CLOEXEC, 100);
  if (rep < 0) ChildFail(sock, 'E', "dup the report socket", errno);
  sock = rep;
  for (int i = 0; i < 3; ++i)
    if (::dup2(high[i], 3 + i) < 0) ChildFail(sock, 'E', "place the fork server's fds at 3-5", errno);
  if (::dup3(rep, kReport, O_CLOEXEC) < 0) ChildFail(sock, 'E', "dup the report socket", errno);
  sock = kReport;
  if (::syscall(SYS_close_range, kReport + 1, ~0U, 0) != 0) ChildFail(sock, 'E', "close_range", errno);
  if (::chdir(p.workdir.c_str()) != 0) ChildFail(sock, 'E', "chdir to the workdir", errno);
  // Loaded without no_new_privs: uid 0 of the box has CAP_SYS_ADMIN there.
  if (!p.zygote_filter) ChildFail(sock, 'E', "the zygote has no seccomp filter", EINVAL);
  sock_fprog prog{static_cast<unsigned short>(p.zygote_filter->size()), const_cast<sock_filter*>(p.zygote_filter->data())};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) ChildFail(sock, 'E', "seccomp: load the zygote's filter", errno);
  ::execve(p.path.c_str(), argv, envp);
  ChildFail(sock, 'X', "execve", errno);
}

Result<std::pair<UniqueFd, UniqueFd>> Pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno("pipe");
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

// What a child is forked with: argv and envp as execve takes them (pointing into `p`), the
// control socket pair and the stdio pipes.
struct ChildIo {
  std::vector<char*> argv, envp;
  UniqueFd control, child_sock;
  StdioPipes pipes;
};

Result<ChildIo> PrepareChild(const SpawnParams& p) {
  ChildIo io;
  for (const auto& a : p.argv) io.argv.push_back(const_cast<char*>(a.c_str()));
  io.argv.push_back(nullptr);
  for (const auto& e : p.env) io.envp.push_back(const_cast<char*>(e.c_str()));
  io.envp.push_back(nullptr);
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) return Error::FromErrno("socketpair");
  io.control = UniqueFd(sp[0]);
  io.child_sock = UniqueFd(sp[1]);
  LSB_ASSIGN_OR_RETURN(io.pipes, MakeStdioPipes(p.stdin_pipe));
  return io;
}

// The parent's side once the child is forked: its ends closed, the host's ends kept.
Spawned Forked(pid_t pid, ChildIo& io) {
  io.child_sock.reset();
  Spawned s = io.pipes.HostSide(pid);
  s.control = std::move(io.control);
  return s;
}

}  // namespace

Result<StdioPipes> MakeStdioPipes(bool stdin_pipe) {
  StdioPipes p;
  LSB_ASSIGN_OR_RETURN(p.out, Pipe());
  LSB_ASSIGN_OR_RETURN(p.err, Pipe());
  if (stdin_pipe) {
    LSB_ASSIGN_OR_RETURN(p.in, Pipe());
  }
  return p;
}

Spawned StdioPipes::HostSide(pid_t pid) {
  out.second.reset();
  err.second.reset();
  in.first.reset();
  Spawned s;
  s.pid = pid;
  s.stdout_r = std::move(out.first);
  s.stderr_r = std::move(err.first);
  s.stdin_w = std::move(in.second);
  return s;
}

// The child can send only a fixed word; the workdir's path and the fix are added here (issue 37:
// "chdir to the workdir: No such file or directory" named neither).
Error ConfineFailed(const std::string& who, const std::string& what, int err, const std::string& workdir) {
  std::string message = "confine " + who + ": " + what + ": " + std::strerror(err);
  if (what != "chdir to the workdir") return Error{message, err};
  return Error{"confine " + who + ": cannot enter the working directory " + workdir + ": " + std::strerror(err) +
                   "; set container.workdir to a directory the image has (or the path of one of the policy's "
                   "tmpfs or mounts), or create it with container.build (run: [\"mkdir -p " + workdir +
                   "\"]); `llm-sandbox policy check` reports a missing workdir before any box",
               err};
}

Status TakeListener(Spawned& s, bool watch, const std::string& who, const std::string& workdir) {
  ChildMsg m{};
  int fds[kMaxPassedFds];
  size_t nfds = 0;
  ssize_t n = RecvWithFds(s.control.get(), &m, sizeof m, fds, &nfds);
  std::vector<UniqueFd> got;  // owned at once; only the first (the listener) is kept
  for (size_t i = 0; i < nfds; ++i) got.emplace_back(fds[i]);
  if (n > 0 && m.tag == 'L' && !got.empty()) {
    s.listener = std::move(got[0]);
    return OkStatus();
  }
  if (n > 0 && m.tag == 'L' && !watch) return OkStatus();  // weaker mode: no listener expected
  ::kill(s.pid, SIGKILL);  // a child that failed is on its way out already
  int status;
  while (::waitpid(s.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n > 0 && m.tag == 'E') {
    m.what[sizeof m.what - 1] = '\0';
    return ConfineFailed(who, m.what, m.err, workdir);
  }
  return Error{"confine " + who + ": it ended before handing over the seccomp listener"};
}

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
  LSB_ASSIGN_OR_RETURN(ChildIo io, PrepareChild(p));
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno("fork");
  if (pid == 0)
    Child(p, io.argv.data(), io.envp.data(), io.child_sock.get(), p.stdin_pipe ? io.pipes.in.first.get() : -1,
          io.pipes.out.second.get(), io.pipes.err.second.get());
  Spawned s = Forked(pid, io);
  // The child answers with the listener or with why it could not confine itself.
  LSB_TRY(TakeListener(s, p.watch, "the program", p.workdir));
  return s;
}

Result<Spawned> SpawnZygote(const SpawnParams& p) {
  LSB_ASSIGN_OR_RETURN(ChildIo io, PrepareChild(p));  // its stdin is /dev/null whatever the run says
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno("fork");
  if (pid == 0)
    ZygoteChild(p, io.argv.data(), io.envp.data(), io.child_sock.get(), io.pipes.out.second.get(),
                io.pipes.err.second.get());
  return Forked(pid, io);
}

}  // namespace lsb::init
