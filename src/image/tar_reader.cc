#include "image/tar_reader.h"

#include <cstring>
#include <string_view>
#include <vector>

namespace lsb::image {
namespace {

constexpr size_t kBlock = 512;

Error Bad(const std::string& what) { return Error{ErrorCode::kInvalidArgument, "bad tar archive: " + what}; }

// A NUL- or length-terminated header field.
std::string Field(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

// Octal (space/NUL terminated), or base-256 when the high bit of the first byte is set (GNU/star
// for sizes above 8 GiB). Negative base-256 values are refused.
Result<uint64_t> Number(const char* p, size_t n, const char* what) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  if (u[0] & 0x80) {
    if (u[0] & 0x40) return Bad(std::string("negative ") + what);
    uint64_t v = u[0] & 0x3f;
    for (size_t i = 1; i < n; ++i) {
      if (v >> 56) return Bad(std::string(what) + " out of range");
      v = (v << 8) | u[i];
    }
    return v;
  }
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\0')) ++i;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60) return Bad(std::string(what) + " out of range");
    v = v * 8 + static_cast<uint64_t>(p[i] - '0');
  }
  for (; i < n; ++i)
    if (p[i] != ' ' && p[i] != '\0') return Bad(std::string("malformed ") + what + " field");
  return v;
}

bool AllZero(const char* b) {
  for (size_t i = 0; i < kBlock; ++i)
    if (b[i]) return false;
  return true;
}

bool ChecksumOk(const char* b) {
  uint64_t stored = 0;
  auto parsed = Number(b + 148, 8, "checksum");
  if (!parsed.ok()) return false;
  stored = *parsed;
  uint64_t sum_unsigned = 0;
  int64_t sum_signed = 0;  // some old tars summed signed chars
  for (size_t i = 0; i < kBlock; ++i) {
    char c = (i >= 148 && i < 156) ? ' ' : b[i];
    sum_unsigned += static_cast<unsigned char>(c);
    sum_signed += static_cast<signed char>(c);
  }
  return stored == sum_unsigned || static_cast<int64_t>(stored) == sum_signed;
}

struct PaxOverrides {
  std::optional<std::string> path, linkpath;
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime;
};

// "LEN key=value\n" records (POSIX pax). Unknown keys are ignored, sparse files refused.
Status ParsePax(std::string_view data, PaxOverrides* out) {
  while (!data.empty()) {
    size_t sp = data.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp > 20) return Bad("malformed pax record length");
    uint64_t len = 0;
    for (size_t i = 0; i < sp; ++i) {
      if (data[i] < '0' || data[i] > '9') return Bad("malformed pax record length");
      len = len * 10 + static_cast<uint64_t>(data[i] - '0');
    }
    if (len <= sp + 1 || len > data.size() || data[len - 1] != '\n') return Bad("malformed pax record");
    std::string_view rec = data.substr(sp + 1, len - sp - 2);
    data.remove_prefix(len);
    size_t eq = rec.find('=');
    if (eq == std::string_view::npos) return Bad("pax record without '='");
    std::string_view key = rec.substr(0, eq), value = rec.substr(eq + 1);
    if (key == "path") {
      out->path = std::string(value);
    } else if (key == "linkpath") {
      out->linkpath = std::string(value);
    } else if (key == "size") {
      uint64_t v = 0;
      if (value.empty() || value.size() > 19) return Bad("pax size out of range");
      for (char c : value) {
        if (c < '0' || c > '9') return Bad("malformed pax size");
        v = v * 10 + static_cast<uint64_t>(c - '0');
      }
      out->size = v;
    } else if (key == "mtime") {
      int64_t v = 0;
      for (char c : value.substr(0, value.find('.'))) {
        if (c < '0' || c > '9' || v > (int64_t{1} << 40)) break;
        v = v * 10 + (c - '0');
      }
      out->mtime = v;
    } else if (key.substr(0, 11) == "GNU.sparse.") {
      return Bad("sparse files (GNU.sparse pax headers) are not supported in layers");
    }
  }
  return OkStatus();
}

}  // namespace

Status TarReader::SkipRemaining() {
  char buf[8192];
  uint64_t left = remaining_ + padding_;
  while (left > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, sizeof buf));
    LSB_TRY(ReadFull(src_, buf, n, "tar archive (entry data cut short)"));
    left -= n;
  }
  remaining_ = padding_ = 0;
  return OkStatus();
}

Result<std::string> TarReader::ReadLongValue(uint64_t size, const char* what) {
  if (size > limits_.max_header_bytes)
    return Bad(std::string(what) + " of " + std::to_string(size) + " bytes exceeds the limit of " +
               std::to_string(limits_.max_header_bytes));
  std::string data(static_cast<size_t>(size), '\0');
  LSB_TRY(ReadFull(src_, data.data(), data.size(), "tar archive (long header cut short)"));
  uint64_t pad = (kBlock - size % kBlock) % kBlock;
  char skip[kBlock];
  LSB_TRY(ReadFull(src_, skip, static_cast<size_t>(pad), "tar archive (long header cut short)"));
  return data;
}

