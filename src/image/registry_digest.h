// SHA-256 over a stream of bytes (OpenSSL's, which uses the CPU's SHA extensions: hashing must
// not be what makes a pull slower than `docker pull`), for verifying blobs as they arrive.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::image::registry {

class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(const void* data, size_t n);
  void Reset();
  // "sha256:<64 lowercase hex>"; the stream is reset afterwards.
  std::string FinishDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string Sha256Digest(std::string_view data);
// Hashes the file at `path` (to resume: the bytes already on disk), feeding `into`.
Status HashFileInto(const std::string& path, Sha256Stream& into, uint64_t* size);

}  // namespace lsb::image::registry
