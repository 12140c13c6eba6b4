// Landlock: which files the program may read, write and execute (DESIGN §3, "commands").
//
// The ruleset is built once, at setup, from the finished view and the ExecPolicy; each run's child
// enforces it (landlock_restrict_self) just before execve. Handled rights: EXECUTE, READ_FILE,
// READ_DIR, WRITE_FILE, every MAKE_* and REMOVE_*, REFER (ABI >= 2), TRUNCATE (ABI >= 3); with the
// network off, TCP connect (ABI >= 4); signal and abstract-unix-socket scoping (ABI >= 6) so the
// program can neither signal init nor reach sockets outside its domain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/exec_policy.h"
#include "protocol/messages.h"

namespace lsb::init {

// The highest Landlock ABI the kernel supports; 0 when Landlock is absent or disabled.
int LandlockAbi();

struct LandlockRule {
  std::string path;
  uint64_t access = 0;  // LANDLOCK_ACCESS_FS_* (file-only rights are kept for files)
};

// The rules for this box: read on library/data/config dirs, only READ_DIR on bin dirs,
// READ_FILE+EXECUTE on each allowed executable and its interpreters, read/write without EXECUTE
// on the writable tmpfs mounts, read on the job dir, the device files, /proc, and read on what
// container.build.files put into the image (BoxSetup.readable).
std::vector<LandlockRule> PlanRules(const protocol::BoxSetup& setup, const ExecPolicy& exec);

// Creates the ruleset (fd, close-on-exec) for `abi`. Paths that do not exist are skipped.
// `egress_port` (not 0): the network goes through the egress proxy, and TCP connect is allowed to
// that port only (ABI >= 4; the box's network namespace holds nothing else but its own loopback).
Result<UniqueFd> CreateRuleset(int abi, const std::vector<LandlockRule>& rules, bool network_enabled,
                               uint16_t egress_port = 0);

// In the child, after PR_SET_NO_NEW_PRIVS. Async-signal-safe.
int RestrictSelf(int ruleset_fd);

}  // namespace lsb::init
