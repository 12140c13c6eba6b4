#include "init/seccomp_filter.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init/seccomp_prebuilt.h"
#include "protocol/escape_syscalls.h"

namespace lsb::init {

Result<SeccompPrograms> BuildSeccompPrograms(int handoff_fd, SeccompOptions opts) {
  for (size_t i = 0; i < kPrebuiltSeccompCount; ++i) {
    const PrebuiltSeccomp& p = kPrebuiltSeccomp[i];
    if (p.handoff_fd != handoff_fd || p.trace_opens != opts.trace_opens || p.watched != opts.watched) continue;
    return SeccompPrograms{{p.escape, p.escape + p.escape_len}, {p.watch, p.watch + p.watch_len}};
  }
  return CompileSeccompPrograms(handoff_fd, opts);
}

const char* WatchedEscapeName(int nr) {
  // Resolved once: init asks on every notification. Init's supervisor is single-threaded.
  static std::vector<int> numbers;
  const auto& names = protocol::kWatchedEscapeSyscalls;
  if (numbers.empty())
    for (const char* name : names) numbers.push_back(seccomp_syscall_resolve_name(name));
  for (size_t i = 0; i < numbers.size(); ++i)
    if (numbers[i] == nr) return names[i];
  return nullptr;
}

int LoadSeccompProgram(const std::vector<sock_filter>& prog, bool new_listener) {
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), const_cast<sock_filter*>(prog.data())};
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    new_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &fprog));
}

}  // namespace lsb::init
