// The watch: init's side of the seccomp user-notification listener (DESIGN §3).
//
// It WATCHES execve/execveat/connect/sendto/sendmsg/sendmmsg/bind and never approves anything the
// kernel layers would refuse: "continue" hands the call back to the kernel, where Landlock,
// mounts and namespaces decide. It refuses by itself only what must not even be attempted:
//  - exec of an existing file that is not an allowed command -> EACCES, alert "denied_exec";
//  - with the network off, connect/sendto/sendmsg to an inet address -> ENETUNREACH, alert
//    "network_attempt" naming the address.
// Arguments are read from /proc/<pid>/mem, so a racing thread can change them after the read: that
// only affects the report, never safety, because the continued call is still checked by the kernel.
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
};

// Decision for a network call, pure so it can be tested: returns 0 to continue, or the errno
// init answers with.
int DecideNetwork(const std::string& call, bool inet, bool network_enabled);

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
