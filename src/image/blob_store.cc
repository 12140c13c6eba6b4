#include "image/blob_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "base/io.h"
#include "base/random_id.h"
#include "base/sha256.h"
#include "image/byte_source.h"
#include "image/reference.h"
#include "image/safe_fs.h"

namespace lsb::image {

Error DigestMismatch(const std::string& what, const std::string& expected, const std::string& actual) {
  return Error{ErrorCode::kInvalidArgument, what + ": content does not match its digest (expected " + expected +
                                                ", got " + actual + "); the source is corrupt or was tampered with"};
}

bool BlobStore::Has(const std::string& digest) const {
  if (!IsSha256Digest(digest)) return false;
  struct stat st {};
  return ::fstatat(dir_.get(), Hex(digest).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

Result<UniqueFd> BlobStore::Open(const std::string& digest) const {
  if (!IsSha256Digest(digest)) return Error::InvalidArgument("digest", "not a sha256 digest: " + digest.substr(0, 80));
  UniqueFd fd(::openat(dir_.get(), Hex(digest).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    Error e = Error::FromErrno("blob " + digest);
    if (errno == ENOENT) e = Error{ErrorCode::kNotFound, "blob " + digest + " is not in the image store"};
    return e;
  }
  return fd;
}

Result<uint64_t> BlobStore::Size(const std::string& digest) const {
  struct stat st {};
  if (::fstatat(dir_.get(), Hex(digest).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Error::FromErrno("stat blob " + digest);
  return static_cast<uint64_t>(st.st_size);
}

Result<std::string> BlobStore::ReadVerified(const std::string& digest, size_t max_bytes) const {
  if (!IsSha256Digest(digest)) return Error::InvalidArgument("digest", "not a sha256 digest: " + digest.substr(0, 80));
  auto data = ReadFileAt(dir_.get(), Hex(digest), max_bytes);
  if (!data.ok()) {
    if (data.error().IsNotFound()) return Error{ErrorCode::kNotFound, "blob " + digest + " is not in the image store"};
    return data.error().Wrap("blob " + digest);
  }
  std::string actual = "sha256:" + lsb::Hex(Sha256(*data));
  if (actual != digest) return DigestMismatch("blob", digest, actual);
  return data;
}

Status BlobStore::Commit(int tmp_dir, const std::string& tmp_name, const std::string& digest) {
  if (::renameat(tmp_dir, tmp_name.c_str(), dir_.get(), Hex(digest).c_str()) != 0)
    return Error::FromErrno("store blob " + digest);
  (void)::fsync(dir_.get());
  return OkStatus();
}

Status BlobStore::AddFromFd(int src, const std::string& digest, int64_t expected_size, int tmp_dir_fd) {
  if (!IsSha256Digest(digest)) return Error::InvalidArgument("digest", "not a sha256 digest: " + digest.substr(0, 80));
  if (Has(digest)) return OkStatus();
  if (::lseek(src, 0, SEEK_SET) < 0) return Error::FromErrno("seek blob " + digest);
  std::string tmp = "blob-" + RandomHex("", 8);
  UniqueFd out(::openat(tmp_dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!out) return Error::FromErrno("create temp blob");
  FdSource in(src);
  Sha256Hasher hasher;
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  Status st = OkStatus();
  for (;;) {
    auto r = in.Read(buf.data(), buf.size());
    if (!r.ok()) { st = r.error(); break; }
    if (*r == 0) break;
    total += *r;
    if (expected_size >= 0 && total > static_cast<uint64_t>(expected_size)) {
      st = Error{ErrorCode::kInvalidArgument, "blob " + digest + " is larger than its descriptor's size " +
                                                  std::to_string(expected_size)};
      break;
    }
    hasher.Update(buf.data(), *r);
    st = WriteAll(out.get(), std::string_view(buf.data(), *r));
    if (!st.ok()) break;
  }
  std::string actual = "sha256:" + lsb::Hex(hasher.Finish());
  if (st.ok() && expected_size >= 0 && total != static_cast<uint64_t>(expected_size))
    st = Error{ErrorCode::kInvalidArgument, "blob " + digest + " has " + std::to_string(total) +
                                                " bytes, its descriptor says " + std::to_string(expected_size)};
  if (st.ok() && actual != digest) st = DigestMismatch("blob", digest, actual);
  if (st.ok() && ::fsync(out.get()) != 0) st = Error::FromErrno("fsync blob");
  if (st.ok()) st = Commit(tmp_dir_fd, tmp, digest);
  if (!st.ok()) ::unlinkat(tmp_dir_fd, tmp.c_str(), 0);
  return st;
}

Status BlobStore::AdoptFile(int src_dir, const std::string& name, const std::string& digest, int64_t expected_size) {
  if (!IsSha256Digest(digest)) return Error::InvalidArgument("digest", "not a sha256 digest: " + digest.substr(0, 80));
  if (Has(digest)) return OkStatus();
  UniqueFd fd(::openat(src_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + name);
  uint64_t size = 0;
  LSB_ASSIGN_OR_RETURN(std::string actual, Sha256OfFd(fd.get(), &size));
  if (expected_size >= 0 && size != static_cast<uint64_t>(expected_size))
    return Error{ErrorCode::kInvalidArgument, "blob " + digest + " has " + std::to_string(size) +
                                                  " bytes, its descriptor says " + std::to_string(expected_size)};
  if (actual != digest) return DigestMismatch("blob", digest, actual);
  if (::fsync(fd.get()) != 0) return Error::FromErrno("fsync blob");
  if (::renameat(src_dir, name.c_str(), dir_.get(), Hex(digest).c_str()) != 0) {
    if (errno == EXDEV) return Error{ErrorCode::kIo, "blob on another file system", "", EXDEV};
    return Error::FromErrno("store blob " + digest);
  }
  (void)::fsync(dir_.get());
  return OkStatus();
}

Status BlobStore::AddBytes(const std::string& data, const std::string& digest, int tmp_dir_fd) {
  std::string actual = "sha256:" + lsb::Hex(Sha256(data));
  if (actual != digest) return DigestMismatch("blob", digest, actual);
  if (Has(digest)) return OkStatus();
  std::string tmp = "blob-" + RandomHex("", 8);
  LSB_TRY(WriteFileAtomic(tmp_dir_fd, tmp, data));
  return Commit(tmp_dir_fd, tmp, digest);
}

Status BlobStore::Remove(const std::string& digest) {
  if (::unlinkat(dir_.get(), Hex(digest).c_str(), 0) != 0 && errno != ENOENT) return Error::FromErrno("remove blob " + digest);
  return OkStatus();
}

}  // namespace lsb::image
