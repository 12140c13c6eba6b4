#include "protocol/file_ops.h"

#include <array>
#include <cerrno>
#include <stdexcept>
#include <string>

#include "base/enum_words.h"

namespace lsb::protocol {
namespace {

constexpr std::array<EnumWord<FileOpKind>, 11> kOps{{
    {FileOpKind::kWrite, "write"},
    {FileOpKind::kRead, "read"},
    {FileOpKind::kList, "list"},
    {FileOpKind::kStat, "stat"},
    {FileOpKind::kMkdir, "mkdir"},
    {FileOpKind::kRemove, "remove"},
    {FileOpKind::kRename, "rename"},
    {FileOpKind::kUnpack, "unpack"},
    {FileOpKind::kCollect, "collect"},
    {FileOpKind::kTree, "tree"},
    {FileOpKind::kManifest, "manifest"},
}};

constexpr std::array<EnumWord<FileStatus>, 10> kStatuses{{
    {FileStatus::kOk, "ok"},
    {FileStatus::kNotFound, "not_found"},
    {FileStatus::kTooLarge, "too_large"},
    {FileStatus::kNotADirectory, "not_a_directory"},
    {FileStatus::kIsADirectory, "is_a_directory"},
    {FileStatus::kExists, "exists"},
    {FileStatus::kNotEmpty, "not_empty"},
    {FileStatus::kDenied, "denied"},
    {FileStatus::kInvalid, "invalid"},
    {FileStatus::kFailed, "failed"},
}};

template <typename E, size_t N>
E Parse(const std::array<EnumWord<E>, N>& table, const nlohmann::json& j, const char* what) {
  if (!j.is_string()) throw std::invalid_argument(std::string(what) + " must be a string");
  auto v = EnumOf<E>(table, j.get<std::string>());
  if (!v) throw std::invalid_argument(std::string("unknown ") + what + " \"" + j.get<std::string>() + "\"");
  return *v;
}

}  // namespace

const char* Name(FileOpKind v) { return WordOf<FileOpKind>(kOps, v); }
const char* Name(FileStatus v) { return WordOf<FileStatus>(kStatuses, v); }
std::optional<FileStatus> ParseFileStatus(std::string_view s) { return EnumOf<FileStatus>(kStatuses, s); }

void to_json(nlohmann::json& j, FileOpKind v) { j = Name(v); }
void from_json(const nlohmann::json& j, FileOpKind& v) { v = Parse(kOps, j, "file op"); }
void to_json(nlohmann::json& j, FileStatus v) { j = Name(v); }
void from_json(const nlohmann::json& j, FileStatus& v) { v = Parse(kStatuses, j, "file status"); }

FileStatus FileStatusOfErrno(int err) {
  switch (err) {
    case 0: return FileStatus::kOk;
    case ENOENT: return FileStatus::kNotFound;
    case EFBIG: return FileStatus::kTooLarge;
    case ENOTDIR: return FileStatus::kNotADirectory;
    case EISDIR: return FileStatus::kIsADirectory;
    case EEXIST: return FileStatus::kExists;
    case ENOTEMPTY: return FileStatus::kNotEmpty;
    case EACCES:
    case EPERM:
    case EROFS:
    case EXDEV: return FileStatus::kDenied;
    case EINVAL:
    case ELOOP:  // a link where none is followed: the path asked for is the problem
    case ENAMETOOLONG: return FileStatus::kInvalid;
    default: return FileStatus::kFailed;
  }
}

}  // namespace lsb::protocol
