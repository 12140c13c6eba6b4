#include "init/caller_path.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace lsb::init {
namespace {

constexpr int kMaxSymlinks = 40;    // the kernel's MAXSYMLINKS
constexpr ino_t kProcRootIno = 1;   // PROC_ROOT_INO: the root directory of every procfs

Error Fail(int err, const std::string& what) { return Error{what + ": " + std::strerror(err), err}; }

Result<UniqueFd> OpenAt(int dirfd, const std::string& name, int flags) {
  int fd = ::openat(dirfd, name.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("open " + name);
  return UniqueFd(fd);
}

Result<UniqueFd> Dup(const UniqueFd& fd) {
  int d = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0);
  if (d < 0) return Error::FromErrno("dup");
  return UniqueFd(d);
}

bool InProc(int fd) {
  struct statfs sf;
  return ::fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

// Pushes the components of `path` onto `todo` so that the first one is popped first. Empty
// components and "." change nothing and are dropped.
void PushComponents(std::vector<std::string>& todo, std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") parts.push_back(part);
    i = j + 1;
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.emplace_back(*it);
}

}  // namespace

pid_t ThreadGroupOf(pid_t tid) {
  UniqueFd fd(::open(("/proc/" + std::to_string(tid) + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return -1;
  char buf[1024];  // "Tgid:" is on the fourth line, well inside
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* t = std::strstr(buf, "\nTgid:");
  if (!t) return -1;
  long v = std::strtol(t + 6, nullptr, 10);
  return v > 0 ? static_cast<pid_t>(v) : -1;
}

Result<UniqueFd> ResolveAsCaller(pid_t tid, int dirfd, std::string_view path, bool follow_final) {
  if (path.empty()) return Fail(ENOENT, "empty path");
  if (path.size() >= PATH_MAX) return Fail(ENAMETOOLONG, "path");
  const std::string proc = "/proc/" + std::to_string(tid);
  LSB_ASSIGN_OR_RETURN(UniqueFd root, OpenAt(AT_FDCWD, proc + "/root", O_PATH | O_DIRECTORY));
  struct stat root_st;
  if (::fstat(root.get(), &root_st) != 0) return Error::FromErrno("stat the caller's root");

  UniqueFd cur;
  if (path[0] == '/') {
    LSB_ASSIGN_OR_RETURN(cur, Dup(root));
  } else {
    if (dirfd < 0 && dirfd != AT_FDCWD) return Fail(EBADF, "dirfd");
    LSB_ASSIGN_OR_RETURN(cur, OpenAt(AT_FDCWD, dirfd == AT_FDCWD ? proc + "/cwd" : proc + "/fd/" + std::to_string(dirfd),
                                     O_PATH));
  }

  pid_t tgid = 0;  // looked up when /proc/self is met
  std::vector<std::string> todo;
  PushComponents(todo, path);
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    struct stat st;
    if (::fstat(cur.get(), &st) != 0) return Error::FromErrno("stat");
    if (!S_ISDIR(st.st_mode)) return Fail(ENOTDIR, name);
    if (name == "..") {
      if (st.st_dev == root_st.st_dev && st.st_ino == root_st.st_ino) continue;  // ".." of the root is the root
      LSB_ASSIGN_OR_RETURN(cur, OpenAt(cur.get(), "..", O_PATH | O_DIRECTORY));
      continue;
    }
    const bool last = todo.empty();
    const bool in_proc = InProc(cur.get());
    if (in_proc && st.st_ino == kProcRootIno && (name == "self" || name == "thread-self")) {
      if (++links > kMaxSymlinks) return Fail(ELOOP, name);
      if (tgid == 0) tgid = ThreadGroupOf(tid);
      if (tgid <= 0) return Fail(ESRCH, "the caller's thread group");
      std::string target = std::to_string(tgid);
      if (name == "thread-self") target += "/task/" + std::to_string(tid);
      PushComponents(todo, target);
      continue;
    }
    LSB_ASSIGN_OR_RETURN(UniqueFd next, OpenAt(cur.get(), name, O_PATH | O_NOFOLLOW));
    struct stat nst;
    if (::fstat(next.get(), &nst) != 0) return Error::FromErrno("stat " + name);
    if (!S_ISLNK(nst.st_mode) || (last && !follow_final)) {
      cur = std::move(next);
      continue;
    }
    if (++links > kMaxSymlinks) return Fail(ELOOP, name);
    if (in_proc && st.st_ino != kProcRootIno) {
      // A magic link (/proc/<pid>/cwd, root, exe, fd/N...): the kernel jumps to the object it
      // names whoever follows it, so init's open lands where the caller's would.
      LSB_ASSIGN_OR_RETURN(cur, OpenAt(cur.get(), name, O_PATH));
      continue;
    }
    char buf[PATH_MAX];
    ssize_t n = ::readlinkat(next.get(), "", buf, sizeof buf);
    if (n < 0) return Error::FromErrno("readlink " + name);
    if (n == static_cast<ssize_t>(sizeof buf)) return Fail(ENAMETOOLONG, name);
    std::string_view target(buf, static_cast<size_t>(n));
    if (target.empty()) return Fail(ENOENT, name);
    if (target[0] == '/') {
      LSB_ASSIGN_OR_RETURN(cur, Dup(root));
    }
    PushComponents(todo, target);
  }
  return cur;
}

}  // namespace lsb::init
