#include "base/random_id.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <vector>

namespace lsb {
namespace {

bool FillRandom(unsigned char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(p + got, n - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r < 0 && errno != EINTR) break;
  }
  if (got == n) return true;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r == 0 || errno != EINTR) break;
  }
  ::close(fd);
  return got == n;
}

}  // namespace

std::string RandomHex(const std::string& prefix, size_t bytes) {
  std::vector<unsigned char> r(bytes);
  if (!FillRandom(r.data(), bytes)) {
    static std::atomic<uint64_t> counter{0};
    uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                 (++counter * 0x9e3779b97f4a7c15ULL);
    for (size_t i = 0; i < bytes; ++i) r[i] = static_cast<unsigned char>((t >> (8 * (i % 8))) ^ (i * 131));
  }
  static const char kDigits[] = "0123456789abcdef";
  std::string out = prefix;
  out.reserve(prefix.size() + 2 * bytes);
  for (unsigned char c : r) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

}  // namespace lsb
