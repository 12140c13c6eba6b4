// A tar reader for layers and `docker save` archives: ustar (with its 155-byte prefix), pax
// extended headers (path, linkpath, size, mtime; GNU.sparse refused; xattrs read and dropped),
// GNU long names and long link targets ('L', 'K'), base-256 sizes. Every header is checksummed,
// every long name and pax record bounded. It only parses: what an entry may do to a directory is
// layer_unpack's decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "image/byte_source.h"
#include "image/limits.h"

namespace lsb::image {

struct TarEntry {
  enum class Type { kFile, kHardlink, kSymlink, kCharDev, kBlockDev, kDirectory, kFifo };
  Type type = Type::kFile;
  std::string name;      // as stored (after pax/GNU overrides), not yet normalised
  std::string linkname;  // hardlink or symlink target
  uint32_t mode = 0;     // permission bits from the header (all 12 of them)
  int64_t mtime = 0;     // seconds since the epoch
  uint64_t size = 0;     // data bytes that follow (0 for everything but kFile)
  uint32_t dev_major = 0, dev_minor = 0;
};

class TarReader {
 public:
  TarReader(ByteSource& src, const UnpackLimits& limits) : src_(src), limits_(limits) {}

  // The next entry, skipping whatever of the previous entry's data was not read; nullopt at the
  // end-of-archive marker. A truncated archive or a bad checksum is an error.
  Result<std::optional<TarEntry>> Next();
  // Up to n bytes of the current entry's data; 0 when it is all read.
  Result<size_t> ReadData(char* buf, size_t n);
  // Reads the rest of the stream (the zero blocks and padding after the end marker), so a hash
  // over the stream covers all of it as `docker` computed the diff_id.
  Status DrainToEnd();

 private:
  Status SkipRemaining();
  Result<std::string> ReadLongValue(uint64_t size, const char* what);

  ByteSource& src_;
  const UnpackLimits& limits_;
  uint64_t remaining_ = 0;  // data bytes of the current entry not yet read
  uint64_t padding_ = 0;    // bytes to the next 512-byte boundary after them
};

}  // namespace lsb::image
