#include "runtime/native/launcher.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/enum_words.h"
#include "base/fd_passing.h"
#include "base/reset_signals.h"
#include "base/loopback_up.h"
#include "protocol/messages.h"

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

// Where the child between clone3 and execveat failed: it writes {stage, errno} to the status pipe
// (two ints, raw: async-signal-safe) and the parent names the stage (kLaunchStages).
enum class LaunchStage : int {
  kCgroupNamespace = 1,  // from 1: a zeroed message names no stage
  kSetsid,
  kStdio,
  kCloseRange,
  kExecInit,
  kSetresgid,
  kSetgroups,
  kSetresuid,
  kJoinCgroup,
  kNamespaces,
  kUserLimits,
  kLoopback,
  kEgressListener,
};

constexpr EnumWord<LaunchStage> kLaunchStages[] = {
    {LaunchStage::kCgroupNamespace, "unshare(CLONE_NEWCGROUP)"},
    {LaunchStage::kSetsid, "setsid"},
    {LaunchStage::kStdio, "dup2 of the stream onto fds 0-2"},
    {LaunchStage::kCloseRange, "close_range"},
    {LaunchStage::kExecInit, "execveat(llm-sandbox-init)"},
    {LaunchStage::kSetresgid, "setresgid(0) in the user namespace"},
    {LaunchStage::kSetgroups, "setgroups() in the user namespace"},
    {LaunchStage::kSetresuid, "setresuid(0) in the user namespace"},
    {LaunchStage::kJoinCgroup, "join the box's cgroup (write to its tasks file)"},
    {LaunchStage::kNamespaces, "unshare(mount, ipc, uts, net namespaces)"},
    {LaunchStage::kUserLimits, "set the box's per-user limits (/proc/sys/user/max_*, rlimits) in its user namespace"},
    {LaunchStage::kLoopback, "bring the loopback device up in the box's network namespace"},
    {LaunchStage::kEgressListener, "make the egress proxy's listening socket in the box's network namespace"},
};

// What the child needs, all of it prepared before clone3 (the child only reads its copy).
struct ChildPlan {
  int sync, sync_parent_end, status_w, stream, diag_w, init_fd;
  bool may_setgroups;
  int unshare_flags;
  bool loopback_up;
  bool egress_listener;
  const BoxUserLimits* limits;
  const int* keep_fds;
  size_t n_keep;
};

// The egress proxy's listening socket (docs/network.md), made here in the box's new network
// namespace and handed to the parent, which serves it from outside: 127.0.0.1:kEgressProxyPort is
// then the one thing in the box that leads anywhere. Raw calls only (child context).
bool SendEgressListener(int sync) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  struct sockaddr_in a {};
  a.sin_family = AF_INET;
  a.sin_port = htons(protocol::kEgressProxyPort);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(s, 128) == 0;
  char tag = 'L';
  if (ok) ok = SendWithFds(sync, &tag, 1, &s, 1) == 1;
  ::close(s);
  return ok;
}

// The box's own share of the per-user kernel limits (box_user_limits.h): written in its user
// namespace, where this child is uid 0 with CAP_SYS_RESOURCE; the program will have neither.
bool ApplyUserLimits(const BoxUserLimits& l) {
  for (const auto& w : l.sysctls) {
    int fd = ::open(w.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, w.value.data(), w.value.size()) == static_cast<ssize_t>(w.value.size());
    ::close(fd);
    if (!ok) return false;
  }
  for (const auto& r : l.rlimits) {
    struct rlimit v {r.value, r.value};
    if (::syscall(SYS_prlimit64, 0, r.resource, &v, nullptr) != 0) return false;
  }
  return true;
}

