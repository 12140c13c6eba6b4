// Starting one program: fork, then in the child the ordered confinement before execve
// (new session, stdio, cwd, oom_score_adj, rlimits, uid/gid, no_new_privs, Landlock, seccomp,
// listener hand-off, every other fd closed). The parent receives the seccomp listener.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/seccomp_filter.h"

namespace lsb::init {

struct SpawnParams {
  std::string path;                // what execve gets (already resolved through PATH)
  std::vector<std::string> argv;
  std::vector<std::string> env;    // "K=V"
  std::string workdir;
  uint64_t nofile = 256;           // RLIMIT_NOFILE; the hand-off fd is numbered exactly this
  uint64_t file_size = 64ull << 20;
  uint32_t uid = 1000;
  uint32_t gid = 1000;
  bool stdin_pipe = false;         // else /dev/null
  int ruleset_fd = -1;             // Landlock
  const SeccompPrograms* seccomp = nullptr;  // built for handoff fd == nofile
  // Only in a weaker mode the policy accepted (BoxSetup.gvisor_accept_weaker): no user-notification
  // watch (then no listener is handed over), no escape filter.
  bool watch = true;
  bool escape = true;
  // SpawnZygote only: init's fds the interpreter gets as 3, 4, 5 (BoxSetup.fork_fds), and its
  // seccomp filter (CompileZygoteFilter).
  std::vector<int> zygote_fds;
  const std::vector<sock_filter>* zygote_filter = nullptr;
};

struct Spawned {
  pid_t pid = -1;
  UniqueFd listener;   // seccomp user-notification fd (invalid only when SpawnParams.watch is false)
  UniqueFd control;    // SOCK_SEQPACKET: "X<errno>" if execve failed; EOF once it succeeded
  UniqueFd stdin_w;    // invalid unless stdin_pipe
  UniqueFd stdout_r;
  UniqueFd stderr_r;
};

// A program's stdio pipes (stdin's only when the run has one). The program gets out.second,
// err.second and in.first; HostSide closes those here and keeps the other ends in a Spawned.
struct StdioPipes {
  std::pair<UniqueFd, UniqueFd> out, err, in;
  Spawned HostSide(pid_t pid);
};
Result<StdioPipes> MakeStdioPipes(bool stdin_pipe);

// Once a child (`s.pid`, answering on `s.control`) was given its confinement: the seccomp listener
// it hands back, or (none expected without `watch`) nothing; else why `who` could not confine
// itself, with the child killed and reaped.
Status TakeListener(Spawned& s, bool watch, const std::string& who, const std::string& workdir);

// On an error in the child before execve, the child is reaped and the error (with the child's
// words and errno) is returned: the run could not be confined, so it does not happen.
Result<Spawned> Spawn(const SpawnParams& p);

// A fork server's zygote interpreter (BoxSetup.fork "zygote"; spawn.cc says what it keeps and
// what it does without). The run's control socket reports a failed execve as Spawn's does.
Result<Spawned> SpawnZygote(const SpawnParams& p);

// After Spawn, once `control` is readable: 0 when execve succeeded (EOF), else execve's errno.
int ReadExecOutcome(int control_fd);

// The highest fd number that lets the hand-off trick work for `nofile` (init's own hard limit).
Result<uint64_t> CheckNofile(uint64_t nofile);

}  // namespace lsb::init
