// The seccomp programs a run loads (the filters themselves: seccomp_compile.h).
#pragma once

#include <linux/filter.h>

#include <vector>

#include "base/result.h"
#include "init/seccomp_compile.h"

namespace lsb::init {

// The programs for `handoff_fd` and `opts`: the build-time copy when one was made for them (no
// libseccomp work at a box's start, ~0.5 ms), else compiled now.
Result<SeccompPrograms> BuildSeccompPrograms(int handoff_fd, SeccompOptions opts = {});

// The name of `nr` when it is one of the escape syscalls sent to init, else nullptr.
const char* WatchedEscapeName(int nr);

// Child side, async-signal-safe. Returns the listener fd for the watch program (flags:
// SECCOMP_FILTER_FLAG_NEW_LISTENER) or -1 with errno.
int LoadSeccompProgram(const std::vector<sock_filter>& prog, bool new_listener);

}  // namespace lsb::init
