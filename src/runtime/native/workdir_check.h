// container.workdir against what a native box will have, before any box (issue 37: a workdir that
// does not exist passed `policy check`, then every session failed with a bare chdir error). The
// workdir exists when it is "/", a tmpfs or mount of the policy (or a directory on the way to one:
// init makes those), a directory inside a mount's host source, or a directory of the image's root
// (the host's system directories, a rootfs directory, or the store's layers, whiteouts honoured).
// Inside a tmpfs, below its top, nothing exists: a tmpfs starts empty.
#pragma once

#include <string>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/native/box_root.h"

namespace lsb::native {

struct WorkdirFinding {
  enum class Verdict { kFound, kMissing, kNotInspected };
  Verdict verdict = Verdict::kFound;
  std::string message;  // kMissing: what is wrong; kNotInspected: why it could not be looked at
  std::string hint;     // kMissing: how to fix it
};

// Only a workdir the policy wrote is checked: the default (/tmp) is not the policy's choice.
// `root` is the image's root as ResolveBoxRoot gave it (without pulling), or why it could not be.
WorkdirFinding CheckWorkdir(const Policy& policy, const Result<BoxRoot>& root);

// Whether `path` (absolute) is a directory in the union of `layers` (top layer first), following
// symbolic links inside that root. Exposed for tests.
bool IsDirectoryInLayers(const std::vector<std::string>& layers, const std::string& path);

}  // namespace lsb::native