// The child between clone3 and execveat: async-signal-safe calls only (the parent may have
// threads whose locks were copied mid-use).
[[noreturn]] void ChildMain(const ChildPlan& p) {
  const int sync = p.sync, status_w = p.status_w, stream = p.stream, diag_w = p.diag_w, init_fd = p.init_fd;
  ::close(p.sync_parent_end);  // so a dead parent means EOF below, not a hang
  auto fail = [status_w](LaunchStage stage) {
    int msg[2] = {static_cast<int>(stage), errno};
    (void)!::write(status_w, msg, sizeof msg);
    ::_exit(127);
  };
  // Our new user namespace's full capabilities cover these; the parent works meanwhile.
  if (::unshare(p.unshare_flags) != 0) fail(LaunchStage::kNamespaces);
  if (p.loopback_up && (p.unshare_flags & CLONE_NEWNET) && !BringLoopbackUp()) fail(LaunchStage::kLoopback);
  if (p.egress_listener && !SendEgressListener(sync)) fail(LaunchStage::kEgressListener);
  char go = 0;
  int attach[kMaxPassedFds];
  size_t n_attach = 0;
  ssize_t n = RecvWithFds(sync, &go, 1, attach, &n_attach);
  if (n < 0) fail(LaunchStage::kJoinCgroup);
  if (n != 1) ::_exit(111);  // the parent gave up on us
  // Join the box's v1 cgroups: "0" moves the calling thread, our only one (see launcher.h).
  for (size_t i = 0; i < n_attach; ++i)
    if (::write(attach[i], "0", 1) != 1) fail(LaunchStage::kJoinCgroup);
  // Become uid/gid 0 of the new user namespace: our credentials still carry the parent's host
  // ids, which the map does not cover, and execve would drop every capability. Raw syscalls:
  // glibc's wrappers would try to sync threads this copy of the process does not have.
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0) fail(LaunchStage::kSetresgid);
  if (p.may_setgroups && ::syscall(SYS_setgroups, 0, nullptr) != 0) fail(LaunchStage::kSetgroups);
  if (::syscall(SYS_setresuid, 0, 0, 0) != 0) fail(LaunchStage::kSetresuid);
  // Our cgroup namespace is rooted at the box's group: cgroups are set up by now.
  if (::unshare(CLONE_NEWCGROUP) != 0) fail(LaunchStage::kCgroupNamespace);
  // Last of the namespaces this box makes: from here on it has max_*_namespaces 0.
  if (p.limits && !ApplyUserLimits(*p.limits)) fail(LaunchStage::kUserLimits);
  if (::setsid() < 0) fail(LaunchStage::kSetsid);  // no controlling terminal of the host's session
  ResetSignals();
  if (::dup2(stream, 0) < 0 || ::dup2(stream, 1) < 0 || ::dup2(diag_w, 2) < 0) fail(LaunchStage::kStdio);
  // Everything else (the host's fds included) is gone at exec; status_w and init_fd stay usable
  // until then.
  if (::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) != 0) fail(LaunchStage::kCloseRange);
  for (size_t i = 0; i < p.n_keep; ++i)
    if (::fcntl(p.keep_fds[i], F_SETFD, 0) != 0) fail(LaunchStage::kCloseRange);
  char arg0[] = "llm-sandbox-init";
  char* argv[] = {arg0, nullptr};
  char env0[] = "PATH=/usr/local/bin:/usr/bin:/bin";
  char env1[] = "LLM_SANDBOX_BACKEND=native";
  char* envp[] = {env0, env1, nullptr};
  ::syscall(SYS_execveat, init_fd, "", argv, envp, AT_EMPTY_PATH);
  fail(LaunchStage::kExecInit);
  ::_exit(127);
}

// Sends the child its go byte and the v1 tasks files it joins.
Status ReleaseChild(int sync, const std::vector<UniqueFd>& attach) {
  if (attach.size() > kMaxPassedFds) return Error{"too many cgroup files for the box's init to join"};
  int fds[kMaxPassedFds];
  for (size_t i = 0; i < attach.size(); ++i) fds[i] = attach[i].get();
  char go = 1;
  if (SendWithFds(sync, &go, 1, fds, attach.size()) != 1) return Error::FromErrno("release the box's init");
  return OkStatus();
}

