#include "image/layer_unpack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <unordered_set>
#include <vector>

#include "base/io.h"
#include "image/safe_fs.h"
#include "image/tar_reader.h"

namespace lsb::image {
namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

// Counts the uncompressed stream against the layer byte bound and the expansion ratio, so a
// bomb is stopped while it inflates, not after it filled the disk.
class BoundedSource : public ByteSource {
 public:
  BoundedSource(ByteSource& inner, const FdSource& raw, const UnpackLimits& limits)
      : inner_(inner), raw_(raw), limits_(limits) {}
  Result<size_t> Read(char* buf, size_t n) override {
    LSB_ASSIGN_OR_RETURN(size_t r, inner_.Read(buf, n));
    bytes_ += r;
    if (bytes_ > limits_.max_layer_bytes)
      return Error{ErrorCode::kResourceExhausted, "layer expands past the limit of " +
                                                      std::to_string(limits_.max_layer_bytes) + " bytes"};
    if (bytes_ > limits_.ratio_grace_bytes && raw_.bytes_read() > 0 &&
        bytes_ / raw_.bytes_read() > limits_.max_expansion_ratio)
      return Error{ErrorCode::kResourceExhausted,
                   "layer expands more than " + std::to_string(limits_.max_expansion_ratio) +
                       " times its compressed size (a decompression bomb?)"};
    return r;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  ByteSource& inner_;
  const FdSource& raw_;
  const UnpackLimits& limits_;
  uint64_t bytes_ = 0;
};

Error Refused(const std::string& name, const std::string& why) {
  return Error{ErrorCode::kPermissionDenied, "entry '" + name.substr(0, 256) + "': " + why};
}

// Strips setuid/setgid/sticky and group/other write: the store's files must not be writable by
// other host users, and a read-only lower layer gives those bits no meaning anyway.
mode_t SafeMode(uint32_t mode) { return static_cast<mode_t>(mode & 0755); }

class Unpacker {
 public:
  Unpacker(int root, const UnpackLimits& limits) : root_(root), limits_(limits) {}

  Status Entry(TarReader& tar, const TarEntry& e, LayerStats* stats);

 private:
  Status ClearForNew(int parent, const std::string& base, bool new_is_dir);
  Status WriteFile(TarReader& tar, int parent, const std::string& base, const TarEntry& e, LayerStats* stats);
  Status Hardlink(int parent, const std::string& base, const std::string& path, const TarEntry& e);
  Status Whiteout(int parent, const std::string& base, const std::string& path, LayerStats* stats);
  Status Opaque(int dir, const std::string& path);

