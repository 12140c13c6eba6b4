#include "server/e2b/fs_ops.h"

#include <time.h>

#include <cstdio>

namespace lsb::server::e2b {

using nlohmann::json;
using protocol::FileStatus;

std::string PermissionString(const std::string& type, uint32_t mode) {
  char kind = type == "dir" ? 'd' : type == "symlink" ? 'l' : type == "fifo" ? 'p' : type == "socket" ? 's'
            : type == "char" ? 'c' : type == "block" ? 'b' : '-';
  std::string out(1, kind);
  const char* rwx = "rwx";
  for (int i = 8; i >= 0; --i) out += (mode >> i) & 1 ? rwx[(8 - i) % 3] : '-';
  // setuid, setgid and sticky take the execute slot of their triple, as ls shows them.
  auto special = [&](uint32_t bit, size_t at, char on) {
    if (mode & bit) out[at] = out[at] == 'x' ? on : static_cast<char>(on - 'a' + 'A');
  };
  special(04000, 3, 's');
  special(02000, 6, 's');
  special(01000, 9, 't');
  return out;
}

json EntryInfo(const protocol::FileEntry& e, const std::string& path) {
  const char* type = e.type == "dir" ? "FILE_TYPE_DIRECTORY" : e.type == "symlink" ? "FILE_TYPE_SYMLINK"
                   : e.type == "file" ? "FILE_TYPE_FILE" : "FILE_TYPE_UNSPECIFIED";
  time_t secs = static_cast<time_t>(e.mtime_ms / 1000);
  tm t{};
  gmtime_r(&secs, &t);
  char when[96];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(e.mtime_ms % 1000) * 1000);
  size_t slash = path.rfind('/');
  std::string name = path == "/" ? "/" : path.substr(slash + 1);
  // The box's user names are the box's: its uid and gid are given as numbers.
  json j = {{"name", name}, {"type", type}, {"path", path}, {"size", std::to_string(e.size)},
            {"mode", e.mode}, {"permissions", PermissionString(e.type, e.mode)},
            {"owner", std::to_string(e.uid)}, {"group", std::to_string(e.gid)}, {"modifiedTime", when}};
  if (e.type == "symlink") j["symlinkTarget"] = e.target;
  return j;
}

RpcError FsError(const protocol::FileReply& r, const std::string& path) {
  switch (r.status) {
    case FileStatus::kNotFound:
      return {RpcCode::kNotFound, path + " does not exist in the sandbox (" + r.message + ")"};
    case FileStatus::kNotADirectory:
      return {RpcCode::kInvalidArgument, path + " is not a directory (" + r.message + ")"};
    case FileStatus::kExists: return {RpcCode::kAlreadyExists, path + " already exists"};
    case FileStatus::kDenied:
      return {RpcCode::kPermissionDenied,
              path + ": " + r.message + " (outside the policy's writable dirs, or read-only)"};
    case FileStatus::kTooLarge: return {RpcCode::kResourceExhausted, r.message};
    case FileStatus::kInvalid:
    case FileStatus::kIsADirectory:
    case FileStatus::kNotEmpty: return {RpcCode::kInvalidArgument, r.message};
    default: return {RpcCode::kInternal, path + ": " + r.message};
  }
}

}  // namespace lsb::server::e2b
