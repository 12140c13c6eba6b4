#include "base/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"

namespace lsb {

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("write");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

Status ReadExact(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("read");
    }
    if (r == 0) return got == 0 ? Error::Eof() : Error{"unexpected eof in the middle of a frame"};
    got += static_cast<size_t>(r);
  }
  return OkStatus();
}

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t r = ::read(fd.get(), buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("read " + path);
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

Status WriteFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path + " for writing");
  auto st = WriteAll(fd.get(), data);
  if (!st.ok()) return st.error().Wrap(path);
  return OkStatus();
}

}  // namespace lsb
