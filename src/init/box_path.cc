#include "init/box_path.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lsb::init {

Error PathError(std::string_view path, int err) {
  std::string what = err == ELOOP ? "a symbolic link in the path (links are not followed)" : std::strerror(err);
  return Error{std::string(path) + ": " + what, err};
}

Status CheckBoxPath(std::string_view path) {
  auto bad = [&](const char* why) { return Error{"\"" + std::string(path) + "\" " + why, EINVAL}; };
  if (path.empty() || path[0] != '/') return bad("is not an absolute path");
  if (path.size() >= PATH_MAX) return bad("is longer than PATH_MAX");
  if (path.find('\0') != std::string_view::npos) return bad("has a NUL byte");
  if (path == "/") return OkStatus();
  size_t at = 1;
  for (;;) {
    size_t end = path.find('/', at);
    std::string_view comp = path.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (comp.empty() || comp == "." || comp == "..")
      return bad("is not normalized (an empty, \".\" or \"..\" component)");
    if (end == std::string_view::npos) return OkStatus();
    at = end + 1;
  }
}

namespace {

// One step down from `dir` to the directory `name`; ELOOP when `name` is a link.
int StepInto(int dir, const std::string& name, bool create) {
  int fd = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (::mkdirat(dir, name.c_str(), 0755) != 0 && errno != EEXIST) return -1;
    fd = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0 && errno == ENOTDIR) {
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) errno = ELOOP;
  }
  return fd;
}

}  // namespace

Result<UniqueFd> OpenBoxDir(std::string_view path, bool create) {
  LSB_TRY(CheckBoxPath(path));
  UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return PathError("/", errno);
  size_t at = 1;
  while (at < path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    UniqueFd next(StepInto(dir.get(), std::string(path.substr(at, end - at)), create));
    if (!next) return PathError(path.substr(0, end), errno);
    dir = std::move(next);
    at = end + 1;
  }
  return dir;
}

Result<ParentAndName> OpenBoxParent(std::string_view path, bool create_parents) {
  LSB_TRY(CheckBoxPath(path));
  if (path == "/") return Error{"\"/\" has no parent directory: name a path under it", EINVAL};
  size_t slash = path.rfind('/');
  LSB_ASSIGN_OR_RETURN(UniqueFd dir, OpenBoxDir(slash == 0 ? "/" : path.substr(0, slash), create_parents));
  return ParentAndName{std::move(dir), std::string(path.substr(slash + 1))};
}

}  // namespace lsb::init
