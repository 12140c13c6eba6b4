#include "image/byte_source.h"

#include <unistd.h>

#include <cerrno>
#include <vector>

namespace lsb::image {

Status ReadFull(ByteSource& src, char* buf, size_t n, const char* what) {
  size_t got = 0;
  while (got < n) {
    LSB_ASSIGN_OR_RETURN(size_t r, src.Read(buf + got, n - got));
    if (r == 0) return Error{ErrorCode::kInvalidArgument, std::string("truncated ") + what};
    got += r;
  }
  return OkStatus();
}

Result<size_t> FdSource::Read(char* buf, size_t n) {
  for (;;) {
    ssize_t r = ::read(fd_, buf, n);
    if (r >= 0) {
      bytes_read_ += static_cast<uint64_t>(r);
      return static_cast<size_t>(r);
    }
    if (errno != EINTR) return Error::FromErrno("read");
  }
}

Result<size_t> HashingSource::Read(char* buf, size_t n) {
  LSB_ASSIGN_OR_RETURN(size_t r, inner_.Read(buf, n));
  hasher_.Update(buf, r);
  bytes_ += r;
  return r;
}

Result<std::string> Sha256OfFd(int fd, uint64_t* size) {
  FdSource src(fd);
  HashingSource hash(src);
  std::vector<char> buf(1 << 20);
  for (;;) {
    LSB_ASSIGN_OR_RETURN(size_t r, hash.Read(buf.data(), buf.size()));
    if (r == 0) break;
  }
  if (size) *size = hash.bytes();
  return "sha256:" + Hex(hash.Finish());
}

}  // namespace lsb::image
