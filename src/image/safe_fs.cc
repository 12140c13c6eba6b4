#include "image/safe_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/io.h"
#include "base/random_id.h"

namespace lsb::image {
namespace {

Error Refuse(std::string_view name, const std::string& why) {
  return Error{ErrorCode::kPermissionDenied, "entry '" + std::string(name.substr(0, 256)) + "': " + why};
}

}  // namespace

Result<std::vector<std::string>> SplitEntryPath(std::string_view name, size_t max_bytes, size_t max_depth) {
  if (name.size() > max_bytes)
    return Error{ErrorCode::kInvalidArgument, "entry name of " + std::to_string(name.size()) +
                                                  " bytes exceeds the limit of " + std::to_string(max_bytes)};
  if (!name.empty() && name[0] == '/') return Refuse(name, "absolute paths are refused in layers");
  std::vector<std::string> comps;
  size_t pos = 0;
  while (pos <= name.size()) {
    size_t slash = name.find('/', pos);
    if (slash == std::string_view::npos) slash = name.size();
    std::string_view c = name.substr(pos, slash - pos);
    pos = slash + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") return Refuse(name, "'..' is refused in layer paths (it could escape the layer)");
    if (c.size() > 255) return Refuse(name, "a path component is longer than 255 bytes");
    if (c.find('\0') != std::string_view::npos) return Refuse(name, "NUL in a path");
    comps.emplace_back(c);
    if (comps.size() > max_depth)
      return Error{ErrorCode::kInvalidArgument, "entry '" + std::string(name.substr(0, 256)) + "' is nested deeper than " +
                                                    std::to_string(max_depth) + " directories"};
  }
  return comps;
}

std::string JoinPath(const std::vector<std::string>& comps, size_t count) {
  std::string s;
  for (size_t i = 0; i < count && i < comps.size(); ++i) {
    if (i) s += '/';
    s += comps[i];
  }
  return s;
}

Result<UniqueFd> OpenDirBeneath(int root, const std::vector<std::string>& comps, size_t count, bool create) {
  UniqueFd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (!cur) return Error::FromErrno("dup");
  for (size_t i = 0; i < count; ++i) {
    const char* c = comps[i].c_str();
    int fd = ::openat(cur.get(), c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(cur.get(), c, 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + JoinPath(comps, i + 1));
      fd = ::openat(cur.get(), c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      int err = errno;
      struct stat st {};
      if ((err == ELOOP || err == ENOTDIR) && ::fstatat(cur.get(), c, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
          return Refuse(JoinPath(comps, comps.size()), "'" + JoinPath(comps, i + 1) +
                                                           "' is a symlink; writing through it is refused");
        return Refuse(JoinPath(comps, comps.size()), "'" + JoinPath(comps, i + 1) + "' is not a directory");
      }
      return Error::FromErrno("open " + JoinPath(comps, i + 1), err);
    }
    cur.reset(fd);
  }
  return cur;
}

Status RemoveTree(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? OkStatus() : Error::FromErrno("stat " + name);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) return Error::FromErrno("unlink " + name);
    return OkStatus();
  }
  int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("open " + name);
  (void)::fchmod(fd, 0700);  // ours to remove, whatever mode the archive gave it
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return Error::FromErrno("opendir " + name);
  }
  std::vector<std::string> children;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") children.emplace_back(n);
  }
  Status st_children = OkStatus();
  for (const auto& c : children) {
    Status s = RemoveTree(::dirfd(d), c);
    if (!s.ok()) {
      st_children = s.error().Wrap(name);
      break;
    }
  }
  ::closedir(d);
  LSB_TRY(st_children);
  if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return Error::FromErrno("rmdir " + name);
  return OkStatus();
}

Status WriteFileAtomic(int dir, const std::string& name, std::string_view data, mode_t mode) {
  std::string tmp = "." + name + ".tmp-" + RandomHex("", 8);
  UniqueFd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return Error::FromErrno("create " + tmp);
  Status w = WriteAll(fd.get(), data);
  if (w.ok() && ::fsync(fd.get()) != 0) w = Error::FromErrno("fsync " + tmp);
  if (w.ok() && ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) w = Error::FromErrno("rename " + name);
  if (!w.ok()) {
    ::unlinkat(dir, tmp.c_str(), 0);
    return w.error().Wrap("write " + name);
  }
  (void)::fsync(dir);
  return OkStatus();
}

Result<std::string> ReadFileAt(int dir, const std::string& name, size_t max_bytes) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + name);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno("stat " + name);
  if (!S_ISREG(st.st_mode)) return Error{ErrorCode::kInvalidArgument, name + " is not a regular file"};
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Error{ErrorCode::kResourceExhausted,
                 name + " has " + std::to_string(st.st_size) + " bytes, more than the limit of " + std::to_string(max_bytes)};
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::read(fd.get(), out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Error::FromErrno("read " + name);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

Status MakeDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string dir = slash == std::string::npos ? path : path.substr(0, slash);
    if (!dir.empty() && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + dir);
    if (slash == std::string::npos) break;
  }
  return OkStatus();
}

Result<UniqueFd> OpenDir(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path);
  return fd;
}

}  // namespace lsb::image
