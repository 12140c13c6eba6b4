// envd's filesystem.Filesystem calls (ListDir, Stat, MakeDir, Remove, Move) on init's file worker
// (runtime/box_files.h): inside the box, under its uid and Landlock, never through the host's view
// of the box's paths; no link is followed. This file shapes envd's messages: EntryInfo from a
// FileEntry, and the RPC error of a failed reply.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/file_ops.h"
#include "server/e2b/connect_codec.h"

namespace lsb::server::e2b {

// The most entries one ListDir returns, whatever its depth.
inline constexpr size_t kMaxListEntries = 10000;

// envd's EntryInfo for `e` at `path`.
nlohmann::json EntryInfo(const protocol::FileEntry& e, const std::string& path);
// "-rw-r--r--" for a file of mode 0644 (`type` as FileEntry.type).
std::string PermissionString(const std::string& type, uint32_t mode);
// The RPC error of a failed reply, with the worker's words.
RpcError FsError(const protocol::FileReply& reply, const std::string& path);

}  // namespace lsb::server::e2b
