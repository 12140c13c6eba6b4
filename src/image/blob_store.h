// <store>/blobs/sha256/<hex>: content-addressed blobs. A blob file appears there only by rename
// after its bytes were hashed and matched its digest (and its size, where a descriptor gives one),
// so a blob present is a blob verified.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::image {

class BlobStore {
 public:
  BlobStore() = default;
  BlobStore(UniqueFd dir, std::string path) : dir_(std::move(dir)), path_(std::move(path)) {}

  bool Has(const std::string& digest) const;
  Result<UniqueFd> Open(const std::string& digest) const;
  Result<uint64_t> Size(const std::string& digest) const;
  // A small blob (manifest, config), re-hashed on every read: kInvalidArgument if it no longer matches.
  Result<std::string> ReadVerified(const std::string& digest, size_t max_bytes) const;

  // Copies `src` (read from offset 0) in via a temp file in `tmp_dir_fd`, verifying digest and
  // size (`expected_size` < 0: unknown). Nothing to do when the blob is present.
  Status AddFromFd(int src, const std::string& digest, int64_t expected_size, int tmp_dir_fd);
  // Moves `name` in `src_dir` in (same file system, our own temp file) after verifying it.
  Status AdoptFile(int src_dir, const std::string& name, const std::string& digest, int64_t expected_size);
  // Writes `data` as the blob `digest` (which must be its sha256).
  Status AddBytes(const std::string& data, const std::string& digest, int tmp_dir_fd);
  Status Remove(const std::string& digest);

  std::string PathOf(const std::string& digest) const { return path_ + "/" + Hex(digest); }
  int dir_fd() const { return dir_.get(); }
  // "<hex>" of "sha256:<hex>".
  static std::string Hex(const std::string& digest) { return digest.substr(7); }

 private:
  Status Commit(int tmp_dir, const std::string& tmp_name, const std::string& digest);
  UniqueFd dir_;
  std::string path_;
};

// The mismatch message every verification uses, naming what was expected and what was found.
Error DigestMismatch(const std::string& what, const std::string& expected, const std::string& actual);

}  // namespace lsb::image
