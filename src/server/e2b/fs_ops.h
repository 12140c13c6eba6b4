// envd's filesystem.Filesystem calls (ListDir, Stat, MakeDir, Remove) as Python run by the
// sandbox's own interpreter, inside the box: under its uid, Landlock and read-only mounts, never
// through the host's view of the box's paths. Links are never followed (lstat; a listing does not
// descend into a symlinked directory). Answers come back as one marked JSON line on stdout,
// bounded by the policy's output cap and kMaxListEntries.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "server/e2b/connect_codec.h"

namespace lsb::server::e2b {

inline constexpr size_t kMaxListEntries = 10000;

enum class FsOp { kList, kStat, kMakeDir, kRemove };

// The Python for `op` on `path` (depth: ListDir's), marking its answer with `marker`.
std::string FsOpCode(FsOp op, const std::string& path, unsigned depth, const std::string& marker);
// The answer in the helper's stdout: the response message, or the RPC error it reported.
struct FsAnswer {
  bool ok = false;
  nlohmann::json message;
  RpcError error;
};
FsAnswer ParseFsAnswer(const std::string& stdout_data, const std::string& marker);

}  // namespace lsb::server::e2b
