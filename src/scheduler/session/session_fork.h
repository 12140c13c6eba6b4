// Fork of a python session (docs/api.md "Fork"): children in boxes of their own that start with
// the parent's interpreter state and files. Mechanism (chosen by what this host can do, see
// docs/architecture.md "Session fork"): no process is copied. The parent's interpreter pickles
// its globals (each value alone; imported modules by name) into a file in its first writable
// path; the host copies every writable path out of the parent (TreeFromBox: read inside the box,
// regular files and directories only, bounded by TreeLimits) and into each child (the checked
// archive unpacker, bounded by ArchiveLimits); each child, opened with the parent's policy and
// setup, imports the modules and unpickles the values. What does not pickle (functions and classes
// defined in the session, open files, sockets, threads, generators) is named in the report, not
// carried; no process of the parent is carried.
//
// The state file is unpickled only inside the child's box, which belongs to the same owner and
// runs under the same policy: a hostile parent can only hurt its own forks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "scheduler/archive/archive_in.h"
#include "scheduler/session/session.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {

// The strings of `j[key]` when it is an array (other entries skipped); none when absent. Reads the
// interpreter's fork reports and the paused-session records.
std::vector<std::string> StringsAt(const nlohmann::json& j, const char* key);

// The most children one fork request makes (docs/api.md "Fork").
inline constexpr size_t kMaxForkCount = 16;

struct ForkExport {
  std::vector<UnpackedArchive> trees;  // one per writable path, the state file among them
  std::vector<std::string> tars;       // the same trees as the box gave them (what pause writes)
  std::string state_path;              // where the children find the pickled state
  std::vector<std::string> values, modules, skipped;  // global names: carried, and not
  uint64_t bytes = 0;                  // file bytes carried (state file included)
};

struct ForkImport {
  std::vector<std::string> failed;  // carried names the child could not unpickle or import
};

// Both need a Use that owns their session; the parent must be a python session.
Result<ForkExport> ExportForFork(Session& parent, const TreeLimits& tree, const ArchiveLimits& archive);
Result<ForkImport> ImportFork(Session& child, const ForkExport& state);
// The trees of an export from their tars (a paused session's files on disk), checked again.
Result<std::vector<UnpackedArchive>> ReadForkTrees(const Policy& policy, const std::vector<std::string>& tars,
                                                   const ArchiveLimits& archive);

}  // namespace lsb::sched
