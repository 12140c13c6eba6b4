// init's file worker (protocol/file_ops.h): each kFileOp is carried out by a child of init made for
// it, confined as the program is (the program's uid and gid, no supplementary groups, its Landlock
// ruleset, no_new_privs, the escape filter) and not dumpable, so no process of the box can trace it
// or write its memory. init copies the op's kFileData input into the child's stdin and relays what
// the child writes (kFileChunk frames, then one kFileReply), checking every frame and its size: a
// child that breaks, runs past the op's deadline or sends more than FileOp.reply_cap is killed and
// the host gets a kFileReply saying so. Exactly one kFileReply per kFileOp, always.
//
// The op is served in init's own loop, not beside it: between runs, or during one (a session's
// interpreter, idle between executes; its output waits in its pipes meanwhile). The host sends one
// op at a time.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "init/stream.h"
#include "protocol/file_ops.h"

namespace lsb::init {

struct WorkerIdentity {
  uint32_t uid = 1000;
  uint32_t gid = 1000;
  int ruleset_fd = -1;                            // Landlock; -1 only in the accepted weaker mode
  const std::vector<sock_filter>* escape = nullptr;  // null: none (the accepted weaker mode)
};

// In a fresh child of init: the confinement of the file worker (and of the file watcher,
// file_watch.h). Which step failed (errno set), or nullptr.
const char* ConfineFileWorker(const WorkerIdentity& who);

// Serves the kFileOp whose payload is `payload` (its kFileData frames still on `stream`). An error
// only when the stream broke (Error::Eof() when the host went away); the op's own failures are
// kFileReply answers.
Status ServeFileOp(Stream& stream, const std::string& payload, const WorkerIdentity& who);

}  // namespace lsb::init
