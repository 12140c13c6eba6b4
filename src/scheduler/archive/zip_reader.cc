#include "scheduler/archive/zip_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cstring>

namespace lsb::sched {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr size_t kEocdSize = 22, kCentralSize = 46, kLocalSize = 30;

uint32_t U16(std::string_view b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8;
}
uint32_t U32(std::string_view b, size_t at) { return U16(b, at) | U16(b, at + 2) << 16; }

Error Bad(const std::string& what) {
  return Error{ErrorCode::kInvalidArgument, "the archive (zip) cannot be read: " + what + "; send a tar, tar.gz, tar.zst or zip"};
}

// Where the end-of-central-directory record starts (the last one in the final 64 KiB + 22 bytes).
Result<size_t> FindEocd(std::string_view zip) {
  if (zip.size() < kEocdSize) return Bad("it is shorter than its end record");
  size_t lowest = zip.size() > kEocdSize + 0xffff ? zip.size() - kEocdSize - 0xffff : 0;
  for (size_t at = zip.size() - kEocdSize + 1; at-- > lowest;)
    if (U32(zip, at) == kEocdSig && at + kEocdSize + U16(zip, at + 20) == zip.size()) return at;
  return Bad("no end-of-central-directory record");
}

Result<std::string> Inflate(std::string_view in, uint64_t size, std::string_view name, ArchiveEntries& entries) {
  std::string out(static_cast<size_t>(size), '\0');
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) return Error{"zip: inflateInit failed"};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  bool ended = rc == Z_STREAM_END && z.avail_out == 0;
  inflateEnd(&z);
  if (!ended) return entries.Refuse(name, "its deflate data does not inflate to the size its header claims");
  return out;
}

Status ReadOne(std::string_view zip, size_t& at, const ArchiveLimits& limits, ArchiveEntries& entries) {
  if (at + kCentralSize > zip.size() || U32(zip, at) != kCentralSig) return Bad("a central directory entry is cut short");
  uint32_t made_by = U16(zip, at + 4) >> 8, flags = U16(zip, at + 8), method = U16(zip, at + 10);
  uint32_t crc = U32(zip, at + 16), csize = U32(zip, at + 20), usize = U32(zip, at + 24);
  size_t n = U16(zip, at + 28), m = U16(zip, at + 30), k = U16(zip, at + 32);
  uint32_t external = U32(zip, at + 38), local = U32(zip, at + 42);
  if (at + kCentralSize + n + m + k > zip.size()) return Bad("a central directory entry is cut short");
  std::string_view name = zip.substr(at + kCentralSize, n);
  at += kCentralSize + n + m + k;
  if (name.size() > limits.max_path_bytes) return entries.Refuse(name.substr(0, 200), "its name is too long");
  if (flags & 1) return entries.Refuse(name, "it is encrypted");
  if (csize == 0xffffffff || usize == 0xffffffff || local == 0xffffffff) return entries.Refuse(name, "zip64 entries are not supported");
  uint32_t mode = made_by == 3 ? external >> 16 : 0;  // 3: made on Unix, the high half is st_mode
  uint32_t type = mode & S_IFMT;
  if (type == S_IFLNK) return entries.Refuse(name, "a symbolic link; archives may hold files and directories only");
  if (type != 0 && type != S_IFREG && type != S_IFDIR) return entries.Refuse(name, "a device node, FIFO or socket");
  if (type == S_IFDIR || (!name.empty() && name.back() == '/')) return entries.AddDir(name);
  if (method != 0 && method != 8) return entries.Refuse(name, "compression method " + std::to_string(method) + " (only stored and deflate are read)");
  if (usize > entries.Room()) return entries.TooLarge(name, usize);
  if (local + kLocalSize > zip.size() || U32(zip, local) != kLocalSig) return entries.Refuse(name, "its local header is missing");
  size_t ln = U16(zip, local + 26), lm = U16(zip, local + 28);
  if (zip.substr(local + kLocalSize, ln) != name) return entries.Refuse(name, "its local header names another file");
  size_t data_at = local + kLocalSize + ln + lm;
  if (data_at > zip.size() || csize > zip.size() - data_at) return entries.Refuse(name, "its data is cut short");
  std::string_view raw = zip.substr(data_at, csize);
  std::string data;
  if (method == 0) {
    if (csize != usize) return entries.Refuse(name, "a stored entry whose sizes disagree");
    data.assign(raw);
  } else {
    LSB_ASSIGN_OR_RETURN(data, Inflate(raw, usize, name, entries));
  }
  if (crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())) != crc)
    return entries.Refuse(name, "its CRC-32 does not match its data");
  return entries.AddFile(name, std::move(data), mode ? mode : 0644);
}

}  // namespace

Status ReadZipEntries(std::string_view zip, const ArchiveLimits& limits, ArchiveEntries& entries) {
  LSB_ASSIGN_OR_RETURN(size_t eocd, FindEocd(zip));
  uint32_t disk = U16(zip, eocd + 4), cd_disk = U16(zip, eocd + 6);
  uint32_t count = U16(zip, eocd + 10), cd_size = U32(zip, eocd + 12), cd_at = U32(zip, eocd + 16);
  if (disk != 0 || cd_disk != 0) return Bad("multi-disk archives are not supported");
  if (count == 0xffff || cd_at == 0xffffffff) return Bad("zip64 archives are not supported");
  if (count > limits.max_entries)
    return Error{ErrorCode::kResourceExhausted, "the archive has " + std::to_string(count) + " entries; the limit is " +
                                                    std::to_string(limits.max_entries)};
  if (cd_at > eocd || cd_size > eocd - cd_at) return Bad("its central directory lies outside the archive");
  size_t at = cd_at;
  for (uint32_t i = 0; i < count; ++i) LSB_TRY(ReadOne(zip, at, limits, entries));
  return OkStatus();
}

}  // namespace lsb::sched
