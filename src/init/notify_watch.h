// The watch: init's side of the seccomp user-notification listener (DESIGN §3).
//
// It WATCHES execve/execveat/connect/sendto/sendmsg/sendmmsg/bind and never approves anything the
// kernel layers would refuse: "continue" hands the call back to the kernel, where Landlock,
// mounts and namespaces decide. It refuses by itself what must not even be attempted:
//  - exec of a file that is not an allowed command -> EACCES, alert "denied_exec". The path is
//    resolved as the CALLING THREAD resolves it (its root, cwd, dirfd, /proc/self: caller_path.h)
//    and judged by file identity, so /proc/self/root/..., a relative name, a symlink or an fd path
//    all reach the same verdict; the ELF interpreter run directly is refused like any other
//    non-command. A path that cannot be read or resolved is answered here, never continued
//    (ENOENT as the kernel would, anything odd with an alert). execveat(AT_EMPTY_PATH) -> EPERM.
//  - with the network off, connect/sendto/sendmsg/sendmmsg to an inet address -> ENETUNREACH,
//    alert "network_attempt" for EACH distinct destination of the call (every message of a
//    sendmmsg); a destination that cannot be read -> EFAULT, alert (fail closed).
//  - the check after exec: a path in memory can be rewritten by another thread after init read it
//    and before the kernel does (TOCTOU), so a path judged "python3" may start ld.so. Every new
//    image sets its thread pointer (arch_prctl(ARCH_SET_FS), x86_64) from the interpreter's code
//    before any code of the program it loads runs; that call is watched, and a process whose
//    /proc/<pid>/exe is the ELF interpreter itself is answered EPERM and killed, with the alert.
// Arguments are read from /proc/<pid>/mem, so a racing thread can change them after the read:
// for the network that only affects the report (the kernel's empty netns and Landlock still
// refuse), for exec the check after exec closes it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/exec_policy.h"
#include "protocol/messages.h"

namespace lsb::init {

struct WatchConfig {
  const ExecPolicy* exec = nullptr;
  bool network_enabled = false;
  bool trace = false;
  // BoxSetup.egress_proxy: with the network on, the one inet destination the program may name.
  std::string egress_proxy;
};

// Decision for a network call, pure so it can be tested: returns 0 to continue, or the errno
// init answers with.
int DecideNetwork(const std::string& call, bool inet, bool network_enabled);
// The same for one destination (its text as DescribeSockaddr gives it) under `cfg`: with the egress
// proxy, an inet destination other than the proxy is refused although the network is on.
int DecideDestination(const std::string& call, bool inet, const std::string& destination, const WatchConfig& cfg);

class NotifyWatch {
 public:
  using EventSink = std::function<void(protocol::Event)>;

  // Checks that the kernel supports user notification and learns its structure sizes.
  static Status Probe();

  NotifyWatch(UniqueFd listener, WatchConfig cfg) : fd_(std::move(listener)), cfg_(cfg) {}
  int fd() const { return fd_.get(); }
  void Close() { fd_.reset(); }

  // Receives one notification, decides, replies. Errors of a vanished target are not errors.
  Status HandleOne(const EventSink& emit);

 private:
  UniqueFd fd_;
  WatchConfig cfg_;
};

}  // namespace lsb::init
