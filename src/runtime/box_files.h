// File operations in a box, carried out by init's file worker (protocol/file_ops.h,
// src/init/file_worker.h) on every backend and for every policy: no interpreter in the box is
// needed. What comes back is bounded here (FileOp.reply_cap) and parsed as hostile input by the
// callers (scheduler/workspace_io.h): the worker shares the box with the program.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"
#include "protocol/file_ops.h"
#include "runtime/runner.h"

namespace lsb {

struct FileCall {
  protocol::FileReply reply;
  std::string data;  // the kFileChunk bytes (kRead: the file; record ops: records)
};

// Sends `op` with `input` as its kFileData (op.data_bytes is set from it) to `session`'s init and
// reads the answer. A run in progress (a session's interpreter between executes) goes on: its
// frames that arrive meanwhile are held for it (FrameChannel::Hold). An Error: the box broke, or
// init did not answer within op.timeout_ms and a grace (the session is then marked unusable).
Result<FileCall> CallFileOp(BoxSession& session, protocol::FileOp op, std::string_view input = {});

// Asks init to watch `spec` (protocol/file_ops.h kWatch; a watch replaces the box's last one), or
// with nullptr to stop. Events reach the box's sink (BoxSession::SetFileEventSink) as readers of
// the channel meet them: a run's reader while one runs, else DrainFileEvents.
Status WatchBox(BoxSession& session, const protocol::WatchSpec* spec);
// Reads the channel for up to `within`, handing file events to the sink and keeping every other
// frame for the run's reader (FrameChannel::Hold). For an owner whose box runs nothing right now.
Status DrainFileEvents(BoxSession& session, std::chrono::milliseconds within);

}  // namespace lsb