  int root_;
  const UnpackLimits& limits_;
  std::unordered_set<std::string> files_;  // regular files extracted so far: valid hardlink targets
};

Status Unpacker::ClearForNew(int parent, const std::string& base, bool new_is_dir) {
  struct stat st {};
  if (::fstatat(parent, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return OkStatus();
  if (new_is_dir && S_ISDIR(st.st_mode)) return OkStatus();  // a directory listed twice: keep it
  return RemoveTree(parent, base);  // a later entry replaces an earlier one, as tar does
}

Status Unpacker::WriteFile(TarReader& tar, int parent, const std::string& base, const TarEntry& e,
                           LayerStats* stats) {
  if (e.size > limits_.max_layer_bytes - std::min(limits_.max_layer_bytes, stats->content_bytes))
    return Error{ErrorCode::kResourceExhausted, "entry '" + e.name.substr(0, 256) + "' claims " + std::to_string(e.size) +
                                                    " bytes, past the layer limit of " +
                                                    std::to_string(limits_.max_layer_bytes)};
  UniqueFd fd(::openat(parent, base.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno("create " + e.name.substr(0, 256));
  std::vector<char> buf(256 << 10);
  for (;;) {
    LSB_ASSIGN_OR_RETURN(size_t r, tar.ReadData(buf.data(), buf.size()));
    if (r == 0) break;
    LSB_TRY(WriteAll(fd.get(), std::string_view(buf.data(), r)));
    stats->content_bytes += r;
  }
  if (::fchmod(fd.get(), SafeMode(e.mode)) != 0) return Error::FromErrno("chmod " + e.name.substr(0, 256));
  // Keep the archive's mtime: Python compares a source's mtime with its .pyc and would
  // otherwise recompile every module on each start (on a read-only root, every time).
  timespec times[2] = {{e.mtime, 0}, {e.mtime, 0}};
  (void)::futimens(fd.get(), times);
  return OkStatus();
}

Status Unpacker::Hardlink(int parent, const std::string& base, const std::string& path, const TarEntry& e) {
  LSB_ASSIGN_OR_RETURN(auto target, SplitEntryPath(e.linkname, limits_.max_path_bytes, limits_.max_path_depth));
  if (target.empty()) return Refused(path, "hardlink to the layer root");
  std::string target_path = JoinPath(target, target.size());
  if (!files_.count(target_path))
    return Refused(path, "hardlink target '" + target_path.substr(0, 256) +
                             "' is not a regular file extracted earlier in this layer");
  LSB_ASSIGN_OR_RETURN(UniqueFd tparent, OpenDirBeneath(root_, target, target.size() - 1, false));
  struct stat st {};
  if (::fstatat(tparent.get(), target.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
    return Refused(path, "hardlink target '" + target_path.substr(0, 256) + "' is not a regular file");
  if (::linkat(tparent.get(), target.back().c_str(), parent, base.c_str(), 0) != 0)
    return Error::FromErrno("link " + path.substr(0, 256));
  files_.insert(path);
  return OkStatus();
}

Status Unpacker::Whiteout(int parent, const std::string& base, const std::string& path, LayerStats* stats) {
  std::string hidden = base.substr(kWhiteoutPrefix.size());
  if (hidden.empty() || hidden == "." || hidden == "..") return Refused(path, "malformed whiteout");
  if (hidden.rfind(kWhiteoutPrefix, 0) == 0) return OkStatus();  // .wh..wh.* (aufs metadata): not ours
  LSB_TRY(ClearForNew(parent, hidden, false));
  // overlayfs reads a 0:0 character device as "deleted here"; the kernel lets any user make one.
  if (::mknodat(parent, hidden.c_str(), S_IFCHR | 0, makedev(0, 0)) != 0)
    return Error::FromErrno("whiteout " + path.substr(0, 256) + " (mknod 0:0)");
  ++stats->whiteouts;
  return OkStatus();
}

Status Unpacker::Opaque(int dir, const std::string& path) {
  if (::fsetxattr(dir, "user.overlay.opaque", "y", 1, 0) != 0)
    return Error::FromErrno("opaque whiteout " + path.substr(0, 256) + " (setxattr user.overlay.opaque)");
  if (::geteuid() == 0) (void)::fsetxattr(dir, "trusted.overlay.opaque", "y", 1, 0);
  return OkStatus();
}

Status Unpacker::Entry(TarReader& tar, const TarEntry& e, LayerStats* stats) {
  LSB_ASSIGN_OR_RETURN(auto comps, SplitEntryPath(e.name, limits_.max_path_bytes, limits_.max_path_depth));
  if (comps.empty()) return OkStatus();  // "./": the layer root itself
  const std::string path = JoinPath(comps, comps.size());
  const std::string& base = comps.back();
  LSB_ASSIGN_OR_RETURN(UniqueFd parent, OpenDirBeneath(root_, comps, comps.size() - 1, true));
  if (base == kOpaqueMarker) {
    ++stats->whiteouts;
    return Opaque(parent.get(), path);
  }
  if (base.rfind(kWhiteoutPrefix, 0) == 0) return Whiteout(parent.get(), base, path, stats);
  files_.erase(path);
  switch (e.type) {
    case TarEntry::Type::kDirectory: {
      LSB_TRY(ClearForNew(parent.get(), base, true));
      if (::mkdirat(parent.get(), base.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + path);
      LSB_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirBeneath(parent.get(), {base}, 1, false));
      if (::fchmod(dir.get(), SafeMode(e.mode) | 0700) != 0) return Error::FromErrno("chmod " + path);
      return OkStatus();
    }
    case TarEntry::Type::kFile:
      LSB_TRY(ClearForNew(parent.get(), base, false));
      LSB_TRY(WriteFile(tar, parent.get(), base, e, stats));
      files_.insert(path);
      return OkStatus();
    case TarEntry::Type::kSymlink: {
      if (e.linkname.empty() || e.linkname.size() > limits_.max_path_bytes) return Refused(path, "bad symlink target");
      LSB_TRY(ClearForNew(parent.get(), base, false));
      if (::symlinkat(e.linkname.c_str(), parent.get(), base.c_str()) != 0) return Error::FromErrno("symlink " + path);
      timespec times[2] = {{e.mtime, 0}, {e.mtime, 0}};
      (void)::utimensat(parent.get(), base.c_str(), times, AT_SYMLINK_NOFOLLOW);
      return OkStatus();
    }
    case TarEntry::Type::kHardlink:
      LSB_TRY(ClearForNew(parent.get(), base, false));
      return Hardlink(parent.get(), base, path, e);
    case TarEntry::Type::kCharDev:
    case TarEntry::Type::kBlockDev:
    case TarEntry::Type::kFifo:
      ++stats->skipped_special;  // never created: a box's /dev comes from the runtime
      return OkStatus();
  }
  return OkStatus();
}

}  // namespace

Result<LayerStats> UnpackLayer(int blob_fd, int dest_dir_fd, const UnpackLimits& limits) {
  LayerStats stats;
  LSB_ASSIGN_OR_RETURN(stats.compression, SniffCompression(blob_fd));
  if (::lseek(blob_fd, 0, SEEK_SET) < 0) return Error::FromErrno("seek layer");
  FdSource raw(blob_fd);
  auto decompressed = Decompressor(stats.compression, raw);
  BoundedSource bounded(*decompressed, raw, limits);
  HashingSource hashed(bounded);
  TarReader tar(hashed, limits);
  Unpacker unpacker(dest_dir_fd, limits);
  for (;;) {
    LSB_ASSIGN_OR_RETURN(auto entry, tar.Next());
    if (!entry) break;
    if (++stats.entries > limits.max_entries)
      return Error{ErrorCode::kResourceExhausted,
                   "layer has more than " + std::to_string(limits.max_entries) + " entries"};
    LSB_TRY(unpacker.Entry(tar, *entry, &stats));
  }
  LSB_TRY(tar.DrainToEnd());
  stats.compressed_bytes = raw.bytes_read();
  stats.tar_bytes = hashed.bytes();
  stats.diff_id = "sha256:" + Hex(hashed.Finish());
  return stats;
}

}  // namespace lsb::image