// The stage a child reported, in words; a number no stage has (a broken child) is "setup".
const char* StageName(int stage) {
  return WordOf<LaunchStage>(kLaunchStages, static_cast<LaunchStage>(stage), "setup");
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
  if (!ours_ && !status_) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    status_ = 0;
  }
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
  if (!ours_) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) status_ = 0;
    return status_;
  }
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG | __WALL);
  if (r == pid_) status_ = st;
  else if (r < 0 && errno == ECHILD) status_ = -1;
  return status_;
}

namespace {

// The child's report, once its end of the status pipe closed: nullopt when it executed init.
std::optional<Error> ChildFailure(int status_r) {
  int msg[2] = {0, 0};
  ssize_t n;
  do n = ::read(status_r, msg, sizeof msg); while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof msg)) return std::nullopt;
  std::string what = std::string("start llm-sandbox-init: ") + StageName(msg[0]) + ": " + std::strerror(msg[1]);
  const auto stage = static_cast<LaunchStage>(msg[0]);
  if (stage == LaunchStage::kExecInit && msg[1] == EACCES)
    what += "; the binary must be executable by the box's unprivileged host id (chmod 755)";
  if (stage == LaunchStage::kNamespaces && (msg[1] == ENOSPC || msg[1] == EPERM))
    what += "; namespaces may be limited (sysctl user.max_*_namespaces) or this process is in a "
            "restricted container";
  return Error{what, msg[1]};
}

// The listening socket the child made in the box's network namespace (SendEgressListener), or the
// child's own report of why it could not.
Result<UniqueFd> ReceiveEgressListener(int sync, int status_r) {
  char tag = 0;
  int fds[kMaxPassedFds];
  size_t n_fds = 0;
  ssize_t n = RecvWithFds(sync, &tag, 1, fds, &n_fds);
  for (size_t i = 1; i < n_fds; ++i) ::close(fds[i]);
  if (n == 1 && tag == 'L' && n_fds >= 1) return UniqueFd(fds[0]);
  if (n_fds >= 1) ::close(fds[0]);
  if (auto failure = ChildFailure(status_r)) return *failure;
  return Error{"the box's init process did not hand over the egress proxy's listening socket"};
}

}  // namespace

