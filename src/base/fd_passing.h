// Descriptors over a unix socket (SCM_RIGHTS): the launcher hands a box's cgroup files to init's
// process, a run's child hands its seccomp listener to init. No allocation and only system calls,
// so both are safe between fork and exec.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace lsb {

inline constexpr size_t kMaxPassedFds = 8;

// Sends `len` bytes (at least one) with `nfds` (<= kMaxPassedFds) descriptors attached, retrying
// on EINTR, never raising SIGPIPE. Returns the bytes sent, or -1 with errno.
ssize_t SendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds);

// Receives up to `len` bytes, retrying on EINTR. The descriptors that came with them (opened
// close-on-exec) are stored in `fds` (room for kMaxPassedFds) and counted in `*nfds`. Returns the
// bytes received (0 at EOF), or -1 with errno; EMSGSIZE when more descriptors came than fit
// (the kernel closed the rest).
ssize_t RecvWithFds(int sock, void* buf, size_t len, int* fds, size_t* nfds);

}  // namespace lsb
