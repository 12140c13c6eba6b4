#include "image/layer_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace lsb::image {
namespace {

constexpr int kMaxDepth = 256;

void Octal(char* field, size_t width, uint64_t value) {
  // width-1 digits and a NUL, as ustar writes them.
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i-- > 0 && value;) {
    digits[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = 0;
}

std::string PaxRecord(const std::string& key, const std::string& value) {
  // "LEN key=value\n", LEN counting itself.
  std::string body = " " + key + "=" + value + "\n";
  size_t len = body.size() + 1;
  while (std::to_string(len).size() + body.size() != len) ++len;
  return std::to_string(len) + body;
}

// The names in `dir_fd`, sorted (a layer of the same tree is the same bytes).
Result<std::vector<std::string>> ListDir(int dir_fd) {
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("open a directory to list it");
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return Error::FromErrno("fdopendir");
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Status LayerTarWriter::Write(const void* data, size_t n) {
  if (written_ + n > limits_.max_bytes)
    return Error{"the layer would exceed " + std::to_string(limits_.max_bytes >> 20) + " MiB"};
  hash_.Update(data, n);
  const char* p = static_cast<const char*>(data);
  while (n) {
    ssize_t w = ::write(out_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Error::FromErrno("write the layer");
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  return OkStatus();
}

Status LayerTarWriter::Entry() {
  if (++entries_ > limits_.max_entries)
    return Error{"the layer would have more than " + std::to_string(limits_.max_entries) + " entries"};
  return OkStatus();
}

Status LayerTarWriter::Header(const std::string& name, char type, uint64_t size, uint32_t mode, int64_t mtime,
                              const std::string& link) {
  LSB_TRY(Entry());
  std::string pax;
  if (name.size() > 99) pax += PaxRecord("path", name);
  if (link.size() > 99) pax += PaxRecord("linkpath", link);
  if (size > 077777777777ull) pax += PaxRecord("size", std::to_string(size));
  auto block = [&](const std::string& n, char t, uint64_t sz, const std::string& l) -> Status {
    char h[512] = {};
    std::memcpy(h, n.data(), std::min<size_t>(n.size(), 99));
    Octal(h + 100, 8, mode & 07777);
    Octal(h + 108, 8, 0);
    Octal(h + 116, 8, 0);
    Octal(h + 124, 12, sz > 077777777777ull ? 0 : sz);
    Octal(h + 136, 12, mtime < 0 ? 0 : static_cast<uint64_t>(mtime));
    h[156] = t;
    std::memcpy(h + 157, l.data(), std::min<size_t>(l.size(), 99));
    std::memcpy(h + 257, "ustar", 6);
    h[263] = '0';
    h[264] = '0';
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    Octal(h + 148, 7, sum);
    h[155] = ' ';
    return Write(h, sizeof h);
  };
  if (!pax.empty()) {
    LSB_TRY(block("PaxHeader", 'x', pax.size(), ""));
    LSB_TRY(Write(pax.data(), pax.size()));
    static const char zeros[512] = {};
    if (pax.size() % 512) LSB_TRY(Write(zeros, 512 - pax.size() % 512));
  }
  return block(name, type, size, link);
}

Status LayerTarWriter::AddDir(const std::string& name, uint32_t mode, int64_t mtime) {
  return Header(name + "/", '5', 0, mode & 0755, mtime);
}

Status LayerTarWriter::AddFile(const std::string& name, int fd, uint32_t mode, int64_t mtime, uint64_t size) {
  LSB_TRY(Header(name, '0', size, mode & 0755, mtime));
  char buf[1 << 16];
  uint64_t left = size;
  while (left) {
    ssize_t n = ::read(fd, buf, std::min<uint64_t>(left, sizeof buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("read " + name);
    if (n == 0) return Error{name + " shrank while it was written into the layer"};
    LSB_TRY(Write(buf, static_cast<size_t>(n)));
    left -= static_cast<uint64_t>(n);
  }
  static const char zeros[512] = {};
  if (size % 512) LSB_TRY(Write(zeros, 512 - size % 512));
  return OkStatus();
}

Status LayerTarWriter::AddTree(int dir_fd, const std::string& prefix, bool overlay_upper, bool refuse_symlinks) {
  if (++depth_ > kMaxDepth) return Error{"the tree is more than 256 directories deep at " + prefix};
  struct DepthGuard {
    int& d;
    ~DepthGuard() { --d; }
  } guard{depth_};
  LSB_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir_fd));
  for (const std::string& n : names) {
    const std::string name = prefix.empty() ? n : prefix + "/" + n;
    struct stat st {};
    if (::fstatat(dir_fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Error::FromErrno("stat " + name);
    if (S_ISDIR(st.st_mode)) {
      // The box may have left a directory we cannot read (mode 000): it is ours, so make it readable.
      UniqueFd sub(::openat(dir_fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub && errno == EACCES && ::fchmodat(dir_fd, n.c_str(), (st.st_mode & 07777) | 0700, 0) == 0)
        sub = UniqueFd(::openat(dir_fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) return Error::FromErrno("open directory " + name);
      LSB_TRY(AddDir(name, st.st_mode | 0700, st.st_mtime));
      if (overlay_upper) {
        char v[4] = {};
        ssize_t len = ::fgetxattr(sub.get(), "user.overlay.opaque", v, sizeof v);
        if (len == 1 && v[0] == 'y') LSB_TRY(Header(name + "/.wh..wh..opq", '0', 0, 0644, st.st_mtime));
      }
      LSB_TRY(AddTree(sub.get(), name, overlay_upper, refuse_symlinks));
    } else if (S_ISREG(st.st_mode)) {
      UniqueFd f(::openat(dir_fd, n.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
      if (!f && errno == EACCES && ::fchmodat(dir_fd, n.c_str(), (st.st_mode & 07777) | 0400, 0) == 0)
        f = UniqueFd(::openat(dir_fd, n.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
      if (!f) return Error::FromErrno("open " + name);
      struct stat fst {};
      if (::fstat(f.get(), &fst) != 0 || !S_ISREG(fst.st_mode)) return Error{name + " changed while it was read"};
      LSB_TRY(AddFile(name, f.get(), fst.st_mode, fst.st_mtime, static_cast<uint64_t>(fst.st_size)));
    } else if (S_ISLNK(st.st_mode)) {
      if (refuse_symlinks)
        return Error{"'" + name + "' is a symbolic link; build.files copies regular files and directories only"};
      std::string target(4096, '\0');
      ssize_t len = ::readlinkat(dir_fd, n.c_str(), target.data(), target.size());
      if (len < 0 || static_cast<size_t>(len) >= target.size()) return Error::FromErrno("readlink " + name);
      target.resize(static_cast<size_t>(len));
      LSB_TRY(Header(name, '2', 0, 0777, st.st_mtime, target));
    } else if (overlay_upper && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
      LSB_TRY(Header(prefix.empty() ? ".wh." + n : prefix + "/.wh." + n, '0', 0, 0644, st.st_mtime));
    } else if (refuse_symlinks) {
      return Error{"'" + name + "' is not a regular file or directory"};
    }
    // Other devices, FIFOs, sockets: skipped (the store would skip them too).
  }
  return OkStatus();
}

Result<std::string> LayerTarWriter::Finish() {
  static const char zeros[1024] = {};
  LSB_TRY(Write(zeros, sizeof zeros));
  return "sha256:" + Hex(hash_.Finish());
}

}  // namespace lsb::image
