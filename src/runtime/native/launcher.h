// Starting llm-sandbox-init in fresh namespaces. The order is a checklist:
//   1. clone3 into a new user and pid namespace, from this thread with its euid set for that one
//      call to the box's own owner uid (`ns_owner`, box_user_limits.h), so that the host charges
//      the box's per-user kernel counts to that uid, not to ours; the child at once unshares its
//      mount, ipc, uts (and net unless shared) namespaces, owned by its new user namespace exactly
//      as clone3's flags would make them, brings lo up there if asked, and then blocks on the sync
//      socket. Why not all in clone3's flags:
//      a network namespace costs ~0.45 ms of kernel work (the loopback device's registration),
//      and made in the child it overlaps with step 2 instead of delaying it;
//   2. meanwhile the parent writes the uid/gid maps and runs `prepare` (the box's cgroups, v2
//      membership, oom_score_adj), which returns the v1 `tasks` files the child must join;
//   3. the parent releases the child with those files (SCM_RIGHTS); the child joins its v1 groups
//      itself, moves into its own cgroup namespace (now that it sits in the box's groups), writes
//      the box's own /proc/sys/user/max_* and rlimits (`user_limits`), puts
//      the stream on fds 0 and 1 and the diagnostics pipe on fd 2, marks every other fd
//      close-on-exec and executes init by fd;
//   4. the parent learns from a CLOEXEC status pipe whether that exec happened.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/native/box_user_limits.h"
#include "runtime/native/idmap.h"

namespace lsb::native {

// Owns a child process: the destructor kills it (SIGKILL through its pidfd, which, for init,
// takes the whole pid namespace down) and reaps it.
class ChildProcess {
 public:
  // `ours` false: a process another one will reap (a fork server's box, fork_server.h): its end
  // is waited for through the pidfd, and its status is not known (Reap returns 0).
  ChildProcess(pid_t pid, UniqueFd pidfd, bool ours = true) : pid_(pid), pidfd_(std::move(pidfd)), ours_(ours) {}
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Kill();
  // Waits for the child to end; returns its wait status (cached after the first reap).
  int Reap();
  // Non-blocking: the wait status if it has ended.
  std::optional<int> TryReap();
  bool reaped() const { return status_.has_value(); }
  int pidfd() const { return pidfd_.get(); }
  // Gives up the child without reaping it: once this process exits, the child (already killed)
  // is re-parented and reaped by the nearest subreaper or PID 1. For NativeBox::DetachTeardown.
  void Release() { status_ = -1; pidfd_.reset(); }

 private:
  pid_t pid_;
  UniqueFd pidfd_;
  bool ours_ = true;
  std::optional<int> status_;
};

struct LaunchOptions {
  int init_fd = -1;           // O_PATH fd of llm-sandbox-init (init_binary.h)
  bool new_net = true;        // false: share the host's network namespace
  bool loopback_up = false;   // bring `lo` up in the new network namespace (the box's own)
  // Make the egress proxy's listening socket (127.0.0.1:protocol::kEgressProxyPort) in the new
  // network namespace (lo comes up with it) and return it in LaunchedInit; needs new_net.
  bool egress_listener = false;
  IdMapPlan idmap;
  // The host uid that owns the box's user namespace (box_user_limits.h); 0 or our own euid: ours.
  // Another uid needs CAP_SETUID (root).
  uid_t ns_owner = 0;
  // Written in the box's user namespace before init runs; empty: the kernel's defaults.
  BoxUserLimits user_limits;
  // Written into the stream before the child is released (kSetup): init reads it at once instead
  // of waiting for the host to learn that init started. What the socket buffer cannot hold
  // follows once init reads.
  std::string first_frames;
  // Fds init inherits at their numbers (the rest are closed at exec): detached mounts of
  // container.mounts (runtime/host_mount.h), named by number in the setup.
  std::vector<int> keep_fds;
  // Runs in the parent after the id maps are written, while the child makes its namespaces.
  // Returns the cgroup v1 `tasks` files opened by the parent (BoxCgroups::SelfAttachFiles): the
  // released child writes "0" to each before anything else, so it is in its groups before it
  // executes init; a failed write fails the launch.
  std::function<Result<std::vector<UniqueFd>>(pid_t)> prepare;
};

struct LaunchedInit {
  std::unique_ptr<ChildProcess> process;
  UniqueFd stream;       // host end of the socketpair (init's fds 0 and 1), CLOEXEC
  UniqueFd diagnostics;  // read end of init's fd 2, non-blocking, CLOEXEC
  UniqueFd egress_listener;  // LaunchOptions.egress_listener: the listening socket in the box's netns
};

Result<LaunchedInit> LaunchInit(const LaunchOptions& opts);

}  // namespace lsb::native
