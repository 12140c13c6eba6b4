// Archives into a box (docs/api.md "Archives"): a tar (plain, gzip or zstd) or a zip, parsed on
// the HOST with bounded readers and turned into plain directory and file writes under a target
// directory, which the in-box file helper then performs under the box's own rules (its uid,
// Landlock, its refusal of symbolic links on the way: python_driver.h). The whole archive is read
// and checked before anything is written, so a refused archive writes nothing.
//
// What is refused, naming the entry: absolute names, "..", backslashes, NUL or newline in a name;
// symbolic links (all of them: a link created in the box could redirect a later write or a later
// program, and the clients resolve links inside the tree they send); hard links other than to a
// regular file earlier in the same archive (those become copies); device nodes, FIFOs and
// anything else that is not a file or a directory; encrypted or zip64 zips and methods other than
// stored and deflate; an entry that is a file in one place and a directory in another. Stripped:
// setuid, setgid and sticky bits, ownership, times; a file keeps only "executable or not".
// Bounded (ArchiveLimits): entries, content bytes, path length and depth, the tar stream's size
// and the expansion ratio of a compressed archive.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb::sched {

struct ArchiveLimits {
  uint64_t max_entries = 10000;            // files and directories of one archive
  uint64_t max_bytes = 64ull << 20;        // file content once unpacked (64 MiB)
  // Unpacked bytes per archive byte, checked once `ratio_grace_bytes` have been produced: real
  // source trees stay below 20:1, a bomb of zeros reaches 1000:1.
  uint64_t max_expansion_ratio = 200;
  uint64_t ratio_grace_bytes = 8ull << 20;
  size_t max_path_bytes = 4096;            // the whole path in the box (PATH_MAX)
  size_t max_path_depth = 64;              // directory levels below the target
};

enum class ArchiveFormat { kTar, kTarGzip, kTarZstd, kZip };
const char* ArchiveFormatName(ArchiveFormat f);

struct ArchiveItem {
  enum class Kind { kDir, kFile };
  Kind kind = Kind::kFile;
  std::string path;  // absolute: the target joined with the entry's normalized name
  std::string data;  // kFile
  bool executable = false;
};

struct UnpackedArchive {
  ArchiveFormat format = ArchiveFormat::kTar;
  std::vector<ArchiveItem> items;  // in archive order, parents before children where given
  uint64_t files = 0, dirs = 0, bytes = 0;
};

// The format from the bytes themselves (zip "PK\3\4" or an empty zip's "PK\5\6", gzip, zstd, else
// tar), never from a name or a content type.
ArchiveFormat SniffArchive(std::string_view bytes);

// Parses and checks the whole of `archive`; `target` is an absolute, normalized directory (the
// caller checked it with CheckSandboxPath). Errors are kInvalidArgument (a hostile or broken
// archive, naming the entry) or kResourceExhausted (a bound, naming it and its value).
Result<UnpackedArchive> ReadArchive(std::string_view archive, const std::string& target, const ArchiveLimits& limits);

}  // namespace lsb::sched
