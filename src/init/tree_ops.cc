// The record ops of the file worker (protocol/file_ops.h): archive entries in, collect, a
// directory's tree and a change-set manifest out. Every walk opens each directory again through
// box_path.h (no link followed) rather than keeping a descriptor per level, so a wide or deep tree
// costs a bounded number of descriptors.
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "base/sha256.h"
#include "init/box_path.h"
#include "init/file_ops.h"

namespace lsb::init {

using protocol::FileOp;

namespace {

constexpr size_t kMaxRecordHead = 64;

// The names in the directory `path` (sorted), with their lstat; none when it cannot be read.
struct Named {
  std::string name;
  struct stat st;
};
Result<std::vector<Named>> ReadDir(const std::string& path, int* dir_fd_out = nullptr) {
  LSB_ASSIGN_OR_RETURN(UniqueFd at, OpenBoxDir(path, false));
  UniqueFd fd(::openat(at.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return PathError(path, errno);
  DIR* d = ::fdopendir(fd.get());
  if (!d) return PathError(path, errno);
  const int dfd = fd.release();
  std::vector<Named> out;
  while (dirent* e = ::readdir(d)) {
    Named n{e->d_name, {}};
    if (n.name == "." || n.name == "..") continue;
    if (::fstatat(dfd, n.name.c_str(), &n.st, AT_SYMLINK_NOFOLLOW) == 0) out.push_back(std::move(n));
  }
  if (dir_fd_out) *dir_fd_out = ::dup(dfd);
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const Named& a, const Named& b) { return a.name < b.name; });
  return out;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

Error TooLarge(std::string message) { return Error{std::move(message), EFBIG}; }

}  // namespace

Status Unpack(const FileOp& op, InputReader& in) {
  uint64_t left = op.data_bytes;
  std::string head, path;
  while (left > 0) {
    if (!in.ReadLine(head, kMaxRecordHead)) return Error{"unpack: a record's head is missing or too long", EINVAL};
    char kind = 0;
    unsigned long long npath = 0, ndata = 0;
    if (std::sscanf(head.c_str(), "%c %llu %llu", &kind, &npath, &ndata) != 3 || npath > 4096 ||
        head.size() + 1 + npath + ndata > left)
      return Error{"unpack: a record's head is malformed: " + head, EINVAL};
    left -= head.size() + 1 + npath + ndata;
    if (!in.ReadExact(path, npath)) return Error{"unpack: the input ended in a record", EIO};
    if (kind == 'd') {
      if (ndata != 0) return Error{"unpack: a directory record with data: " + path, EINVAL};
      LSB_TRY(OpenBoxDir(path, true));
    } else if (kind == 'f' || kind == 'x') {
      LSB_TRY(WriteFromInput(path, in, ndata, kind == 'x'));
    } else {
      return Error{std::string("unpack: unknown record kind '") + kind + "'", EINVAL};
    }
  }
  return OkStatus();
}

Status Collect(const FileOp& op, ReplyWriter& out) {
  uint64_t files = 0, total = 0;
  for (const std::string& pattern : op.patterns) {
    glob_t g{};
    int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    if (rc != 0 || g.gl_pathc == 0) LSB_TRY(out.Record('n', pattern, "no file matches"));
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) {
      const std::string path = g.gl_pathv[i];
      if (files >= op.max_entries) {
        ::globfree(&g);
        return out.Record('e', path, "more than " + std::to_string(op.max_entries) +
                                         " files matched; the rest are not returned");
      }
      const uint64_t room = std::min(op.max_file_bytes, op.max_bytes - total);
      auto fd = OpenRegularForRead(path);
      auto data = fd.ok() ? ReadAtMost(fd->get(), path, room) : Result<std::string>(fd.error());
      if (!data.ok()) {
        std::string why = data.error().message;
        if (data.error().sys_errno == EFBIG && room < op.max_file_bytes)
          why += " (what collect returns in all: " + std::to_string(op.max_bytes) + " bytes)";
        LSB_TRY(out.Record('e', path, why));
        continue;
      }
      ++files;
      total += data->size();
      LSB_TRY(out.Record('f', path, *data));
    }
    ::globfree(&g);
  }
  return OkStatus();
}

Status Tree(const FileOp& op, ReplyWriter& out) {
  // Missing, not a directory, or a link on the way: one answer (the host's kNotFound).
  if (!OpenBoxDir(op.path, false).ok())
    return Error{"not a directory (or a path with a symbolic link in it): " + op.path, ENOTDIR};
  uint64_t entries = 0, bytes = 0;
  std::vector<std::string> todo{op.path};
  while (!todo.empty()) {
    const std::string dir = std::move(todo.back());
    todo.pop_back();
    int dfd = -1;
    LSB_ASSIGN_OR_RETURN(std::vector<Named> names, ReadDir(dir, &dfd));
    UniqueFd hold(dfd);
    std::vector<std::string> subdirs;
    for (const Named& n : names) {
      const std::string path = Join(dir, n.name);
      if (++entries > op.max_entries)
        return TooLarge(op.path + " has more than " + std::to_string(op.max_entries) + " entries");
      if (S_ISDIR(n.st.st_mode)) {
        LSB_TRY(out.Record('d', path, ""));
        subdirs.push_back(path);
      } else if (S_ISREG(n.st.st_mode)) {
        if (bytes + static_cast<uint64_t>(n.st.st_size) > op.max_bytes)
          return TooLarge(op.path + " holds more than " + std::to_string(op.max_bytes) + " bytes of files");
        UniqueFd fd(::openat(hold.get(), n.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        if (!fd) return PathError(path, errno);
        LSB_ASSIGN_OR_RETURN(std::string data, ReadAtMost(fd.get(), path, op.max_bytes - bytes));
        bytes += data.size();
        LSB_TRY(out.Record((n.st.st_mode & 0111) ? 'x' : 'f', path, data));
      } else {
        LSB_TRY(out.Record('s', path, ""));
      }
    }
    todo.insert(todo.end(), subdirs.rbegin(), subdirs.rend());
  }
  return OkStatus();
}

namespace {

struct ManifestBudget {
  uint64_t entries = 0, kept = 0;
};

// One entry's manifest record (protocol/file_ops.h): its mode, size and SHA-256, and its bytes
// when they fit the bounds.
Status ManifestRecord(const FileOp& op, int dfd, const Named& n, const std::string& path, ManifestBudget& b,
                      ReplyWriter& out) {
  char mode[16];
  std::snprintf(mode, sizeof mode, "%o", n.st.st_mode & 07777u);
  if (S_ISDIR(n.st.st_mode)) return out.Record('d', path, std::string(mode) + " 0 -\n");
  if (S_ISLNK(n.st.st_mode)) {
    char target[4096];
    ssize_t k = ::readlinkat(dfd, n.name.c_str(), target, sizeof target);
    std::string t = k > 0 ? std::string(target, static_cast<size_t>(k)) : "";
    return out.Record('l', path, std::string(mode) + " " + std::to_string(t.size()) + " " + Hex(Sha256(t)) + "\n" + t);
  }
  const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  UniqueFd fd(S_ISREG(n.st.st_mode) ? ::openat(dfd, n.name.c_str(), flags) : -1);
  if (!fd) return out.Record('o', path, std::string(mode) + " 0 -\n");
  Sha256Hasher h;
  std::string kept;
  uint64_t size = 0;
  char buf[64 * 1024];
  for (ssize_t k; (k = ::read(fd.get(), buf, sizeof buf)) > 0;) {
    h.Update(buf, static_cast<size_t>(k));
    size += static_cast<uint64_t>(k);
    if (size <= op.max_file_bytes && b.kept + size <= op.max_bytes) kept.append(buf, static_cast<size_t>(k));
  }
  const bool keep = size <= op.max_file_bytes && b.kept + size <= op.max_bytes;
  if (keep) b.kept += size;
  std::string head = std::string(mode) + " " + std::to_string(size) + " " + Hex(h.Finish()) + "\n";
  return out.Record(keep ? 'f' : 'h', path, head + (keep ? kept : ""));
}

}  // namespace

Status Manifest(const FileOp& op, ReplyWriter& out) {
  ManifestBudget b;
  for (const std::string& root : op.patterns) {
    if (!OpenBoxDir(root, false).ok()) continue;  // missing, or a link: nothing to compare
    std::vector<std::string> todo{root};
    while (!todo.empty()) {
      const std::string dir = std::move(todo.back());
      todo.pop_back();
      int dfd = -1;
      auto names = ReadDir(dir, &dfd);
      UniqueFd hold(dfd);
      if (!names.ok()) continue;
      for (const Named& n : *names) {
        if (dir == root && !op.skip_prefix.empty() && n.name.rfind(op.skip_prefix, 0) == 0) continue;
        if (++b.entries > op.max_entries)
          return TooLarge("more than " + std::to_string(op.max_entries) + " files and directories under " + root);
        const std::string path = Join(dir, n.name);
        LSB_TRY(ManifestRecord(op, hold.get(), n, path, b, out));
        if (S_ISDIR(n.st.st_mode)) todo.push_back(path);
      }
    }
  }
  return OkStatus();
}

}  // namespace lsb::init