Result<std::optional<TarEntry>> TarReader::Next() {
  LSB_TRY(SkipRemaining());
  PaxOverrides pax;
  std::optional<std::string> gnu_name, gnu_link;
  char b[kBlock];
  for (;;) {
    LSB_TRY(ReadFull(src_, b, kBlock, "tar archive (no end-of-archive marker)"));
    if (AllZero(b)) return std::optional<TarEntry>{};
    if (!ChecksumOk(b)) return Bad("header checksum mismatch (corrupt or not a tar archive)");
    LSB_ASSIGN_OR_RETURN(uint64_t size, Number(b + 124, 12, "size"));
    char flag = b[156];
    if (flag == 'x' || flag == 'g') {
      LSB_ASSIGN_OR_RETURN(std::string data, ReadLongValue(size, "pax header"));
      // Global headers ('g') would apply to every later entry; none of what layers carry needs
      // them, so they are parsed (sparse refused) and dropped.
      PaxOverrides global;
      LSB_TRY(ParsePax(data, flag == 'x' ? &pax : &global));
      continue;
    }
    if (flag == 'L' || flag == 'K') {
      LSB_ASSIGN_OR_RETURN(std::string data, ReadLongValue(size, flag == 'L' ? "GNU long name" : "GNU long link"));
      data.resize(strnlen(data.data(), data.size()));
      (flag == 'L' ? gnu_name : gnu_link) = std::move(data);
      continue;
    }
    TarEntry e;
    bool ustar = std::memcmp(b + 257, "ustar\0", 6) == 0;  // POSIX; GNU is "ustar  \0", no prefix
    e.name = Field(b, 100);
    if (ustar && b[345]) e.name = Field(b + 345, 155) + "/" + e.name;
    e.linkname = Field(b + 157, 100);
    if (gnu_name) e.name = *gnu_name;
    if (gnu_link) e.linkname = *gnu_link;
    if (pax.path) e.name = *pax.path;
    if (pax.linkpath) e.linkname = *pax.linkpath;
    if (pax.size) size = *pax.size;
    LSB_ASSIGN_OR_RETURN(uint64_t mode, Number(b + 100, 8, "mode"));
    LSB_ASSIGN_OR_RETURN(uint64_t mtime, Number(b + 136, 12, "mtime"));
    e.mode = static_cast<uint32_t>(mode & 07777);
    e.mtime = pax.mtime ? *pax.mtime : static_cast<int64_t>(mtime & ((uint64_t{1} << 40) - 1));
    switch (flag) {
      case '0': case '\0': case '7': e.type = TarEntry::Type::kFile; break;
      case '1': e.type = TarEntry::Type::kHardlink; break;
      case '2': e.type = TarEntry::Type::kSymlink; break;
      case '3': e.type = TarEntry::Type::kCharDev; break;
      case '4': e.type = TarEntry::Type::kBlockDev; break;
      case '5': e.type = TarEntry::Type::kDirectory; break;
      case '6': e.type = TarEntry::Type::kFifo; break;
      case 'S': return Bad("GNU sparse entry '" + e.name + "': sparse files are not supported in layers");
      default: return Bad("entry '" + e.name + "' has unsupported type '" + std::string(1, flag) + "'");
    }
    if (e.type == TarEntry::Type::kCharDev || e.type == TarEntry::Type::kBlockDev) {
      LSB_ASSIGN_OR_RETURN(uint64_t ma, Number(b + 329, 8, "devmajor"));
      LSB_ASSIGN_OR_RETURN(uint64_t mi, Number(b + 337, 8, "devminor"));
      e.dev_major = static_cast<uint32_t>(ma);
      e.dev_minor = static_cast<uint32_t>(mi);
    }
    // Only regular files carry data; a size on anything else is skipped (hardlinks may claim one).
    e.size = e.type == TarEntry::Type::kFile ? size : 0;
    remaining_ = size;
    padding_ = (kBlock - size % kBlock) % kBlock;
    if (e.type != TarEntry::Type::kFile) LSB_TRY(SkipRemaining());
    return std::optional<TarEntry>(std::move(e));
  }
}

Result<size_t> TarReader::ReadData(char* buf, size_t n) {
  if (remaining_ == 0) return size_t{0};
  size_t want = static_cast<size_t>(std::min<uint64_t>(n, remaining_));
  LSB_ASSIGN_OR_RETURN(size_t r, src_.Read(buf, want));
  if (r == 0) return Bad("truncated tar archive (entry data cut short)");
  remaining_ -= r;
  return r;
}

Status TarReader::DrainToEnd() {
  std::vector<char> buf(64 << 10);
  for (;;) {
    LSB_ASSIGN_OR_RETURN(size_t r, src_.Read(buf.data(), buf.size()));
    if (r == 0) return OkStatus();
  }
}

}  // namespace lsb::image
