#include "runtime/native/launcher.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lsb::native {
namespace {

struct Pipe {
  UniqueFd r, w;
};

Result<Pipe> MakePipe(int flags) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | flags) != 0) return Error::FromErrno("pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Keeps an fd off 0..2 so the child's dup2 onto 0..2 cannot clobber a source (a daemon may run
// with stdin closed, so a fresh fd can be 0).
Result<UniqueFd> AboveStdio(UniqueFd fd) {
  if (fd.get() > 2) return fd;
  int n = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (n < 0) return Error::FromErrno("fcntl(F_DUPFD_CLOEXEC)");
  return UniqueFd(n);
}

// The child between clone3 and execveat: async-signal-safe calls only (the parent may have
// threads whose locks were copied mid-use).
[[noreturn]] void ChildMain(int sync_r, int sync_w, int status_w, int stream, int diag_w,
                            int init_fd, bool may_setgroups, const int* attach_fds, size_t n_attach) {
  ::close(sync_w);  // so a dead parent means EOF below, not a hang
  char go = 0;
  ssize_t n;
  do n = ::read(sync_r, &go, 1); while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(111);  // the parent gave up on us
  auto fail = [status_w](int stage) {
    int msg[2] = {stage, errno};
    (void)!::write(status_w, msg, sizeof msg);
    ::_exit(127);
  };
  // Join the box's v1 cgroups: "0" moves the calling thread, our only one (see launcher.h).
  for (size_t i = 0; i < n_attach; ++i)
    if (::write(attach_fds[i], "0", 1) != 1) fail(9);
  // Become uid/gid 0 of the new user namespace: our credentials still carry the parent's host
  // ids, which the map does not cover, and execve would drop every capability. Raw syscalls:
  // glibc's wrappers would try to sync threads this copy of the process does not have.
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0) fail(6);
  if (may_setgroups && ::syscall(SYS_setgroups, 0, nullptr) != 0) fail(7);
  if (::syscall(SYS_setresuid, 0, 0, 0) != 0) fail(8);
  // Our cgroup namespace is rooted at the box's group: cgroups are set up by now.
  if (::unshare(CLONE_NEWCGROUP) != 0) fail(1);
  if (::setsid() < 0) fail(2);  // no controlling terminal of the host's session
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);
  if (::dup2(stream, 0) < 0 || ::dup2(stream, 1) < 0 || ::dup2(diag_w, 2) < 0) fail(3);
  // Everything else (the host's fds included) is gone at exec; status_w and init_fd stay usable
  // until then.
  if (::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) != 0) fail(4);
  char arg0[] = "llm-sandbox-init";
  char* argv[] = {arg0, nullptr};
  char env0[] = "PATH=/usr/local/bin:/usr/bin:/bin";
  char env1[] = "LLM_SANDBOX_BACKEND=native";
  char* envp[] = {env0, env1, nullptr};
  ::syscall(SYS_execveat, init_fd, "", argv, envp, AT_EMPTY_PATH);
  fail(5);
  ::_exit(127);
}

const char* StageName(int stage) {
  switch (stage) {
    case 1: return "unshare(CLONE_NEWCGROUP)";
    case 2: return "setsid";
    case 3: return "dup2 of the stream onto fds 0-2";
    case 4: return "close_range";
    case 5: return "execveat(llm-sandbox-init)";
    case 6: return "setresgid(0) in the user namespace";
    case 7: return "setgroups() in the user namespace";
    case 8: return "setresuid(0) in the user namespace";
    case 9: return "join the box's cgroup (write to its tasks file)";
  }
  return "setup";
}

}  // namespace

ChildProcess::~ChildProcess() {
  if (!status_) {
    Kill();
    Reap();
  }
}

void ChildProcess::Kill() {
  if (status_) return;
  if (::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0) != 0 && errno == ENOSYS)
    ::kill(pid_, SIGKILL);
}

int ChildProcess::Reap() {
  while (!status_) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, __WALL);
    if (r == pid_) status_ = st;
    else if (r < 0 && errno != EINTR) status_ = -1;  // not ours any more (ECHILD): nothing to reap
  }
  return *status_;
}

std::optional<int> ChildProcess::TryReap() {
  if (status_) return status_;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG | __WALL);
  if (r == pid_) status_ = st;
  else if (r < 0 && errno == ECHILD) status_ = -1;
  return status_;
}

Result<LaunchedInit> LaunchInit(const LaunchOptions& opts) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Error::FromErrno("socketpair for the init stream");
  UniqueFd host_end(sv[0]);
  LSB_ASSIGN_OR_RETURN(UniqueFd child_end, AboveStdio(UniqueFd(sv[1])));
  LSB_ASSIGN_OR_RETURN(Pipe sync, MakePipe(0));
  LSB_ASSIGN_OR_RETURN(Pipe status, MakePipe(0));
  LSB_ASSIGN_OR_RETURN(Pipe diag, MakePipe(O_NONBLOCK));  // init's stderr never blocks it
  LSB_ASSIGN_OR_RETURN(diag.w, AboveStdio(std::move(diag.w)));
  LSB_ASSIGN_OR_RETURN(sync.r, AboveStdio(std::move(sync.r)));
  LSB_ASSIGN_OR_RETURN(status.w, AboveStdio(std::move(status.w)));
  LSB_ASSIGN_OR_RETURN(UniqueFd init_fd, AboveStdio(UniqueFd(::fcntl(opts.init_fd, F_DUPFD_CLOEXEC, 3))));
  if (!init_fd) return Error::FromErrno("dup init fd");

  uint64_t flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                   CLONE_PIDFD;
  if (opts.new_net) flags |= CLONE_NEWNET;
  int pidfd = -1;
  struct clone_args args {};
  args.flags = flags;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) {
    int err = errno;
    std::string hint;
    if (err == EPERM || err == ENOSPC || err == EINVAL)
      hint = "; user namespaces may be disabled (sysctl user.max_user_namespaces, "
             "kernel.unprivileged_userns_clone) or this process is in a restricted container";
    return Error{Error::FromErrno("clone3 into new namespaces", err).message + hint, err};
  }
  if (pid == 0)
    ChildMain(sync.r.get(), sync.w.get(), status.w.get(), child_end.get(), diag.w.get(), init_fd.get(),
              !opts.idmap.deny_setgroups, opts.self_attach_fds.data(), opts.self_attach_fds.size());

  auto process = std::make_unique<ChildProcess>(static_cast<pid_t>(pid), UniqueFd(pidfd));
  // The parent keeps only its own ends; on any error below, `process` kills and reaps the child.
  sync.r.reset();
  status.w.reset();
  child_end.reset();
  diag.w.reset();

  LSB_TRY(WriteIdMaps(process->pid(), opts.idmap));
  if (opts.before_release) LSB_TRY(opts.before_release(process->pid()));
  char go = 1;
  if (::write(sync.w.get(), &go, 1) != 1) return Error::FromErrno("release the box's init");
  sync.w.reset();

  int msg[2] = {0, 0};
  ssize_t n;
  do n = ::read(status.r.get(), msg, sizeof msg); while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof msg)) {
    std::string what = std::string("start llm-sandbox-init: ") + StageName(msg[0]) + ": " +
                       std::strerror(msg[1]);
    if (msg[0] == 5 && msg[1] == EACCES)
      what += "; the binary must be executable by the box's unprivileged host id (chmod 755)";
    return Error{what, msg[1]};
  }
  return LaunchedInit{std::move(process), std::move(host_end), std::move(diag.r)};
}

}  // namespace lsb::native
