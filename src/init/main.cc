// llm-sandbox-init: PID 1 of every box (DESIGN §2, §3; the protocol is docs/protocol.md).
//
// The setup is an ordered checklist; each step fails closed with a kError that names the control
// it could not enforce. Frames go to fd 1 only; diagnostics go to fd 2.
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "base/capabilities.h"
#include "base/unique_fd.h"
#include "init/command_path.h"
#include "init/diag.h"
#include "init/exec_policy.h"
#include "init/landlock.h"
#include "init/mounts.h"
#include "init/notify_watch.h"
#include "init/seccomp_filter.h"
#include "init/seccomp_prebuilt.h"
#include "init/spawn.h"
#include "init/stream.h"
#include "init/supervisor.h"

namespace lsb::init {
namespace {

using protocol::BoxMode;
using protocol::BoxSetup;
using protocol::ErrorStage;
using protocol::FrameType;

// The policies' default resources.open_files: the hand-off fd of the programs prepared at setup
// (built with the binary: seccomp_prebuilt.h).
constexpr uint64_t kDefaultHandoffFd = 256;
static_assert(kDefaultHandoffFd == kPrebuiltHandoffFd, "the build-time seccomp programs are for the default nofile");

struct Setup {
  BoxSetup box;
  ExecPolicy exec;
  UniqueFd ruleset;
  int landlock_abi = 0;
  // The programs for the default hand-off fd, compiled at setup: the first run reuses them.
  std::unique_ptr<SeccompPrograms> programs;
  // Only with BoxSetup.gvisor_accept_weaker: what the kernel could not give, said in kReady.
  bool watch = true;
  bool escape = true;
  std::vector<std::string> controls_off;
};

// Whether the escape filter loads here (gVisor implements seccomp-bpf, but say so if it does not):
// a throwaway child tries it, so init itself stays unfiltered.
bool EscapeFilterLoads(bool watched) {
  auto progs = BuildSeccompPrograms(256, SeccompOptions{false, watched});
  if (!progs.ok()) return false;
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(1);
    ::_exit(LoadSeccompProgram(progs->escape, false) < 0 ? 1 : 0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Status Prepare(Setup& s) {
  const BoxSetup& box = s.box;
  // 1. The contract: protocol version, an unprivileged program, PID 1 of a pid namespace (the
  //    wall timeout and the end of each run kill "every process but init").
  if (box.protocol != protocol::kProtocolVersion)
    return Error{"protocol version " + std::to_string(box.protocol) + " is not supported (init speaks " +
                 std::to_string(protocol::kProtocolVersion) + ")"};
  if (box.uid == 0 || box.gid == 0) return Error{"the program must not run as uid/gid 0"};
  if (::getpid() != 1)
    return Error{"init must be PID 1 of the box's pid namespace (timeouts kill the whole namespace)"};
  // 2. Kernel features, before touching anything: fail closed if a control is unenforceable.
  //    The one exception: a policy that accepted gVisor's weaker mode runs without what the
  //    kernel lacks, and kReady names each control that is off.
  const bool weaker = box.gvisor_accept_weaker;
  if (weaker && box.mode != BoxMode::kInPlace) return Error{"gvisor_accept_weaker is only for the in_place mode (Docker with runsc)"};
  s.landlock_abi = LandlockAbi();
  if (s.landlock_abi < 1 && !weaker)
    return Error{"commands: Landlock is unavailable (kernel without CONFIG_SECURITY_LANDLOCK or lsm= without landlock); cannot restrict executables"};
  if (s.landlock_abi < 1)
    s.controls_off.push_back("commands (Landlock): unavailable in this kernel; commands.allow/deny are not enforced");
  auto probe = NotifyWatch::Probe();
  if (!probe.ok() && !weaker) return probe.error();
  if (!probe.ok()) {
    s.watch = false;
    s.controls_off.push_back("alerts (seccomp user notification): " + probe.error().message +
                             "; exec and network attempts are not reported");
  }
  if (weaker && !EscapeFilterLoads(s.watch)) {
    s.escape = false;
    s.controls_off.push_back("seccomp escape filter: does not load in this kernel");
  }
  // 3. The filesystem view.
  if (box.mode == BoxMode::kBuildRoot && (::geteuid() != 0 || !HasEffectiveCapability(CAP_SYS_ADMIN)))
    return Error{"filesystem (build_root): init has no capabilities in its user namespace (euid " +
                 std::to_string(::geteuid()) + "); the launcher must map uid/gid 0 and call "
                 "setresgid(0,0,0), setgroups(0), setresuid(0,0,0) inside the new user namespace "
                 "before exec'ing init, or execve drops every capability", EPERM};
  if (box.mode == BoxMode::kBuildRoot && box.fork == "derived") {
    auto st = DeriveRoot(box);
    if (!st.ok()) return st.error().Wrap("filesystem (fork server's box)");
  } else if (box.mode == BoxMode::kBuildRoot) {
    auto st = BuildRoot(box);
    if (!st.ok()) return st.error().Wrap("filesystem (build_root)");
  } else {
    auto st = CheckInPlace(box);
    if (!st.ok()) return st.error().Wrap("filesystem (in_place)");
  }
  // 4. Which files may be executed, resolved in the finished view; the Landlock ruleset.
  auto exec = ExecPolicy::Resolve(box.allow, box.deny, [](const std::string& w) { Diag(w); },
                                  box.rootfs == "image" ? ImagePath(box.image_env) : std::string());
  if (!exec.ok()) return exec.error();
  s.exec = std::move(*exec);
  if (s.landlock_abi >= 1) {
    auto rs = CreateRuleset(s.landlock_abi, PlanRules(box, s.exec), box.network_enabled,
                            box.egress_proxy.empty() ? 0 : protocol::kEgressProxyPort);
    if (!rs.ok()) return rs.error();
    s.ruleset = std::move(*rs);
  }
  // 5. The seccomp programs for runs with the default nofile (each run's child loads them).
  auto progs = BuildSeccompPrograms(kDefaultHandoffFd, SeccompOptions{box.trace, s.watch});
  if (!progs.ok()) return progs.error().Wrap("seccomp");
  s.programs = std::make_unique<SeccompPrograms>(std::move(*progs));
  return OkStatus();
}

int Main() {
  // fd 2 must exist (diagnostics); fds 0 and 1 are the stream.
  if (::fcntl(2, F_GETFD) < 0) ::open("/dev/null", O_WRONLY);
  // Non-dumpable: /proc/1/mem, /proc/1/environ, pidfd_getfd and ptrace of init need
  // CAP_SYS_PTRACE even for a program with init's uid (Docker runs both as the policy's uid, and
  // under gVisor no Landlock scoping stands in the way). Each run's child turns it back on.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    Diag("PR_SET_DUMPABLE failed");
    return 70;
  }
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  UniqueFd sigfd(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd) {
    Diag("signalfd failed");
    return 70;
  }
  Stream stream(0, 1);

  auto first = stream.Read();
  if (!first.ok()) {
    Diag("no setup frame: " + first.error().message);
    return first.error().IsEof() ? 0 : 65;
  }
  if (first->type != FrameType::kSetup) {
    (void)stream.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kProtocol, "the first frame must be kSetup", 0});
    (void)stream.Drain(1000);
    return 65;
  }
  Setup s;
  try {
    s.box = protocol::ParseMessage<BoxSetup>(first->payload);
  } catch (const std::exception& e) {
    (void)stream.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kProtocol, std::string("bad BoxSetup: ") + e.what(), 0});
    (void)stream.Drain(1000);
    return 65;
  }
  auto st = Prepare(s);
  if (!st.ok()) {
    Diag("setup failed: " + st.error().message);
    (void)stream.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kSetup, st.error().message, st.error().sys_errno});
    (void)stream.Drain(1000);
    return 1;
  }
  for (const auto& off : s.controls_off) Diag("weaker mode accepted by the policy: " + off);
  if (!stream.SendJson(FrameType::kReady, protocol::InitReady{protocol::kProtocolVersion, s.landlock_abi,
                                                                s.box.mode, s.controls_off}).ok())
    return 0;

  Supervisor sup(stream, sigfd.get(), s.box, s.exec, s.ruleset.get());
  if (s.box.fork == "derived") {
    // fd 3: the waiting copy of the zygote's python, pid 2, which must be our own child.
    siginfo_t info{};
    if (::fcntl(3, F_GETFD) >= 0 && ::waitid(P_PID, 2, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0)
      sup.SetAdoptee(Adoptee{UniqueFd(3), 2});
    else
      Diag("fork server: no waiting program on fd 3; runs are spawned");
  }
  sup.SetControls(s.watch, s.escape);
  sup.AddPrograms(kDefaultHandoffFd, std::move(s.programs));
  auto served = sup.Serve();
  // The last frames (a run's kExit under kShutdown) get a moment to reach the host, no more.
  (void)stream.Drain(1000);
  // Leaving PID 1 kills whatever is left in the namespace; do it explicitly anyway.
  ::kill(-1, SIGKILL);
  if (!served.ok()) {
    Diag(served.error().message);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace lsb::init

int main() { return lsb::init::Main(); }
