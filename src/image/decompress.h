// Layer compression: gzip (zlib, multi-member), zstd (libzstd, multi-frame) or none, told apart by
// the stream's magic bytes rather than the media type a manifest claims (a manifest may lie; the
// bytes decide, and the diff_id check catches the rest).
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "image/byte_source.h"

namespace lsb::image {

enum class Compression { kNone, kGzip, kZstd };
const char* CompressionName(Compression c);

// Reads the first bytes of `fd` (with pread: the offset is not moved) to tell the compression.
Result<Compression> SniffCompression(int fd);

// A decompressing view of `raw` (which it does not own).
std::unique_ptr<ByteSource> Decompressor(Compression c, ByteSource& raw);

}  // namespace lsb::image
