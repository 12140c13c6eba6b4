// The file operations as the file worker carries them out (protocol/file_ops.h has the wire;
// file_worker.h forks and confines the worker): the op's input is read from `in`, its output goes
// to `out`, and the reply says how it ended. Every path is opened through box_path.h (no link
// followed); only regular files are read or written (a FIFO, a device or a socket is refused, never
// opened for I/O that could block).
#pragma once

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/worker_io.h"
#include "protocol/file_ops.h"

namespace lsb::init {

protocol::FileReply DoFileOp(const protocol::FileOp& op, InputReader& in, ReplyWriter& out);

// The parts tree_ops.cc shares with file_ops.cc.
// Opens the regular file `path` for reading, refusing anything else (EINVAL "not a regular file").
Result<UniqueFd> OpenRegularForRead(const std::string& path);
// Creates or truncates the regular file `path` (parents made) and fills it with `n` bytes of `in`.
Status WriteFromInput(const std::string& path, InputReader& in, uint64_t n, bool executable);
// Reads all of `fd` when it holds at most `limit` bytes; EFBIG past it ("<path>: ... limit").
Result<std::string> ReadAtMost(int fd, const std::string& path, uint64_t limit);

// The record ops (tree_ops.cc).
Status Unpack(const protocol::FileOp& op, InputReader& in);
Status Collect(const protocol::FileOp& op, ReplyWriter& out);
Status Tree(const protocol::FileOp& op, ReplyWriter& out);
Status Manifest(const protocol::FileOp& op, ReplyWriter& out);

}  // namespace lsb::init
