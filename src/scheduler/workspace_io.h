// Directories and files across the box's wall through the in-box file helper (python_driver.h):
// a checked archive in (archive_in.h), `collect` out after a run, a directory out as a tar. What
// comes back is parsed as hostile (the helper shares the box with the program): every record,
// count and byte is bounded here again, and every path must lie where it was asked for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/exec_result.h"
#include "scheduler/archive/archive_in.h"
#include "scheduler/driver/python_driver.h"

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

// One record of the file helper's replies (python_driver.h: "<kind> <npath> <ndata>\n" path data).
struct HelperRecord {
  char kind = 0;
  std::string path;
  std::string data;
};
// The helper's records, as hostile input: at most `max_records`, sizes within what was sent.
Result<std::vector<HelperRecord>> ParseRecords(std::string_view in, uint64_t max_records);

// Checks a request's collect patterns: absolute, normalized, inside the policy's writable dirs
// (CheckSandboxPath on the pattern), at most max_patterns. The error names the pattern.
Status CheckCollectPatterns(const Policy& policy, const std::vector<std::string>& patterns, const CollectLimits& limits);

// Writes `archive`'s items into the box, in messages of at most a few MiB. An error names the
// path the helper could not write; what was written before it stays.
Status UnpackIntoBox(PythonDriver& driver, const UnpackedArchive& archive);

// The files matching `patterns`, one entry per file, or per pattern that matched nothing, or per
// file that could not be returned (error set).
Result<std::vector<CollectedFile>> CollectFromBox(PythonDriver& driver, const std::vector<std::string>& patterns,
                                                  const CollectLimits& limits);

struct TreeArchive {
  std::string tar;       // ustar (pax names past 100 bytes): directories and regular files
  uint64_t files = 0, dirs = 0, bytes = 0;
  uint64_t skipped = 0;  // symbolic links, FIFOs, sockets, devices: not in the tar
};
// `dir`'s tree as a tar, names relative to `dir`. kTooLarge past the bounds is a kResourceExhausted
// error; a missing directory kNotFound.
Result<TreeArchive> TreeFromBox(PythonDriver& driver, const std::string& dir, const TreeLimits& limits);
// The T reply's status as TreeFromBox decides on it (by the driver's code, never its words): past
// a bound kResourceExhausted, no such directory (missing, or not one) kNotFound.
Status TreeReplyStatus(const FileOpResult& r, const std::string& dir);

}  // namespace lsb::sched