Result<LaunchedInit> LaunchInit(const LaunchOptions& opts) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Error::FromErrno("socketpair for the init stream");
  UniqueFd host_end(sv[0]);
  LSB_ASSIGN_OR_RETURN(UniqueFd child_end, AboveStdio(UniqueFd(sv[1])));
  int ss[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ss) != 0)
    return Error::FromErrno("socketpair to release the box's init");
  UniqueFd sync_parent(ss[0]);
  LSB_ASSIGN_OR_RETURN(UniqueFd sync_child, AboveStdio(UniqueFd(ss[1])));
  LSB_ASSIGN_OR_RETURN(Pipe status, MakePipe(0));
  LSB_ASSIGN_OR_RETURN(Pipe diag, MakePipe(O_NONBLOCK));  // init's stderr never blocks it
  LSB_ASSIGN_OR_RETURN(diag.w, AboveStdio(std::move(diag.w)));
  LSB_ASSIGN_OR_RETURN(status.w, AboveStdio(std::move(status.w)));
  LSB_ASSIGN_OR_RETURN(UniqueFd init_fd, AboveStdio(UniqueFd(::fcntl(opts.init_fd, F_DUPFD_CLOEXEC, 3))));
  if (!init_fd) return Error::FromErrno("dup init fd");

  int unshare_flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
  if (opts.new_net) unshare_flags |= CLONE_NEWNET;
  int pidfd = -1;
  struct clone_args args {};
  args.flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  ChildPlan plan{sync_child.get(), sync_parent.get(), status.w.get(), child_end.get(), diag.w.get(),
                 init_fd.get(),    !opts.idmap.deny_setgroups, unshare_flags, opts.loopback_up || opts.egress_listener,
                 opts.egress_listener && opts.new_net, &opts.user_limits, opts.keep_fds.data(),
                 opts.keep_fds.size()};
  for (int fd : opts.keep_fds)
    if (fd <= 2) return Error{"an fd handed to the box's init is below 3: " + std::to_string(fd)};
  // The new user namespace is owned by the creating thread's euid, and that uid is what the host
  // charges for everything the box counts against per-user limits (box_user_limits.h). Only this
  // thread's euid changes (a raw setresuid; glibc's would change every thread's), for the one
  // clone3; ruid and suid stay, so the switch back cannot fail, and the saved root keeps the
  // permitted capabilities that return with euid 0.
  const uid_t own_euid = ::geteuid();
  const bool switch_owner = opts.ns_owner != 0 && opts.ns_owner != own_euid;
  if (switch_owner && ::syscall(SYS_setresuid, -1, opts.ns_owner, -1) != 0)
    return Error::FromErrno("take the box's owner uid " + std::to_string(opts.ns_owner) + " for clone3");
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  int clone_err = errno;
  if (pid == 0) ChildMain(plan);
  if (switch_owner && ::syscall(SYS_setresuid, -1, own_euid, -1) != 0) std::abort();  // never run on as another uid
  if (pid < 0) {
    int err = clone_err;
    std::string hint;
    if (err == EPERM || err == ENOSPC || err == EINVAL)
      hint = "; user namespaces may be disabled (sysctl user.max_user_namespaces, "
             "kernel.unprivileged_userns_clone) or this process is in a restricted container";
    return Error{Error::FromErrno("clone3 into new namespaces", err).message + hint, err};
  }

  auto process = std::make_unique<ChildProcess>(static_cast<pid_t>(pid), UniqueFd(pidfd));
  // The parent keeps only its own ends; on any error below, `process` kills and reaps the child.
  sync_child.reset();
  status.w.reset();
  child_end.reset();
  diag.w.reset();

  // As much of the first frames as the socket holds now (all of any usual setup); nobody reads
  // yet, so this must not block. The rest follows once init runs and reads.
  std::string_view unsent = opts.first_frames;
  if (!unsent.empty()) {
    ssize_t n = ::send(host_end.get(), unsent.data(), unsent.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return Error::FromErrno("write init's setup into its stream");
    if (n > 0) unsent.remove_prefix(static_cast<size_t>(n));
  }
  LSB_TRY(WriteIdMaps(process->pid(), opts.idmap));
  std::vector<UniqueFd> attach;
  if (opts.prepare) {
    LSB_ASSIGN_OR_RETURN(attach, opts.prepare(process->pid()));
  }
  UniqueFd egress_listener;
  if (opts.egress_listener && opts.new_net) {
    LSB_ASSIGN_OR_RETURN(egress_listener, ReceiveEgressListener(sync_parent.get(), status.r.get()));
  }
  auto released = ReleaseChild(sync_parent.get(), attach);
  sync_parent.reset();
  attach.clear();
  if (!released.ok()) {
    // The child is gone already: its own report says why.
    if (auto failure = ChildFailure(status.r.get())) return *failure;
    return released.error();
  }
  while (!unsent.empty()) {
    ssize_t n = ::send(host_end.get(), unsent.data(), unsent.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      if (auto failure = ChildFailure(status.r.get())) return *failure;
      return Error::FromErrno("write init's setup into its stream", err);
    }
    unsent.remove_prefix(static_cast<size_t>(n));
  }
  if (auto failure = ChildFailure(status.r.get())) return *failure;
  return LaunchedInit{std::move(process), std::move(host_end), std::move(diag.r), std::move(egress_listener)};
}

}  // namespace lsb::native
