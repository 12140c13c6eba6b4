// The file operations of the init protocol (docs/protocol.md "Files"). The host sends kFileOp (a
// JSON FileOp) and, for kWrite and kUnpack, FileOp.data_bytes of raw kFileData frames right behind
// it; init carries the op out in a child of its own, confined as the program is (its uid and gid,
// its Landlock ruleset, no_new_privs, not dumpable: src/init/file_worker.h), and answers with
// kFileChunk frames (kRead: the file's bytes; the record ops: records) and one kFileReply. The
// host sends one op at a time, never while it feeds a run's stdin; a run in progress (a session's
// interpreter, idle between executes) goes on around it.
//
// Records (kUnpack in; kCollect, kTree, kManifest out): "<kind> <npath> <ndata>\n" path data, with
// kinds d (directory), f (file), x (executable file), e (kCollect: a file not returned, data says
// why), n (kCollect: a pattern nothing matched), s (kTree: neither file nor directory, skipped),
// and for kManifest l (link), h (file too large to keep: hash only), o (other); a manifest
// record's data is "<octal mode> <size> <sha256 or ->\n" then the kept bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lsb::protocol {

enum class FileOpKind {
  kWrite,     // path <- data (created or truncated; parents made; mode 0644, or 0755 when executable)
  kRead,      // path -> chunks, at most max_bytes (kTooLarge past it)
  kList,      // path's entries (name order), at most max_entries (truncated past it)
  kStat,      // path's entry (lstat: a link is described, not followed)
  kMkdir,     // path (parents made when `parents`; kExists when it exists and !parents)
  kRemove,    // path (a directory only when `recursive`, or empty)
  kRename,    // path -> to (no replace of a directory by a file or back: the kernel's rules)
  kUnpack,    // records in: directories and files under their absolute paths
  kCollect,   // patterns (globs) -> f/e/n records; max_entries files, max_file_bytes each, max_bytes in all
  kTree,      // path's tree -> d/f/x/s records; max_entries entries, max_bytes of file bytes
  kManifest,  // patterns (roots) -> manifest records; max_entries, max_file_bytes, max_bytes, skip_prefix
};

// What became of an op. kDenied: Landlock, permissions, a read-only mount; kInvalid: a path that is
// not absolute and normalized, a symbolic link in it (none is followed), a FIFO or device.
enum class FileStatus { kOk, kNotFound, kTooLarge, kNotADirectory, kIsADirectory, kExists, kNotEmpty, kDenied,
                        kInvalid, kFailed };

const char* Name(FileOpKind v);
const char* Name(FileStatus v);
std::optional<FileStatus> ParseFileStatus(std::string_view s);
void to_json(nlohmann::json& j, FileOpKind v);
void from_json(const nlohmann::json& j, FileOpKind& v);
void to_json(nlohmann::json& j, FileStatus v);
void from_json(const nlohmann::json& j, FileStatus& v);
// The status an errno of the file worker stands for (kFailed for the rest; sys_errno keeps it).
FileStatus FileStatusOfErrno(int err);

struct FileOp {
  FileOpKind op = FileOpKind::kStat;
  std::string path;                   // absolute, normalized (no ".", "..", "//"); no link is followed
  std::string to;                     // kRename
  std::vector<std::string> patterns;  // kCollect: globs; kManifest: roots
  uint64_t data_bytes = 0;            // kWrite, kUnpack: the kFileData bytes that follow
  uint64_t max_bytes = 0;             // kRead: the file; kCollect, kTree, kManifest: file bytes in all
  uint64_t max_entries = 0;           // kList, kTree, kManifest: entries; kCollect: files
  uint64_t max_file_bytes = 0;        // kCollect, kManifest: one file
  bool parents = false;               // kMkdir: make missing parents (mkdir -p)
  bool recursive = false;             // kRemove: a directory with what is in it
  bool executable = false;            // kWrite: mode 0755
  std::string skip_prefix;            // kManifest: names directly under a root that are left out
  uint64_t timeout_ms = 30000;        // the worker is killed past it (kFailed, "timed out")
  uint64_t reply_cap = 64ull << 20;   // kFileChunk bytes init forwards at most (the worker is cut off past it)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FileOp, op, path, to, patterns, data_bytes, max_bytes, max_entries,
                                                max_file_bytes, parents, recursive, executable, skip_prefix,
                                                timeout_ms, reply_cap)

// One directory entry (kList, kStat). mode: the permission bits (07777).
struct FileEntry {
  std::string name;   // kList: the entry's name; kStat: the path asked for
  std::string type;   // "file" | "dir" | "symlink" | "fifo" | "socket" | "char" | "block"
  uint64_t size = 0;
  uint32_t mode = 0;
  int64_t mtime_ms = 0;
  std::string target;  // symlink: where it points (not followed)
  uint32_t uid = 0, gid = 0;  // the owner as the box sees it
  bool operator==(const FileEntry&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FileEntry, name, type, size, mode, mtime_ms, target, uid, gid)

struct FileReply {
  FileStatus status = FileStatus::kFailed;
  std::string message;  // what went wrong, naming the path
  int sys_errno = 0;
  std::vector<FileEntry> entries;  // kList: the entries; kStat: one
  bool truncated = false;          // kList: more entries than max_entries (or than one reply holds)
  uint64_t total = 0;              // kList: entries seen (up to kListScanLimit); kRead: the file's size
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FileReply, status, message, sys_errno, entries, truncated, total)

// kWatch: file events under `path` (its subdirectories too with `recursive`, at most
// kMaxWatchDirs directories), from an inotify watcher init runs confined as the file worker is.
// Events come as kFileEvent frames whenever init is not busy, between runs and during them; a
// run's end kills every process of the box, the watcher too, and init starts it again.
struct WatchSpec {
  std::string path;
  bool recursive = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WatchSpec, path, recursive)
inline constexpr size_t kMaxWatchDirs = 256;

// op: "create" | "write" (closed after writing) | "remove" | "rename" (moved in or out) | "chmod" |
// "overflow" (events were dropped: the kernel's queue or init's; path is the watched directory) |
// "end" (the watch stopped: its directory went away, or the watcher could not be started; path
// says why).
struct FileEvent {
  std::string path;
  std::string op;
  bool dir = false;
  bool operator==(const FileEvent&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FileEvent, path, op, dir)

// The most entries one kList returns (what one reply frame holds with names of 255 bytes), and
// the most it looks at to count them: a directory of a million entries answers in bounded time.
inline constexpr uint64_t kMaxListEntries = 2000;
inline constexpr uint64_t kListScanLimit = 100000;

}  // namespace lsb::protocol
