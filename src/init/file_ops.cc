#include "init/file_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "init/box_path.h"

namespace lsb::init {

using protocol::FileEntry;
using protocol::FileOp;
using protocol::FileOpKind;
using protocol::FileReply;
using protocol::FileStatus;

namespace {

constexpr size_t kIoChunk = 1 << 20;
constexpr int kMaxRemoveDepth = 256;

const char* TypeOf(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "dir";
  if (S_ISLNK(m)) return "symlink";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISCHR(m)) return "char";
  return "block";
}

FileEntry EntryOf(int dir, const std::string& name, const struct stat& st) {
  FileEntry e{name, TypeOf(st.st_mode), static_cast<uint64_t>(st.st_size), st.st_mode & 07777u,
              static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000, "", st.st_uid,
              st.st_gid};
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = ::readlinkat(dir, name.c_str(), target, sizeof target);
    if (n > 0) e.target.assign(target, static_cast<size_t>(n));
  }
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) e.size = 0;
  return e;
}

Status ReadOut(const FileOp& op, ReplyWriter& out, FileReply& reply) {
  LSB_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegularForRead(op.path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PathError(op.path, errno);
  reply.total = static_cast<uint64_t>(st.st_size);
  LSB_ASSIGN_OR_RETURN(std::string data, ReadAtMost(fd.get(), op.path, op.max_bytes));
  return out.Chunk(data);
}

Status List(const FileOp& op, FileReply& reply) {
  LSB_ASSIGN_OR_RETURN(UniqueFd at, OpenBoxDir(op.path, false));
  UniqueFd fd(::openat(at.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return PathError(op.path, errno);
  DIR* d = ::fdopendir(fd.get());
  if (!d) return PathError(op.path, errno);
  (void)fd.release();
  std::vector<std::string> names;
  bool more = false;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (names.size() >= protocol::kListScanLimit) {
      more = true;  // a bound on the work, not only on the answer
      break;
    }
    names.push_back(std::move(n));
  }
  const int dfd = ::dirfd(d);
  const uint64_t limit = std::min<uint64_t>(op.max_entries ? op.max_entries : protocol::kMaxListEntries,
                                            protocol::kMaxListEntries);
  std::sort(names.begin(), names.end());
  reply.total = names.size();
  reply.truncated = more || names.size() > limit;
  for (size_t i = 0; i < names.size() && i < limit; ++i) {
    struct stat st;
    if (::fstatat(dfd, names[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      reply.entries.push_back(EntryOf(dfd, names[i], st));
  }
  ::closedir(d);
  if (more)
    reply.message = op.path + " has more than " + std::to_string(protocol::kListScanLimit) +
                    " entries: the first " + std::to_string(reply.entries.size()) + " of those read are listed";
  else if (reply.truncated)
    reply.message = op.path + " has " + std::to_string(names.size()) + " entries: the first " +
                    std::to_string(reply.entries.size()) + " by name are listed";
  return OkStatus();
}

Status Stat(const FileOp& op, FileReply& reply) {
  struct stat st;
  if (op.path == "/") {
    if (::stat("/", &st) != 0) return PathError(op.path, errno);
    reply.entries.push_back(EntryOf(AT_FDCWD, "/", st));
    return OkStatus();
  }
  LSB_ASSIGN_OR_RETURN(ParentAndName p, OpenBoxParent(op.path, false));
  if (::fstatat(p.dir.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return PathError(op.path, errno);
  FileEntry e = EntryOf(p.dir.get(), p.name, st);
  e.name = op.path;
  reply.entries.push_back(std::move(e));
  return OkStatus();
}

Status Mkdir(const FileOp& op) {
  if (op.parents) {
    LSB_TRY(OpenBoxDir(op.path, true));
    return OkStatus();
  }
  LSB_ASSIGN_OR_RETURN(ParentAndName p, OpenBoxParent(op.path, false));
  if (::mkdirat(p.dir.get(), p.name.c_str(), 0755) != 0) return PathError(op.path, errno);
  return OkStatus();
}

// Everything in the directory `dir` (an fd of it), depth first, no link followed.
Status EmptyDir(int dir, const std::string& path, int depth) {
  if (depth > kMaxRemoveDepth) return Error{path + ": nested deeper than " + std::to_string(kMaxRemoveDepth) +
                                                " directories; remove it in parts", ENAMETOOLONG};
  UniqueFd fd(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return PathError(path, errno);
  DIR* d = ::fdopendir(fd.get());
  if (!d) return PathError(path, errno);
  const int dfd = fd.release();
  Status st = OkStatus();
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat s;
    if (::fstatat(dfd, n.c_str(), &s, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    if (S_ISDIR(s.st_mode)) {
      UniqueFd sub(::openat(dfd, n.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) { st = PathError(path + "/" + n, errno); break; }
      st = EmptyDir(sub.get(), path + "/" + n, depth + 1);
      if (!st.ok()) break;
    }
    if (::unlinkat(dfd, n.c_str(), S_ISDIR(s.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT) {
      st = PathError(path + "/" + n, errno);
      break;
    }
  }
  ::closedir(d);
  return st;
}

Status Remove(const FileOp& op) {
  LSB_ASSIGN_OR_RETURN(ParentAndName p, OpenBoxParent(op.path, false));
  struct stat st;
  if (::fstatat(p.dir.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return PathError(op.path, errno);
  if (S_ISDIR(st.st_mode) && op.recursive) {
    UniqueFd sub(::openat(p.dir.get(), p.name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) return PathError(op.path, errno);
    LSB_TRY(EmptyDir(sub.get(), op.path, 0));
  }
  if (::unlinkat(p.dir.get(), p.name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0)
    return PathError(op.path, errno);
  return OkStatus();
}

Status Rename(const FileOp& op) {
  LSB_ASSIGN_OR_RETURN(ParentAndName from, OpenBoxParent(op.path, false));
  LSB_ASSIGN_OR_RETURN(ParentAndName to, OpenBoxParent(op.to, false));
  if (::renameat(from.dir.get(), from.name.c_str(), to.dir.get(), to.name.c_str()) != 0)
    return Error{op.path + " -> " + op.to + ": " + std::strerror(errno), errno};
  return OkStatus();
}

Status Dispatch(const FileOp& op, InputReader& in, ReplyWriter& out, FileReply& reply) {
  switch (op.op) {
    case FileOpKind::kWrite: return WriteFromInput(op.path, in, op.data_bytes, op.executable);
    case FileOpKind::kRead: return ReadOut(op, out, reply);
    case FileOpKind::kList: return List(op, reply);
    case FileOpKind::kStat: return Stat(op, reply);
    case FileOpKind::kMkdir: return Mkdir(op);
    case FileOpKind::kRemove: return Remove(op);
    case FileOpKind::kRename: return Rename(op);
    case FileOpKind::kUnpack: return Unpack(op, in);
    case FileOpKind::kCollect: return Collect(op, out);
    case FileOpKind::kTree: return Tree(op, out);
    case FileOpKind::kManifest: return Manifest(op, out);
  }
  return Error{"unknown file op", EINVAL};
}

}  // namespace

Result<UniqueFd> OpenRegularForRead(const std::string& path) {
  LSB_ASSIGN_OR_RETURN(ParentAndName p, OpenBoxParent(path, false));
  // O_NONBLOCK: a FIFO opens at once (then is refused) instead of waiting for a writer.
  UniqueFd fd(::openat(p.dir.get(), p.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) return PathError(path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PathError(path, errno);
  if (S_ISDIR(st.st_mode)) return PathError(path, EISDIR);
  if (!S_ISREG(st.st_mode)) return Error{path + ": not a regular file (a " + TypeOf(st.st_mode) + ")", EINVAL};
  return fd;
}

Result<std::string> ReadAtMost(int fd, const std::string& path, uint64_t limit) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return PathError(path, errno);
  if (static_cast<uint64_t>(st.st_size) > limit)
    return Error{path + ": the file is " + std::to_string(st.st_size) + " bytes; the limit is " +
                     std::to_string(limit), EFBIG};
  std::string data;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PathError(path, errno);
    if (n == 0) return data;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > limit)
      return Error{path + ": the file grew past the limit of " + std::to_string(limit) + " bytes", EFBIG};
  }
}

Status WriteFromInput(const std::string& path, InputReader& in, uint64_t n, bool executable) {
  LSB_ASSIGN_OR_RETURN(ParentAndName p, OpenBoxParent(path, true));
  const mode_t mode = executable ? 0755 : 0644;
  struct stat before;  // a FIFO or a device is named as such (opening one for writing could block)
  if (::fstatat(p.dir.get(), p.name.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(before.st_mode) &&
      !S_ISLNK(before.st_mode))
    return Error{path + ": not a regular file (a " + TypeOf(before.st_mode) + ")",
                 S_ISDIR(before.st_mode) ? EISDIR : EINVAL};
  const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  UniqueFd fd(::openat(p.dir.get(), p.name.c_str(), flags, mode));
  if (!fd) return PathError(path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PathError(path, errno);
  if (!S_ISREG(st.st_mode)) return Error{path + ": not a regular file (a " + TypeOf(st.st_mode) + ")", EINVAL};
  if (::ftruncate(fd.get(), 0) != 0 || ::fchmod(fd.get(), mode) != 0) return PathError(path, errno);
  std::vector<char> buf(std::min<uint64_t>(n ? n : 1, kIoChunk));
  while (n > 0) {
    ssize_t got = in.Read(buf.data(), std::min<uint64_t>(n, buf.size()));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Error{path + ": the upload ended early", EIO};
    n -= static_cast<uint64_t>(got);
    for (ssize_t off = 0; off < got;) {
      ssize_t w = ::write(fd.get(), buf.data() + off, static_cast<size_t>(got - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return PathError(path, errno);
      off += w;
    }
  }
  return OkStatus();
}

FileReply DoFileOp(const FileOp& op, InputReader& in, ReplyWriter& out) {
  FileReply reply;
  Status st = Dispatch(op, in, out, reply);
  if (st.ok()) {
    reply.status = FileStatus::kOk;
  } else {
    reply.status = protocol::FileStatusOfErrno(st.error().sys_errno);
    reply.sys_errno = st.error().sys_errno;
    reply.message = st.error().message;
    reply.entries.clear();
  }
  return reply;
}

}  // namespace lsb::init
