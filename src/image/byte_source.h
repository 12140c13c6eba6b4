// A pull-style byte stream: the layer pipeline is file -> decompressor -> hasher -> tar reader,
// each a ByteSource reading from the one below, so a layer is hashed and unpacked in one pass.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/result.h"
#include "base/sha256.h"
#include "base/unique_fd.h"

namespace lsb::image {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into buf; 0 only at the end of the stream.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

// Reads exactly n bytes; a short stream is an error naming `what` ("truncated ...").
Status ReadFull(ByteSource& src, char* buf, size_t n, const char* what);

// A file, read from its current offset; counts the bytes read.
class FdSource : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  Result<size_t> Read(char* buf, size_t n) override;
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  int fd_;
  uint64_t bytes_read_ = 0;
};

// Passes bytes through and hashes them: the diff_id of a layer is the SHA-256 of what the tar
// reader consumed, so the digest covers exactly the bytes that were unpacked.
class HashingSource : public ByteSource {
 public:
  explicit HashingSource(ByteSource& inner) : inner_(inner) {}
  Result<size_t> Read(char* buf, size_t n) override;
  uint64_t bytes() const { return bytes_; }
  Digest Finish() { return hasher_.Finish(); }

 private:
  ByteSource& inner_;
  Sha256Hasher hasher_;
  uint64_t bytes_ = 0;
};

// "sha256:<hex>" of everything `fd` has from its current offset to its end.
Result<std::string> Sha256OfFd(int fd, uint64_t* size = nullptr);

}  // namespace lsb::image
