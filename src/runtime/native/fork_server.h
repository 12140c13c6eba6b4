// The fork server (docs/architecture.md, "Fork server"; issue 22): a box's python started once
// per box shape instead of once per run. Its zygote box is a native box of the policy whose one
// program is that interpreter (fork_server_source.cc), warm and never given a request's code.
// For each new box the daemon hands it the box's stream, diagnostics pipe and cgroup files; a
// fork of it joins the cgroups and makes fresh user, mount, pid, net, ipc, uts and cgroup
// namespaces nested in the zygote's (liblsb-fork.so), forks pid 1, which forks the program's
// copy (pid 2) and then executes init; init sets the box up as its own (mounts.h DeriveRoot) and
// hands the waiting copy the run and the same confinement a spawned program takes (adopt.h).
// What the run would have paid to start python is gone; everything else is a box's.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "protocol/messages.h"
#include "runtime/native/box_user_limits.h"
#include "runtime/native/launcher.h"

namespace lsb::native {

class NativeBox;

// The zygote's python source (fork_server_source.cc).
const char* ForkServerSource();

// liblsb-fork.so beside init (`init_path`), opened for the zygote.
Result<UniqueFd> OpenForkLibrary(const std::string& init_path);

// The zygote box's own share of the per-user limits: a box's share for each of `boxes` boxes it
// may hold at once (what it makes is charged to it as well), and room for their namespaces.
BoxUserLimits ZygoteUserLimits(uint32_t boxes);

// The host-level check of those counts is against the limits of the daemon that made the
// zygote's namespace: none either, which needs CAP_SYS_RESOURCE; without it, as high as the
// daemon's hard limits (false): then a box's kill()-queued signals (which pass any limit) or its
// share of message queue bytes and locked memory count against what the others of the same
// server may still use (docs/security.md). A box made by the launcher keeps its own share.
bool LiftHostRlimits();

// A box's limits as the lines lsb_fork_enter applies.
std::string UserLimitsText(const BoxUserLimits& l);

class ForkServer {
 public:
  // Launches the zygote box (`setup` with fork "zygote" and fork_fds set, `run` its program) with
  // the fds it keeps and its limits; the server owns the box.
  using LaunchZygote = std::function<Result<std::unique_ptr<NativeBox>>(
      const protocol::BoxSetup& setup, const protocol::RunSpec& run, const std::vector<int>& keep_fds)>;

  // `python` is the interpreter's argv[0] as a run names it; `setup`, `run` the box's and a
  // run's (its env and workdir become the interpreter's). Waits until the interpreter is ready.
  static Result<std::unique_ptr<ForkServer>> Start(const protocol::BoxSetup& setup, protocol::RunSpec run,
                                                   const std::string& init_path, int init_fd,
                                                   const std::vector<std::string>& sources,
                                                   const LaunchZygote& launch);
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // A new box: its init runs in fresh namespaces, in the groups of `join` (v1 tasks, v2
  // cgroup.procs: it writes "0"), with `limits`; `first_frames` (its kSetup, fork "derived") are
  // written to its stream. Thread-safe.
  Result<LaunchedInit> Fork(const std::string& first_frames, const std::vector<UniqueFd>& join,
                            const BoxUserLimits& limits, bool loopback_up);

  bool alive() const { return !dead_; }
  // The zygote's last words (its output, its init's errors), for an error message.
  std::string Words() const;

 private:
  ForkServer() = default;
  void ReadZygote();  // the reader thread: drains the zygote box's stream

  std::unique_ptr<NativeBox> zygote_;
  UniqueFd ctl_;  // SOCK_SEQPACKET to the interpreter
  std::mutex mu_;  // one request at a time on ctl_
  std::thread reader_;
  std::atomic<bool> dead_{false};
  mutable std::mutex words_mu_;
  std::string words_;
};

}  // namespace lsb::native
