// Directories and files across the box's wall through init's file worker (runtime/box_files.h):
// a checked archive in (archive_in.h), `collect` out after a run, a directory out as a tar. What
// comes back is parsed as hostile (the worker shares the box with the program): every record,
// count and byte is bounded here again, and every path must lie where it was asked for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/exec_result.h"
#include "scheduler/archive/archive_in.h"
#include "protocol/file_ops.h"
#include "runtime/box_files.h"
#include "runtime/runner.h"

namespace lsb::sched {

// The bounds of `collect` per execution (docs/api.md "Files out").
struct CollectLimits {
  size_t max_patterns = 32;
  uint64_t max_files = 100;           // files returned in all
  uint64_t max_file_bytes = 8u << 20;  // one file
  uint64_t max_bytes = 16u << 20;      // all files together
};

// The bounds of GET /v1/sessions/{id}/archive.
struct TreeLimits {
  uint64_t max_entries = 10000;
  uint64_t max_bytes = 64ull << 20;
};

// One record of the file worker's replies (protocol/file_ops.h: "<kind> <npath> <ndata>\n" path data).
struct HelperRecord {
  char kind = 0;
  std::string path;
  std::string data;
};
// The worker's records, as hostile input: at most `max_records`, sizes within what was sent.
Result<std::vector<HelperRecord>> ParseRecords(std::string_view in, uint64_t max_records);

// Checks a request's collect patterns: absolute, normalized, inside the policy's writable dirs
// (CheckSandboxPath on the pattern), at most max_patterns. The error names the pattern.
Status CheckCollectPatterns(const Policy& policy, const std::vector<std::string>& patterns, const CollectLimits& limits);

// One file written into the box (created or truncated, parents made, no link followed); the
// reply says how it went (kNotFound, kDenied, kTooLarge for a full tmpfs or RLIMIT_FSIZE...).
Result<FileCall> WriteBoxFile(BoxSession& box, const std::string& path, std::string_view data);
// One regular file of at most `max_bytes` read from the box (kTooLarge past it).
Result<FileCall> ReadBoxFile(BoxSession& box, const std::string& path, uint64_t max_bytes);

// Writes `archive`'s items into the box, in ops of at most a few MiB. An error names the path the
// worker could not write; what was written before it stays.
Status UnpackIntoBox(BoxSession& box, const UnpackedArchive& archive);

// The files matching `patterns`, one entry per file, or per pattern that matched nothing, or per
// file that could not be returned (error set).
Result<std::vector<CollectedFile>> CollectFromBox(BoxSession& box, const std::vector<std::string>& patterns,
                                                  const CollectLimits& limits);

struct TreeArchive {
  std::string tar;       // ustar (pax names past 100 bytes): directories and regular files
  uint64_t files = 0, dirs = 0, bytes = 0;
  uint64_t skipped = 0;  // symbolic links, FIFOs, sockets, devices: not in the tar
};
// `dir`'s tree as a tar, names relative to `dir`. kTooLarge past the bounds is a kResourceExhausted
// error; a missing directory kNotFound.
Result<TreeArchive> TreeFromBox(BoxSession& box, const std::string& dir, const TreeLimits& limits);
// The kTree reply's status as TreeFromBox decides on it (by its status, never its words): past a
// bound kResourceExhausted, no such directory (missing, or not one) kNotFound.
Status TreeReplyStatus(const protocol::FileReply& r, const std::string& dir);

}  // namespace lsb::sched
