// Resolving a path as a thread of the box would, from init (docs/security.md, class 3).
//
// The exec watch must judge the file the KERNEL will open for the calling thread, and the kernel
// resolves a path in that thread's context: its root, its cwd, its descriptors, /proc/self and
// /proc/thread-self naming it. Resolved in init's own context (realpath) those name init's cwd,
// fds and pid instead, and a path that reaches ld.so for the caller reached nothing for init. So
// the walk is done here, one component at a time from the caller's root, cwd or dirfd (opened
// through /proc/<tid>/root, /cwd, /fd/N), following symlinks by hand:
//  - "self" and "thread-self" at the root of a procfs become the caller's tgid and tgid/task/tid;
//  - any other symlink inside a procfs is a magic link (cwd, root, exe, fd/N, map_files/...): the
//    kernel follows it to the object it names whoever opens it, so init opens it and lands where
//    the caller would;
//  - ".." stops at the caller's root; at most 40 symlinks (ELOOP), like the kernel.
// The answer is an O_PATH descriptor of the file itself, compared by identity (exec_policy.h).
//
// Init's lookups are at least as permissive as the caller's (init has the box's capabilities on
// native and the caller's uid on Docker), so where the kernel will find a file for the caller,
// this walk finds the same one; where it cannot, the watch refuses (fail closed).
#pragma once

#include <sys/types.h>

#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::init {

// `dirfd` is AT_FDCWD or a descriptor number of the caller (execveat); `tid` the calling thread as
// init's pid namespace numbers it. `follow_final` false for AT_SYMLINK_NOFOLLOW. Errors carry the
// errno the lookup met (ENOENT, ENOTDIR, ELOOP, EACCES, ESRCH when the thread is gone...).
Result<UniqueFd> ResolveAsCaller(pid_t tid, int dirfd, std::string_view path, bool follow_final);

// The tgid of thread `tid` (from /proc/<tid>/status), or -1.
pid_t ThreadGroupOf(pid_t tid);

}  // namespace lsb::init
