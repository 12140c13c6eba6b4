// The ordered confinement of one program, run in the process that becomes it: init's forked child
// before execve (spawn.h), and a fork server's adopted python before it runs the code
// (fork_entry.cc). One copy of the order, so both get exactly the same box. Only system calls and
// memory prepared by the caller: safe after fork, and free of libstdc++ (the fork server loads it
// into the image's python as a shared library).
#pragma once

#include <linux/filter.h>
#include <stdint.h>

namespace lsb::init {

struct ConfineParams {
  int stdin_fd = -1;   // becomes fd 0; -1: /dev/null
  int stdout_fd = -1;  // becomes fd 1
  int stderr_fd = -1;  // becomes fd 2
  int sock = -1;       // the hand-off socket to init: moved to fd `nofile`, close-on-exec
  const char* workdir = "/";
  uint64_t nofile = 256;
  uint64_t file_size = 64ull << 20;
  uint32_t uid = 1000;
  uint32_t gid = 1000;
  int ruleset_fd = -1;  // Landlock; -1 only in the accepted weaker mode
  const sock_filter* watch = nullptr;  // the user-notification filter (null: no watch)
  unsigned short watch_len = 0;
  const sock_filter* escape = nullptr;  // the escape filter (null: none)
  unsigned short escape_len = 0;
  // Dumpable again once the ids changed (which made it not): for a process no execve will reset,
  // the adopted program, so init (without capabilities where its memory was made) can read it.
  bool dumpable = false;
};

// Which step failed, with errno set (the caller reports both), or nullptr once the process is
// confined and the listener handed to init on fd `nofile` as an 'L' message.
const char* ConfineSelf(const ConfineParams& p);

// The program's ids for good: no supplementary groups, then gid and uid (real, effective, saved),
// refusing to go on as uid 0. Which step failed (errno set), or nullptr. Shared with init's file
// worker (file_worker.h), which runs as the program does.
const char* TakeProgramIds(uint32_t uid, uint32_t gid);

}  // namespace lsb::init
