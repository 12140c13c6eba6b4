#include "scheduler/archive/archive_in.h"

#include <cstring>

#include "image/byte_source.h"
#include "image/decompress.h"
#include "image/tar_reader.h"
#include "scheduler/archive/archive_entries.h"
#include "scheduler/archive/zip_reader.h"

namespace lsb::sched {
namespace {

class MemorySource : public image::ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t take = std::min(n, bytes_.size() - at_);
    std::memcpy(buf, bytes_.data() + at_, take);
    at_ += take;
    return take;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

// The decompressed tar stream, bounded: headers that never yield an entry (a chain of pax
// records) or entries replacing each other would otherwise expand without limit.
class BoundedSource : public image::ByteSource {
 public:
  BoundedSource(image::ByteSource& inner, uint64_t max) : inner_(inner), max_(max) {}
  Result<size_t> Read(char* buf, size_t n) override {
    LSB_ASSIGN_OR_RETURN(size_t r, inner_.Read(buf, n));
    read_ += r;
    if (read_ > max_)
      return Error{ErrorCode::kResourceExhausted,
                   "the tar stream expands past " + std::to_string(max_) + " bytes; a compression bomb is refused"};
    return r;
  }

 private:
  image::ByteSource& inner_;
  uint64_t max_;
  uint64_t read_ = 0;
};

Status ReadTarEntries(image::ByteSource& stream, ArchiveEntries& entries) {
  image::UnpackLimits ul;  // only its header bound applies to parsing
  image::TarReader tar(stream, ul);
  using Type = image::TarEntry::Type;
  for (;;) {
    LSB_ASSIGN_OR_RETURN(auto next, tar.Next());
    if (!next) return OkStatus();
    const image::TarEntry& e = *next;
    switch (e.type) {
      case Type::kDirectory: LSB_TRY(entries.AddDir(e.name)); break;
      case Type::kHardlink: LSB_TRY(entries.AddHardlink(e.name, e.linkname)); break;
      case Type::kSymlink:
        return entries.Refuse(e.name, "a symbolic link (to '" + e.linkname.substr(0, 200) +
                                          "'); archives may hold files and directories only");
      case Type::kCharDev:
      case Type::kBlockDev: return entries.Refuse(e.name, "a device node");
      case Type::kFifo: return entries.Refuse(e.name, "a FIFO");
      case Type::kFile: {
        if (e.size > entries.Room()) return entries.TooLarge(e.name, e.size);
        std::string data(static_cast<size_t>(e.size), '\0');
        size_t got = 0;
        while (got < data.size()) {
          LSB_ASSIGN_OR_RETURN(size_t r, tar.ReadData(data.data() + got, data.size() - got));
          if (r == 0) return entries.Refuse(e.name, "its data is cut short");
          got += r;
        }
        LSB_TRY(entries.AddFile(e.name, std::move(data), e.mode));
        break;
      }
    }
  }
}

}  // namespace

const char* ArchiveFormatName(ArchiveFormat f) {
  switch (f) {
    case ArchiveFormat::kTar: return "tar";
    case ArchiveFormat::kTarGzip: return "tar+gzip";
    case ArchiveFormat::kTarZstd: return "tar+zstd";
    case ArchiveFormat::kZip: return "zip";
  }
  return "tar";
}

ArchiveFormat SniffArchive(std::string_view b) {
  auto at = [&](size_t i) { return i < b.size() ? static_cast<unsigned char>(b[i]) : 0u; };
  if (at(0) == 'P' && at(1) == 'K' && ((at(2) == 3 && at(3) == 4) || (at(2) == 5 && at(3) == 6))) return ArchiveFormat::kZip;
  if (at(0) == 0x1f && at(1) == 0x8b) return ArchiveFormat::kTarGzip;
  if (at(0) == 0x28 && at(1) == 0xb5 && at(2) == 0x2f && at(3) == 0xfd) return ArchiveFormat::kTarZstd;
  return ArchiveFormat::kTar;
}

Result<UnpackedArchive> ReadArchive(std::string_view archive, const std::string& target, const ArchiveLimits& limits) {
  ArchiveEntries entries(target, limits, archive.size());
  ArchiveFormat format = SniffArchive(archive);
  if (format == ArchiveFormat::kZip) {
    LSB_TRY(ReadZipEntries(archive, limits, entries));
  } else {
    if (archive.empty()) return Error{ErrorCode::kInvalidArgument, "the archive is empty; send a tar, tar.gz, tar.zst or zip"};
    MemorySource raw(archive);
    auto c = format == ArchiveFormat::kTarGzip   ? image::Compression::kGzip
             : format == ArchiveFormat::kTarZstd ? image::Compression::kZstd
                                                 : image::Compression::kNone;
    auto inflated = image::Decompressor(c, raw);
    // Content, plus a header block or two per entry, plus the end blocks.
    BoundedSource stream(*inflated, limits.max_bytes + (limits.max_entries + 2) * 2048 + (4u << 20));
    Status s = ReadTarEntries(stream, entries);
    if (!s.ok()) {
      Error e = s.error();
      if (e.field != kArchiveEntryField && e.code != ErrorCode::kResourceExhausted)
        e.message = std::string("the archive (") + ArchiveFormatName(format) + ") cannot be read: " + e.message +
                    "; send a tar, tar.gz, tar.zst or zip";
      if (e.code == ErrorCode::kUnknown) e.code = ErrorCode::kInvalidArgument;
      return e;
    }
  }
  UnpackedArchive out = std::move(entries).Take();
  out.format = format;
  return out;
}

}  // namespace lsb::sched
