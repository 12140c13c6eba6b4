// A box's own share of the kernel's per-user limits (docs/security.md, class 4).
//
// The kernel charges inotify instances and watches, fanotify groups and marks, namespaces
// (`ucounts`, /proc/sys/user/max_*) and queued signals, POSIX message queue bytes, locked shm and
// processes (the rlimit-backed ucounts) to the user in each user namespace from the caller's up
// to the host's, where the key is the uid that OWNS the box's user namespace. Two things give a
// box a bounded share of its own:
//   1. the owner: the box's user namespace is created by a thread running with a dedicated,
//      unprivileged host euid (`PickBoxOwner`), not root's, so what a box uses up at the host
//      level is that uid's, never the daemon's (root's: systemd, the daemon, every other box);
//   2. the box's own limits: inside its new user namespace the launch child (uid 0 there, with
//      CAP_SYS_RESOURCE) lowers /proc/sys/user/max_* and sets RLIMIT_SIGPENDING, _MSGQUEUE and
//      _MEMLOCK before it executes init, so a box stops at its share even when owners collide.
// The box's program has no capability in that namespace, so it cannot raise them again, and it
// cannot make a nested user namespace (seccomp, and max_user_namespaces = 0 here).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lsb::native {

// Host uids a box's user namespace may be owned by: right above the range boxes are mapped to
// (kDefaultIdBase + kDefaultIdCount), so no box process ever runs as an owner uid.
inline constexpr uint32_t kDefaultOwnerCount = 65536;

// One /proc/sys/user/max_* value the box's user namespace gets.
struct UserNsLimit {
  const char* name;  // file under /proc/sys/user/
  int value;
};

// The defaults, documented in docs/security.md ("Class 4"). Per uid of the box (its program's and
// init's), in the box's user namespace. Namespaces: 0, the box makes none after its start.
inline constexpr UserNsLimit kBoxUserNsLimits[] = {
    {"max_inotify_instances", 16},   // host default 128 per user
    {"max_inotify_watches", 8192},
    {"max_fanotify_groups", 0},      // fanotify_init is refused by seccomp anyway
    {"max_fanotify_marks", 0},
    {"max_user_namespaces", 0},
    {"max_mnt_namespaces", 0},
    {"max_pid_namespaces", 0},
    {"max_net_namespaces", 0},
    {"max_ipc_namespaces", 0},
    {"max_uts_namespaces", 0},
    {"max_cgroup_namespaces", 0},
    {"max_time_namespaces", 0},
};

// The rlimit-backed ucounts of a box (soft = hard). RLIMIT_NPROC is left to the pids cgroup.
struct BoxRlimit {
  int resource;
  rlim_t value;
};
inline constexpr BoxRlimit kBoxRlimits[] = {
    {RLIMIT_SIGPENDING, 1024},         // queued signals
    {RLIMIT_MSGQUEUE, 256 * 1024},     // POSIX message queue bytes
    {RLIMIT_MEMLOCK, 8 * 1024 * 1024}, // SHM_LOCK'ed and mlock'ed bytes
};

// What the launch child writes, prepared before clone (the child may only make raw syscalls).
struct BoxUserLimits {
  struct Write {
    std::string path;   // /proc/sys/user/<name>
    std::string value;  // decimal text
  };
  std::vector<Write> sysctls;
  std::vector<BoxRlimit> rlimits;
};

// The defaults above, ready for LaunchOptions.
BoxUserLimits DefaultBoxUserLimits();

// "max_inotify_instances 16, ..., RLIMIT_SIGPENDING 1024, ..." for explain.
std::string DescribeBoxUserLimits();

// A random host uid in [base, base + count) for a new box's user namespace owner. Random, not
// allocated: the CLI's boxes and the daemon's are started by unrelated processes. Two boxes
// that draw the same owner share its host-level share (128 inotify instances by default), and
// each of them still stops at its own limits above, so a collision costs neither box anything
// unless more than 8 concurrent boxes (128 / 16) drew the same one.
uid_t PickBoxOwner(uint32_t base, uint32_t count);

}  // namespace lsb::native
