// The rules every archive entry passes, whatever the format (archive_in.h): its name normalized
// under the target, the bounds counted, duplicates and file/directory conflicts resolved, hard
// links turned into copies. Shared by the tar and zip readers.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "scheduler/archive/archive_in.h"

namespace lsb::sched {

// The `field` of the errors that name one entry (the input at fault): the tar reader passes them on
// as they are (archive_in.cc) instead of calling the whole archive unreadable.
inline constexpr std::string_view kArchiveEntryField = "archive entry";

class ArchiveEntries {
 public:
  ArchiveEntries(const std::string& target, const ArchiveLimits& limits, uint64_t archive_bytes)
      : target_(target), limits_(limits), archive_bytes_(archive_bytes) {}

  // `name` as stored; "" (the archive's own root, "./") is skipped.
  Status AddDir(std::string_view name);
  // Data is given whole (the readers bound it with Room() before reading it).
  Status AddFile(std::string_view name, std::string data, uint32_t mode);
  Status AddHardlink(std::string_view name, std::string_view target);
  // The error for an entry of a type that is never unpacked ("a symbolic link", "a FIFO").
  Error Refuse(std::string_view name, const std::string& what) const;
  // Content bytes still allowed before the bound (a reader checks a size claim against it).
  uint64_t Room() const { return limits_.max_bytes - out_.bytes; }
  Error TooLarge(std::string_view name, uint64_t size) const;

  UnpackedArchive Take() && { return std::move(out_); }

 private:
  // The normalized relative name ("a/b"), "" for the root; an error names the entry.
  Result<std::string> Normalize(std::string_view name) const;
  Status Count(std::string_view name);
  Status ParentsAreDirs(const std::string& rel, std::string_view name);

  std::string target_;
  const ArchiveLimits& limits_;
  uint64_t archive_bytes_;
  UnpackedArchive out_;
  std::map<std::string, size_t> index_;  // relative name -> item
};

}  // namespace lsb::sched
