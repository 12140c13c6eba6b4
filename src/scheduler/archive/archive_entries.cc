#include "scheduler/archive/archive_entries.h"

#include <algorithm>

namespace lsb::sched {
namespace {

std::string Quoted(std::string_view name) {
  std::string s(name.substr(0, 200));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return "'" + s + (name.size() > 200 ? "...'" : "'");
}

}  // namespace

Error ArchiveEntries::Refuse(std::string_view name, const std::string& what) const {
  return Error{ErrorCode::kInvalidArgument, "archive entry " + Quoted(name) + " is refused: " + what,
               std::string(kArchiveEntryField)};
}

Error ArchiveEntries::TooLarge(std::string_view name, uint64_t size) const {
  return Error{ErrorCode::kResourceExhausted,
               "archive entry " + Quoted(name) + " (" + std::to_string(size) + " bytes) takes the archive past its " +
                   std::to_string(limits_.max_bytes) + " bytes of unpacked content; send a smaller archive",
               std::string(kArchiveEntryField)};
}

Result<std::string> ArchiveEntries::Normalize(std::string_view name) const {
  if (name.empty()) return Refuse(name, "it has an empty name");
  if (name[0] == '/') return Refuse(name, "an absolute name; names must be relative to the target directory");
  for (char c : name) {
    if (c == '\0' || c == '\n' || c == '\r') return Refuse(name, "its name has a NUL or newline character");
    if (c == '\\') return Refuse(name, "its name has a backslash (a Windows path?); use '/' between directories");
  }
  std::string rel;
  size_t depth = 0;
  size_t i = 0;
  while (i <= name.size()) {
    size_t j = name.find('/', i);
    if (j == std::string_view::npos) j = name.size();
    std::string_view comp = name.substr(i, j - i);
    i = j + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") return Refuse(name, "a '..' component would leave the target directory");
    rel += (rel.empty() ? "" : "/") + std::string(comp);
    if (++depth > limits_.max_path_depth)
      return Error{ErrorCode::kResourceExhausted,
                   "archive entry " + Quoted(name) + " is more than " + std::to_string(limits_.max_path_depth) +
                       " directories deep",
                   std::string(kArchiveEntryField)};
  }
  if (target_.size() + 1 + rel.size() > limits_.max_path_bytes)
    return Error{ErrorCode::kResourceExhausted,
                 "archive entry " + Quoted(name) + " makes a path longer than " + std::to_string(limits_.max_path_bytes) +
                     " bytes",
                 std::string(kArchiveEntryField)};
  return rel;
}

Status ArchiveEntries::Count(std::string_view name) {
  if (out_.items.size() >= limits_.max_entries)
    return Error{ErrorCode::kResourceExhausted, "the archive has more than " + std::to_string(limits_.max_entries) +
                                                    " entries (at " + Quoted(name) + "); send fewer files"};
  return OkStatus();
}

Status ArchiveEntries::ParentsAreDirs(const std::string& rel, std::string_view name) {
  for (size_t at = rel.find('/'); at != std::string::npos; at = rel.find('/', at + 1)) {
    auto it = index_.find(rel.substr(0, at));
    if (it != index_.end() && out_.items[it->second].kind == ArchiveItem::Kind::kFile)
      return Refuse(name, "its parent " + Quoted(rel.substr(0, at)) + " is a file earlier in the archive");
  }
  return OkStatus();
}

Status ArchiveEntries::AddDir(std::string_view name) {
  LSB_ASSIGN_OR_RETURN(std::string rel, Normalize(name));
  if (rel.empty()) return OkStatus();
  LSB_TRY(ParentsAreDirs(rel, name));
  auto it = index_.find(rel);
  if (it != index_.end()) {
    if (out_.items[it->second].kind == ArchiveItem::Kind::kDir) return OkStatus();
    return Refuse(name, "it is a directory and, earlier in the archive, a file");
  }
  LSB_TRY(Count(name));
  index_[rel] = out_.items.size();
  out_.items.push_back({ArchiveItem::Kind::kDir, target_ + "/" + rel, "", false});
  ++out_.dirs;
  return OkStatus();
}

Status ArchiveEntries::AddFile(std::string_view name, std::string data, uint32_t mode) {
  LSB_ASSIGN_OR_RETURN(std::string rel, Normalize(name));
  if (rel.empty()) return Refuse(name, "a file cannot be the target directory itself");
  LSB_TRY(ParentsAreDirs(rel, name));
  if (data.size() > Room()) return TooLarge(name, data.size());
  out_.bytes += data.size();
  // A compressed archive may expand only so far past its own size (a bomb stops here early).
  if (out_.bytes > limits_.ratio_grace_bytes && out_.bytes / std::max<uint64_t>(archive_bytes_, 1) > limits_.max_expansion_ratio)
    return Error{ErrorCode::kResourceExhausted, "the archive expands more than " + std::to_string(limits_.max_expansion_ratio) +
                                                    " times its " + std::to_string(archive_bytes_) + " bytes (at " +
                                                    Quoted(name) + "); a compression bomb is refused"};
  bool exec = (mode & 0111) != 0;  // setuid/setgid/sticky and every other bit are dropped
  auto it = index_.find(rel);
  if (it != index_.end()) {
    ArchiveItem& prev = out_.items[it->second];
    if (prev.kind == ArchiveItem::Kind::kDir) return Refuse(name, "it is a file and, earlier in the archive, a directory");
    out_.bytes -= prev.data.size();  // a later entry of the same name replaces it, as tar -x does
    prev.data = std::move(data);
    prev.executable = exec;
    return OkStatus();
  }
  LSB_TRY(Count(name));
  index_[rel] = out_.items.size();
  out_.items.push_back({ArchiveItem::Kind::kFile, target_ + "/" + rel, std::move(data), exec});
  ++out_.files;
  return OkStatus();
}

Status ArchiveEntries::AddHardlink(std::string_view name, std::string_view target) {
  auto to = Normalize(target);
  if (!to.ok()) return Refuse(name, "a hard link to " + Quoted(target) + ", which is not a name inside the archive");
  auto it = index_.find(*to);
  if (it == index_.end() || out_.items[it->second].kind != ArchiveItem::Kind::kFile)
    return Refuse(name, "a hard link to " + Quoted(target) + ", which is not a regular file earlier in the archive");
  const ArchiveItem& src = out_.items[it->second];
  return AddFile(name, src.data, src.executable ? 0755 : 0644);
}

}  // namespace lsb::sched
