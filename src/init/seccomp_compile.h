// The two seccomp filters every program runs under (DESIGN §3, "seccomp"), compiled by libseccomp.
//
// 1. The escape filter: the kernel refuses the escape surface with EPERM (mount, namespaces,
//    ptrace, bpf, keyctl, io_uring, module loading, memfd exec, TIOCSTI...; clone3 gets ENOSYS so
//    libc falls back to clone, whose flags a filter can see).
// 2. The watch filter: execve, execveat, connect, sendto, sendmsg, sendmmsg and bind are sent to
//    init (SECCOMP_RET_USER_NOTIF, one listener). ERRNO outranks USER_NOTIF, so a call the escape
//    filter refuses is never even shown to init.
//
// Both are compiled by libseccomp and exported as BPF. The default configurations are compiled at
// build time (seccomp_prebuilt.h); a box compiles only the others.
//
// Alerts on escape syscalls: a few key ones (WatchedEscapeSyscalls: mount, unshare, setns, ptrace,
// chroot, bpf, module loading, ...) would be refused silently by an ERRNO rule. When the watch is
// loaded they go to init instead (USER_NOTIF), which always answers EPERM and raises
// "escape_syscall" naming the call; the escape filter keeps them as SECCOMP_RET_TRACE, which ranks
// below USER_NOTIF, so without a listener (init gone) or without the watch the kernel still
// refuses them (ENOSYS: no tracer can exist, ptrace is refused). No path lets such a call run.
// In trace mode the watch also gets open/openat/openat2, always continued (Landlock decides).
#pragma once

#include <linux/filter.h>

#include <vector>

#include "base/result.h"

namespace lsb::init {

struct SeccompPrograms {
  std::vector<sock_filter> escape;
  std::vector<sock_filter> watch;
};

// `handoff_fd` is the one descriptor the child may sendmsg() on without being watched (it carries
// the listener to init). It is numbered at RLIMIT_NOFILE, so the program can never own that number.
struct SeccompOptions {
  bool trace_opens = false;  // monitoring.trace: report every file open
  bool watched = true;       // the watch filter is loaded (false only in gVisor's weaker mode)
};

// libseccomp's programs for `handoff_fd` and `opts` (the build-time generator uses this too).
Result<SeccompPrograms> CompileSeccompPrograms(int handoff_fd, SeccompOptions opts = {});

// A fork server's zygote (BoxSetup.fork "zygote"; spawn.h SpawnZygote): the escape surface every
// program is refused, but for what making a box takes (unshare, mount and its family). Inherited
// by the boxes it makes, under their own filters.
Result<std::vector<sock_filter>> CompileZygoteFilter();

}  // namespace lsb::init
