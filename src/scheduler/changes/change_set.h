// Change sets (docs/api.md "Change sets"): what a run added, modified and deleted under the
// policy's writable paths (or one directory of them), against a manifest taken before the run
// (after the input files and archives were written). The manifests are made in the box by init's
// file worker (protocol/file_ops.h kManifest: modes, sizes, SHA-256, and the bytes of files within
// the budget) and compared on the host, which also writes the diffs: a git-style patch that
// `git apply` accepts on the tree as it was (paths relative to the directory asked for),
// unified diffs for text, exact renames (same content, one deleted and one added path), mode
// changes, symlinks (mode 120000), binary files marked and left out of the patch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/runner.h"

namespace lsb::sched {

// The bounds of a change set per execution (docs/api.md).
struct ChangesLimits {
  uint64_t max_entries = 20000;         // files and directories per manifest
  uint64_t max_file_bytes = 1u << 20;   // a file kept (and diffed) whole; past it: hash only
  uint64_t max_total_bytes = 32u << 20;  // file bytes a manifest keeps in all
  uint64_t max_patch_bytes = 4u << 20;  // the patch; past it, later files are listed without a diff
  size_t max_listed = 2000;             // changes listed
};

struct ManifestEntry {
  char kind = 'f';      // d, f (bytes kept), h (hash only), l (symlink), o (other)
  uint32_t mode = 0;    // permission bits
  uint64_t size = 0;
  std::string sha256;   // hex; "-" for d and o
  std::string data;     // f: the bytes; l: the target
};
using Manifest = std::map<std::string, ManifestEntry>;  // absolute path -> entry

// `roots`' manifest from the box, parsed as hostile input (every path under a root, sizes and
// counts within the limits). kResourceExhausted past max_entries.
Result<Manifest> ManifestFromBox(BoxSession& box, const std::vector<std::string>& roots, const ChangesLimits& limits);

// What a session's change set leaves out unless asked otherwise: Python's bytecode caches and
// pytest's cache, which a program makes as it runs and nobody wants in a patch.
inline const std::vector<std::string>& DefaultChangesIgnore() {
  static const std::vector<std::string> v{"__pycache__", "*.pyc", ".pytest_cache"};
  return v;
}
// `m` without the entries any of whose path components below `root` matches one of `patterns`
// (fnmatch, no FNM_PATHNAME: a pattern names one component), and without what lies under them.
Manifest WithoutIgnored(const Manifest& m, const std::string& root, const std::vector<std::string>& patterns);

// The change set between two manifests as the result's "changes" object: {root, files: [...],
// patch, truncated}. `root` is the directory the patch's paths are relative to ("/" for all the
// writable paths).
nlohmann::json DiffManifests(const Manifest& before, const Manifest& after, const std::string& root,
                             const ChangesLimits& limits);

// The roots a request's `changes` names: "" = the policy's tmpfs paths, else that directory.
std::vector<std::string> ChangeRoots(const Policy& policy, const std::string& asked);

}  // namespace lsb::sched
